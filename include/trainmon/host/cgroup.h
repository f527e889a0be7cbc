// SPDX-License-Identifier: Apache-2.0
// The memory cgroup of a process: limit, usage and OOM kills (cgroup v1 or v2).
// Sources: Documentation/admin-guide/cgroup-v2.rst (memory.max, memory.current, memory.events,
// memory.peak) and Documentation/admin-guide/cgroup-v1/memory.rst (memory.limit_in_bytes,
// memory.usage_in_bytes, memory.max_usage_in_bytes, memory.oom_control).
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

struct CgroupMemory {
  int version = 0;        ///< 1 or 2
  std::string path;       ///< from /proc/PID/cgroup, e.g. "/kubepods/pod1/abc"
  std::string directory;  ///< the directory the values were read from
  /// Effective limit: the smallest limit of the cgroup and its ancestors (what the OOM killer uses).
  /// not_available with `unlimited` = true when no level sets one.
  Reading<std::uint64_t> limit_bytes;
  bool unlimited = false;
  Reading<std::uint64_t> usage_bytes;     ///< memory.current / memory.usage_in_bytes
  Reading<std::uint64_t> peak_bytes;      ///< memory.peak (v2, Linux 5.19+) / memory.max_usage_in_bytes
  Reading<std::uint64_t> oom_kill_count;  ///< not_supported before Linux 4.13
};

/// Reads the memory cgroup of `pid`: /proc/PID/cgroup under `proc_root`, then the files under
/// `sys_root`/fs/cgroup (v2: fs/cgroup or fs/cgroup/unified; v1: fs/cgroup/memory). When the cgroup's
/// own directory is not visible (a container whose cgroup mount is its own cgroup) the path's
/// shorter suffixes and finally the mount root are tried. Error when /proc/PID/cgroup cannot be read
/// (process gone: ENOENT) or names no memory cgroup, or no directory is found. Never throws.
Expected<CgroupMemory> read_cgroup_memory(std::uint32_t pid, const std::string& proc_root,
                                          const std::string& sys_root);

}  // namespace trainmon
