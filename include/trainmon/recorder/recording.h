// SPDX-License-Identifier: Apache-2.0
// Starting a recording: the run's header (command, cwd, user, host, labels) and the store writer.
// A store that cannot be opened is not fatal for `trainmon run`: the caller prints the error and
// monitors in memory.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "trainmon/core/error.h"
#include "trainmon/store/run_info.h"
#include "trainmon/store/writer.h"

namespace trainmon::recorder {

/// A RunInfo with cwd, user, host, start time and recorder pid of this process filled in.
store::RunInfo this_process_run_info(std::string kind, std::string name, std::int64_t start_unix_ns);

/// Default run name: the script or program (`train.py` for `python train.py`), "record" for none.
std::string default_run_name(const std::vector<std::string>& command);

struct Recording {
  std::int64_t run_id = 0;
  std::unique_ptr<store::StoreWriter> writer;
};

/// Open the store at `db_path`, apply nothing else, create the run and start its writer thread.
Expected<Recording> start_recording(const std::string& db_path, const store::RunInfo& run);

}  // namespace trainmon::recorder
