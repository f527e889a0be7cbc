// SPDX-License-Identifier: Apache-2.0
// Was the job killed by the kernel OOM killer, and at which limit? Evidence, in order of strength:
// the oom_kill count of the job's memory cgroups went up (memory.events / memory.oom_control);
// failing that (no count readable), the command died of SIGKILL while its memory cgroup was at its
// limit, or while the host's available memory was exhausted. A kill is "at the cgroup's limit" when a
// limit is set on the job's cgroup or an ancestor and that level hit it during the run: its
// memory.events "oom" (v2) or memory.failcnt (v1) rose, or its peak usage came within
// kLimitReachedFraction of the limit. Then the message names the limit, not the host's free memory.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>

#include "trainmon/runner/exit_status.h"

namespace trainmon::runner {

/// Available memory at or below this share of the total counts as exhausted (the kernel's
/// watermarks sit near 1-2 %; 3 % leaves room for one tick of lag).
inline constexpr double kExhaustedAvailableFraction = 0.03;

/// A peak usage at or above this share of the cgroup's memory limit counts as having reached it
/// (usage cannot pass the limit; reclaim keeps the last few pages free: 2 % leaves room for that).
inline constexpr double kLimitReachedFraction = 0.98;

/// The cgroup limits of a job (OomWatch::limits): the tightest over its processes' cgroups.
struct JobCgroupLimits {
  int version = 0;   ///< 1 or 2; 0 when no cgroup could be read
  std::string path;  ///< the cgroup path of the job's first process (/proc/PID/cgroup)
  std::optional<std::uint64_t> memory_limit_bytes;  ///< effective memory.max / memory.limit_in_bytes
  std::string memory_limit_file;                    ///< "memory.max" or "memory.limit_in_bytes"
  std::string memory_limit_path;                    ///< the cgroup (path under the mount) whose file sets it
  std::optional<std::uint64_t> memory_peak_bytes;   ///< that cgroup's peak usage, as last read
  /// That level hit its limit since first seen: its v1 memory.failcnt rose, or its peak is within
  /// kLimitReachedFraction of the limit (page cache can fill a cgroup to its limit harmlessly, so
  /// this alone does not prove an OOM there), or memory_limit_oom.
  bool memory_limit_reached = false;
  /// Its v2 memory.events "oom" rose: the limit itself invoked the OOM killer (definitive).
  bool memory_limit_oom = false;
  std::optional<double> cpu_limit_cpus;  ///< effective cpu.max / cfs quota ÷ period, in CPUs
  std::string cpu_limit_file;            ///< "cpu.max" or "cpu.cfs_quota_us"
  std::string cpu_limit_path;            ///< the cgroup whose quota sets it
  /// Any limit set (what is worth showing).
  [[nodiscard]] bool any() const noexcept { return memory_limit_bytes || cpu_limit_cpus; }
};

/// One line for people: "memory 64.0 MiB (memory.max of /a/b), CPU 1.50 CPUs (cpu.max of /a)";
/// empty when no limit is set.
std::string describe_cgroup_limits(const JobCgroupLimits& l);

/// What the verdict is decided from. Sizes in bytes, times in milliseconds since the run started.
struct OomInputs {
  ChildExit exit;
  std::optional<std::uint64_t> oom_kills;            ///< kills counted in the job's cgroups during the run
  std::int64_t end_elapsed_ms = 0;                   ///< when the command ended
  std::optional<std::uint64_t> tree_rss_bytes;       ///< the job's last known RSS (tree total)
  std::optional<double> rss_growth_bytes_per_h;      ///< slope of tree RSS over the run
  std::optional<std::uint64_t> min_available_bytes;  ///< lowest host MemAvailable in the last samples
  std::optional<std::uint64_t> memory_total_bytes;   ///< host MemTotal
  JobCgroupLimits cgroup;                            ///< the job's cgroup limits (OomWatch::limits)
  /// The process the kill ended, as the diagnosis (D20) named it: pid, its RSS at its last tick and its
  /// kind ("DataLoader worker", "main process"); the message names it instead of the job's RSS after
  /// the kill. Unset: unknown (the message gives the job's RSS).
  std::optional<std::uint32_t> killed_pid;
  std::optional<std::uint64_t> killed_rss_bytes;
  std::string killed_kind;
};

struct OomVerdict {
  bool certain = false;  ///< true: the cgroup counted the kill; false: inferred from SIGKILL + memory
  bool main_process_killed = false;  ///< the command itself died (else one of its processes did)
  bool at_cgroup_limit = false;      ///< the job's memory cgroup reached its limit (not the host's RAM)
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
  /// Observes each of `pids` (sorted, the job's processes now) and forgets every other pid: memory
  /// stays bounded by the job's size at one time, however many processes it runs over its life.
  void observe_job(std::span<const std::uint32_t> pids);
  /// Pids remembered now (tests).
  std::size_t pids_remembered() const noexcept { return seen_pids_.size(); }
  /// Kills counted since each cgroup's baseline, summed; nullopt when no cgroup count was readable.
  std::optional<std::uint64_t> kills_since_start() const;
  /// The tightest memory and CPU limits over the cgroups seen (each with its ancestors), with the
  /// limiting level's peak and whether it reached its limit re-read now. version 0 before any
  /// cgroup was read.
  JobCgroupLimits limits() const;
  /// The tightest memory limit over the cgroups seen, bytes (no file read); nullopt: none.
  std::optional<std::uint64_t> memory_limit_bytes() const;
  /// How many times observe() read a cgroup (a process new to it, or moved): limits() can only
  /// differ after this changes.
  std::uint64_t cgroup_reads() const noexcept { return cgroup_reads_; }

 private:
  /// A memory limit seen on some level: where, and its hit count when first seen.
  struct MemoryLimit {
    int version = 0;
    std::uint64_t bytes = 0;
    std::string directory;  ///< the level's directory (under sys_root)
    std::string path;       ///< the level's cgroup path
    std::optional<std::uint64_t> hits_at_start;
  };
  std::string proc_root_, sys_root_;
  std::map<std::uint32_t, std::string> seen_pids_;    ///< pid -> /proc/PID/cgroup text last seen
  std::map<std::string, std::uint64_t> baseline_;     ///< counter file -> count when first seen
  std::map<std::string, MemoryLimit> memory_limits_;  ///< by limiting directory
  std::uint64_t cgroup_reads_ = 0;
  int version_ = 0;
  std::string first_path_;
  std::optional<double> cpu_limit_;
  std::string cpu_file_, cpu_path_;
  /// Cgroups (and limiting levels) remembered, at most: a job that makes a cgroup per process
  /// (systemd-run scopes) keeps the first ones; their kills and limits are what the verdict needs.
  static constexpr std::size_t kMaxCgroups = 4096;
};

}  // namespace trainmon::runner
