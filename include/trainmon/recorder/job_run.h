// SPDX-License-Identifier: Apache-2.0
// `trainmon run`'s monitoring of a launched job: the store, the launcher, the training event
// channel, the sampler and the session, the one monitoring loop (monitor_loop.h) with the job's
// hooks (the child's exit, stop signals passed on to the job with --kill-after, training events,
// stack capture on a hang, the live state file), then the verdict (run_verdict.h) and the summary.
// A trainmon failure (store, sampler, exception) only degrades monitoring: the command runs on.
// The caller must have called runner::prepare_signals() before creating any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "trainmon/core/error.h"
#include "trainmon/diagnose/thresholds.h"
#include "trainmon/diagnose/tick_observer.h"

namespace trainmon::recorder {

struct JobRunOptions {
  std::string name;                  ///< the run's name (resolved: never empty)
  std::vector<std::string> command;  ///< argv of the job
  std::int64_t interval_ns = 1'000'000'000;
  std::int64_t print_every_ns = 30'000'000'000;             ///< 0: no resource lines
  std::int64_t kill_after_ns = 30'000'000'000;              ///< grace between the stop signal and SIGKILL
  std::string db_path;                                      ///< resolved (store::resolve_db_path)
  std::vector<std::pair<std::string, std::string>> labels;  ///< given with --label (env labels added)
  diagnose::Thresholds thresholds;
  bool quiet = false;
  bool no_instrument = false;  ///< no start-up hook for Python (docs/python.md "Zero code changes")
  std::string nvml_library;    ///< "" = the system's libnvidia-ml.so.1
  std::string proc_root = "/proc";
  std::string sys_root = "/sys";
  std::string pod_logs_root;  ///< the kubelet's pod log directories (--pod-logs-root); empty: default
  /// An Error's message for stderr in the chosen language (cli's said()); default: its message.
  std::function<std::string(const Error&)> said;
  /// Writes the HTML report of the recorded run `run_id` (0: not recorded) after its end is stored,
  /// before the summary; returns the report's path, or "" when none was written (it says why).
  std::function<std::string(std::int64_t run_id)> write_report;
};

/// Runs the job to its end; returns the exit status (the command's, as `time` gives it).
int run_job(const JobRunOptions& options, std::span<diagnose::TickObserver* const> observers);

}  // namespace trainmon::recorder
