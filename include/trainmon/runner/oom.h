// SPDX-License-Identifier: Apache-2.0
// Was the job killed by the kernel OOM killer? Evidence, in order of strength: the oom_kill count
// of the job's memory cgroups went up (memory.events / memory.oom_control); failing that, the
// command died of SIGKILL while the host's available memory was exhausted.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "trainmon/runner/exit_status.h"

namespace trainmon::runner {

/// Available memory at or below this share of the total counts as exhausted (the kernel's
/// watermarks sit near 1-2 %; 3 % leaves room for one tick of lag).
inline constexpr double kExhaustedAvailableFraction = 0.03;

/// What the verdict is decided from. Sizes in bytes, times in milliseconds since the run started.
struct OomInputs {
  ChildExit exit;
  std::optional<std::uint64_t> oom_kills;            ///< kills counted in the job's cgroups during the run
  std::int64_t end_elapsed_ms = 0;                   ///< when the command ended
  std::optional<std::uint64_t> tree_rss_bytes;       ///< the job's last known RSS (tree total)
  std::optional<double> rss_growth_bytes_per_h;      ///< slope of tree RSS over the run
  std::optional<std::uint64_t> min_available_bytes;  ///< lowest host MemAvailable in the last samples
  std::optional<std::uint64_t> memory_total_bytes;   ///< host MemTotal
};

struct OomVerdict {
  bool certain = false;  ///< true: the cgroup counted the kill; false: inferred from SIGKILL + memory
  bool main_process_killed = false;  ///< the command itself died (else one of its processes did)
  std::string message;               ///< "killed by the kernel OOM killer at 00:03:12; the job's RSS was ..."
};

/// The verdict, or nullopt when nothing points at the OOM killer.
std::optional<OomVerdict> oom_verdict(const OomInputs& in);

/// "HH:MM:SS" for a duration in milliseconds (hours keep growing past 99).
std::string format_elapsed(std::int64_t ms);

/// Tracks the memory cgroups of a job's processes and their oom_kill counts.
class OomWatch {
 public:
  OomWatch(std::string proc_root, std::string sys_root);
  /// Note a process of the job: reads /proc/PID/cgroup (one small read) and, when the process is new
  /// or moved to another cgroup (a launcher placing itself), that cgroup's counters. A cgroup's
  /// oom_kill count is taken as the baseline the first time that cgroup is seen.
  void observe(std::uint32_t pid);
  /// Kills counted since each cgroup's baseline, summed; nullopt when no cgroup count was readable.
  std::optional<std::uint64_t> kills_since_start() const;

 private:
  std::string proc_root_, sys_root_;
  std::map<std::uint32_t, std::string> seen_pids_;  ///< pid -> /proc/PID/cgroup text last seen
  std::map<std::string, std::uint64_t> baseline_;   ///< counter file -> count when first seen
};

}  // namespace trainmon::runner
