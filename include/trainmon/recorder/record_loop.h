// SPDX-License-Identifier: Apache-2.0
// The whole-machine recording loop shared by `trainmon record` and `trainmon serve`: every GPU, the
// host, the GPU processes and their trees, recorded into the store with retention, diagnosed live
// (bounded to the last hour) and handed to the observers, until SIGINT / SIGTERM / SIGHUP or
// `stop_after_ns`. The caller must have called runner::prepare_signals() before creating threads.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "trainmon/diagnose/thresholds.h"
#include "trainmon/diagnose/tick_observer.h"
#include "trainmon/store/store.h"

namespace trainmon::recorder {

struct RecordLoopOptions {
  std::string tool = "record";  ///< "record" / "serve": messages start with "trainmon <tool>:"
  std::string kind = "record";  ///< the run's kind in the store
  std::string name = "record";  ///< run name
  std::int64_t interval_ns = 1'000'000'000;
  std::string db_path;                                      ///< resolved (store::resolve_db_path)
  std::vector<std::pair<std::string, std::string>> labels;  ///< given with --label (env labels added)
  store::RetentionPolicy retention;                         ///< applied at start and hourly
  std::int64_t print_every_ns = 0;                          ///< 0: no resource lines
  std::optional<std::int64_t> stop_after_ns;                ///< nullopt: until a signal
  bool quiet = false;
  bool diagnose = true;  ///< run the live diagnosis (observers see its active findings)
  diagnose::Thresholds thresholds;
  std::string nvml_library;  ///< "" = the system's libnvidia-ml.so.1
  std::string proc_root = "/proc";
  std::string sys_root = "/sys";
  std::string pod_logs_root;  ///< empty: HostOptions' default
};

/// Runs the loop; returns the process exit status (0, or 1 when the store failed to open or to
/// record). Prints the summary at the end unless quiet. Observers are called in order.
int run_record_loop(const RecordLoopOptions& options, std::span<diagnose::TickObserver* const> observers);

}  // namespace trainmon::recorder
