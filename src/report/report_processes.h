// SPDX-License-Identifier: Apache-2.0
// The report's process table: per process of the run, peak RSS, CPU time and peak GPU memory.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "trainmon/core/error.h"
#include "trainmon/store/store.h"

namespace trainmon::report {

/// One object per process series ({pid, comm, cmdline, user, in_job, peak_rss_mib, cpu_time_s,
/// peak_gpu_mem_mib, gpus}), plus GPU processes never seen as host processes (outside the job);
/// job processes first, then by peak GPU memory, peak RSS. Null numbers when never measured.
/// At most `limit` rows. Errors: the store cannot be read.
Expected<nlohmann::json> process_table(store::Store& store, std::int64_t run_id, std::size_t limit = 100);

}  // namespace trainmon::report
