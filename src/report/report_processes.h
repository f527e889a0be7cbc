// SPDX-License-Identifier: Apache-2.0
// The report's process table: per process of the run, peak RSS, CPU time and peak GPU memory.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "trainmon/core/error.h"
#include "trainmon/store/store.h"

namespace trainmon::report {

/// One object per process series ({pid, host_visibility, comm, cmdline, user, in_job, peak_rss_mib,
/// cpu_time_s, peak_gpu_mem_mib, gpus}), plus GPU processes never seen as host processes (outside the
/// job). A GPU process the recorder never matched to the local process with its pid (another PID
/// namespace: host_visibility "not_visible"; gone: "exited") gets its own row with the driver's name
/// only, never the user, command line or RSS of a local process with the same number;
/// job processes first, then by peak GPU memory, peak RSS. Null numbers when never measured.
/// At most `limit` rows. Errors: the store cannot be read.
Expected<nlohmann::json> process_table(store::Store& store, std::int64_t run_id, std::size_t limit = 100);

/// The GPUs whose process lists failed during the run (column processes_unknown_nvml_code): one
/// object {gpu, samples_unknown, samples, reason} each, by GPU index; `reason` is the last failure's
/// (trainmon/export/processes_unknown.h). Empty when every list was read. Errors: the store cannot
/// be read.
Expected<nlohmann::json> processes_unknown(store::Store& store, std::int64_t run_id);

}  // namespace trainmon::report
