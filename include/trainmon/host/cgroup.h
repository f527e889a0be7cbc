// SPDX-License-Identifier: Apache-2.0
// The memory and CPU cgroups of a process: limits, usage and OOM kills (cgroup v1 or v2).
// Sources: Documentation/admin-guide/cgroup-v2.rst (memory.max, memory.current, memory.events,
// memory.peak, cpu.max), Documentation/admin-guide/cgroup-v1/memory.rst (memory.limit_in_bytes,
// memory.usage_in_bytes, memory.max_usage_in_bytes, memory.failcnt, memory.oom_control) and
// Documentation/scheduler/sched-bwc.rst (cpu.cfs_quota_us, cpu.cfs_period_us).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "trainmon/core/error.h"
#include "trainmon/core/reading.h"

namespace trainmon {

/// The largest value a memory limit file shows when no limit is set on cgroup v1: 2^63-1 rounded
/// down to the page size (4 KiB pages). Any value at or above kCgroupUnlimitedFloor reads as unlimited
/// (2^63-1 rounded down to 64 KiB pages, so arm64/ppc64le kernels are covered too).
inline constexpr std::uint64_t kCgroupV1Unlimited = 9223372036854771712ULL;
inline constexpr std::uint64_t kCgroupUnlimitedFloor = 9223372036854710272ULL;

/// A memory limit as written in memory.max / memory.limit_in_bytes.
struct CgroupLimit {
  bool unlimited = false;   ///< "max" (v2) or >= kCgroupUnlimitedFloor (v1)
  std::uint64_t bytes = 0;  ///< 0 when unlimited
};
/// Parses a limit file ("max\n", "9223372036854771712\n", "2147483648\n"); nullopt when malformed.
std::optional<CgroupLimit> parse_cgroup_memory_limit(std::string_view text);

/// The "oom_kill N" count of a v2 memory.events or a v1 memory.oom_control (Linux 4.13+);
/// nullopt when the text has no such line.
std::optional<std::uint64_t> parse_oom_kill_count(std::string_view text);
/// The count on the line "KEY N" of a flat keyed file (memory.events: "oom", "max", "oom_kill");
/// nullopt when the text has no such line.
std::optional<std::uint64_t> parse_keyed_count(std::string_view text, std::string_view key);

/// A CPU bandwidth limit: v2 cpu.max ("max 100000", "150000 100000") or v1 cpu.cfs_quota_us /
/// cpu.cfs_period_us (quota -1: none). Microseconds of CPU time per period.
struct CgroupCpuMax {
  bool unlimited = false;
  std::uint64_t quota_us = 0;   ///< 0 when unlimited
  std::uint64_t period_us = 0;  ///< the period (100000 by default)
};
/// Parses a v2 cpu.max; nullopt when malformed (a period of 0 included).
std::optional<CgroupCpuMax> parse_cgroup_cpu_max(std::string_view text);

struct CgroupMemory {
  int version = 0;        ///< 1 or 2
  std::string path;       ///< from /proc/PID/cgroup, e.g. "/kubepods/pod1/abc"
  std::string mount;      ///< the hierarchy's mount directory under sys_root, e.g. ".../fs/cgroup"
  std::string directory;  ///< the directory the values were read from
  /// Effective limit: the smallest limit of the cgroup and its ancestors (what the OOM killer uses).
  /// not_available with `unlimited` = true when no level sets one.
  Reading<std::uint64_t> limit_bytes;
  bool unlimited = false;
  /// The directory whose limit file sets limit_bytes (the cgroup's or an ancestor's); empty when none.
  std::string limit_directory;
  /// Times that level's limit stopped an allocation: v2 memory.events "oom" (the limit was reached
  /// and the OOM killer invoked), v1 memory.failcnt (usage hit the limit). not_available when unlimited.
  Reading<std::uint64_t> limit_hit_count;
  /// That level's peak usage: memory.peak (v2, Linux 5.19+) / memory.max_usage_in_bytes (v1).
  Reading<std::uint64_t> limit_peak_bytes;
  Reading<std::uint64_t> usage_bytes;     ///< memory.current / memory.usage_in_bytes
  Reading<std::uint64_t> peak_bytes;      ///< memory.peak (v2, Linux 5.19+) / memory.max_usage_in_bytes
  Reading<std::uint64_t> oom_kill_count;  ///< not_supported before Linux 4.13
};

/// The limit file's name for a hierarchy version: "memory.max" (2) or "memory.limit_in_bytes" (1).
const char* cgroup_memory_limit_file(int version) noexcept;
/// The limit file's name for a hierarchy version: "cpu.max" (2) or "cpu.cfs_quota_us" (1).
const char* cgroup_cpu_limit_file(int version) noexcept;

struct CgroupCpu {
  int version = 0;        ///< 1 or 2
  std::string path;       ///< from /proc/PID/cgroup (the v1 "cpu" line, else "0::")
  std::string mount;      ///< the hierarchy's mount directory under sys_root
  std::string directory;  ///< the cgroup's directory
  /// Effective limit in CPUs (quota / period): the smallest over the cgroup and its ancestors (each
  /// level throttles its subtree). not_available with `unlimited` = true when no level sets one.
  Reading<double> limit_cpus;
  bool unlimited = false;
  std::string limit_directory;  ///< the level whose quota sets limit_cpus; empty when none
};

/// Reads the memory cgroup of `pid`: /proc/PID/cgroup under `proc_root`, then the files under
/// `sys_root`/fs/cgroup (v2: fs/cgroup or fs/cgroup/unified; v1: fs/cgroup/memory). When the cgroup's
/// own directory is not visible (a container whose cgroup mount is its own cgroup) the path's
/// shorter suffixes and finally the mount root are tried. Error when /proc/PID/cgroup cannot be read
/// (process gone: ENOENT) or names no memory cgroup, or no directory is found. Never throws.
Expected<CgroupMemory> read_cgroup_memory(std::uint32_t pid, const std::string& proc_root,
                                          const std::string& sys_root);

/// Reads the CPU cgroup of `pid` the same way (v2: cpu.max, absent where the cpu controller is not
/// enabled, which reads as no limit; v1: fs/cgroup/cpu, cpu,cpuacct or cpuacct,cpu with
/// cpu.cfs_quota_us and cpu.cfs_period_us). Errors as read_cgroup_memory. Never throws.
Expected<CgroupCpu> read_cgroup_cpu(std::uint32_t pid, const std::string& proc_root,
                                    const std::string& sys_root);

}  // namespace trainmon
