// SPDX-License-Identifier: Apache-2.0
// RunStats: what the end-of-run summary says, accumulated tick by tick in constant memory (works
// whether or not the store is writable).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "trainmon/core/counter.h"
#include "trainmon/core/snapshot.h"
#include "trainmon/diagnose/train_summary.h"
#include "trainmon/recorder/resource_line.h"
#include "trainmon/runner/oom.h"

namespace trainmon::recorder {

struct GpuSummary {
  unsigned index = 0;
  std::string name;
  bool used_by_job = false;             ///< a process of the job ran on it
  std::optional<double> mean_util_pct;  ///< empty when never available
  std::optional<double> peak_util_pct;
  std::optional<std::uint64_t> peak_memory_used_bytes;
  std::optional<std::uint64_t> memory_total_bytes;
  /// Energy the GPU used during the run (NVML total energy, mJ, summed across resets: a driver
  /// reload restarts the counter); empty when never read twice.
  std::optional<double> energy_j;
  /// The highest volatile uncorrected ECC count seen (a reset does not lower it); empty when N/A.
  std::optional<std::uint64_t> ecc_uncorrected_volatile_max;
  /// Resets seen on the GPU's cumulative counters (energy, ECC, violation times, PCIe replays).
  std::uint64_t counter_resets = 0;
};

struct RunSummary {
  std::int64_t duration_ms = 0;
  std::uint64_t ticks = 0;
  std::vector<GpuSummary> gpus;
  std::optional<std::uint64_t> peak_job_rss_bytes;  ///< job runs only
  std::optional<std::uint64_t> last_job_rss_bytes;
  std::optional<double> job_rss_growth_bytes_per_h;  ///< least-squares slope over the run (>= 3 ticks)
  std::optional<double> peak_job_cpu_pct;
  std::optional<std::uint64_t> peak_job_processes;
  std::optional<std::uint64_t> min_available_recent_bytes;  ///< lowest MemAvailable of the last 10 ticks
  std::optional<std::uint64_t> memory_total_bytes;
  /// The job's cgroup limits (`run`: runner::OomWatch::limits at the end; version 0 when none was
  /// read). JSON "cgroup" (null when version is 0).
  runner::JobCgroupLimits cgroup;
  /// The OOM verdict put the kill at the memory cgroup's limit (runner::OomVerdict::at_cgroup_limit).
  bool oom_at_cgroup_limit = false;
  /// OOM kills counted in the job's cgroups during the run (OomWatch::kills_since_start at the end);
  /// JSON "oom_kills", absent when not read. D20 offline counts a kill after the last stored tick by it.
  std::optional<std::uint64_t> oom_kills;
  /// The training loop's figures over the run (summarize_train of the run's TrainSeries); nullopt for a
  /// run whose training process sent no step timing (then "train" is absent from the JSON).
  std::optional<diagnose::TrainSummary> train;
  /// Messages from the training process on the event socket (`run` only; ipc::EventServerStats):
  /// received, accepted, and the rejected ones by reason ("rate_limited", "not_json", ...), only
  /// reasons with a count. Empty `train_events` when the run had no event socket.
  struct TrainEvents {
    std::uint64_t received = 0;
    std::uint64_t accepted = 0;
    std::vector<std::pair<std::string, std::uint64_t>> rejected;
  };
  std::optional<TrainEvents> train_events;
};

class RunStats {
 public:
  /// Add one tick. `job` is the job tree's totals (nullopt for `record`); `job_gpus` the GPU indexes
  /// the job's processes used at this tick.
  void add(const Snapshot& snap, std::int64_t elapsed_ms, const std::optional<JobTotals>& job,
           const std::vector<unsigned>& job_gpus);
  RunSummary summary() const;

 private:
  struct Gpu {
    unsigned index = 0;
    std::string name;
    bool used = false;
    double util_sum = 0;
    std::uint64_t util_n = 0;
    double util_peak = 0;
    std::optional<std::uint64_t> mem_peak, mem_total;
    ContinuedCounter energy_mj, ecc_unc, ecc_cor, viol_power, viol_thermal, pcie_replay;
  };
  std::vector<Gpu> gpus_;
  RunSummary base_;
  // least squares of job RSS against hours
  double n_ = 0, st_ = 0, sy_ = 0, stt_ = 0, sty_ = 0;
  std::deque<std::uint64_t> recent_available_;
};

/// The summary as JSON (stored with the run, printed by `show --json`).
std::string summary_to_json(const RunSummary& s);
/// Parse what summary_to_json wrote; an empty summary for empty or malformed text.
RunSummary summary_from_json(const std::string& json);

/// "training events: 1200 received, 1180 accepted, 20 rejected (rate_limited 15, not_json 5)"
/// (no newline); empty when none were received.
std::string format_train_events(const RunSummary::TrainEvents& e);

/// The lines printed when a run ends (each ends with '\n'): duration, status, GPUs, job peaks, the
/// job's cgroup limits when set, training figures (when any), training events rejected (when any
/// were), findings, run id. Text from the driver, /proc or the training process is terminal-safe.
std::string format_summary(const RunSummary& s, const std::string& status_line, std::int64_t run_id,
                           std::optional<std::int64_t> findings);

}  // namespace trainmon::recorder
