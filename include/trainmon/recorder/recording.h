// SPDX-License-Identifier: Apache-2.0
// Starting a recording: the run's header (command, cwd, user, host, labels) and the store writer.
// A store that cannot be opened is not fatal for `trainmon run`: the caller prints the error and
// monitors in memory.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "trainmon/core/error.h"
#include "trainmon/store/run_info.h"
#include "trainmon/store/writer.h"

namespace trainmon::recorder {

/// A RunInfo with cwd, user, host, start time, boot id, CLOCK_MONOTONIC start and recorder pid of
/// this process filled in.
store::RunInfo this_process_run_info(std::string kind, std::string name, std::int64_t start_unix_ns,
                                     std::optional<std::int64_t> start_monotonic_ns = std::nullopt);

/// This boot's id (/proc/sys/kernel/random/boot_id, without the newline); empty when unreadable.
/// CLOCK_MONOTONIC readings compare only within one boot.
std::string current_boot_id();

/// Default run name: the script or program (`train.py` for `python train.py`), "record" for none.
std::string default_run_name(const std::vector<std::string>& command);

struct Recording {
  std::int64_t run_id = 0;
  std::unique_ptr<store::StoreWriter> writer;
};

/// Start the writer thread for `run` on the store at `db_path`: it opens the store and creates the
/// run itself, retrying with back-off while the store refuses writes (locked, full), and keeps what
/// is sampled meanwhile. Waits up to `wait` for the run's id: Recording::run_id is 0 when the run is
/// not created yet (it is, with everything held, as soon as the store accepts writes; the writer's
/// run_id() then says it). An error only for a store that can never be written (damaged, another
/// program's, a newer schema, no permission).
Expected<Recording> start_recording(const std::string& db_path, const store::RunInfo& run,
                                    std::chrono::nanoseconds wait = std::chrono::milliseconds(250),
                                    store::WriterOptions options = {});

}  // namespace trainmon::recorder
