// SPDX-License-Identifier: Apache-2.0
// The join between the processes NVML lists on each GPU and the processes of this host's /proc.
//
// NVML reports a PID (of the initial PID namespace) and nothing that identifies the process over
// time. A bare PID match is wrong in three cases: the process lives in another PID namespace (a
// container: the number means another process here, or nothing), it exited and the number was reused
// by an unrelated process, or trainmon itself runs in a child PID namespace. The join therefore uses
// the identity (pid, start time) and a small memory kept across ticks:
//
//  1. Each GPU pid gets an entry the first time it is listed: first_seen = now (CLOCK_BOOTTIME
//     seconds, i.e. HostSample::uptime_s of the same tick). An entry not listed for more than
//     `forget_after_s` is dropped, and a pid listed again after such a gap is a new GPU process.
//  2. A local process with the same pid is the GPU process only if it started no later than
//     first_seen + start_tolerance_s: a process that started after the GPU process was already listed
//     cannot be it (it reused the number, or the GPU process is in another namespace).
//  3. Once matched, the entry is bound to that process's start time. A later tick that finds a
//     different start time at the same pid means the GPU process exited and the pid was reused:
//     not_visible, never the new process.
//  4. When trainmon's own /proc is in a child PID namespace (`host_pid_namespace` false) NVML's PIDs
//     are not ours: every GPU process is not_visible.
// Not covered: a reuse that happens before the first sighting (NVML lists a pid, and by the time we
// first see it the pid already belongs to a process started earlier than that sighting) — rare, since
// a listed GPU context keeps its process alive; and a reuse within start_tolerance_s of first_seen.
// Every GPU process gets a HostVisibility; none is dropped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "trainmon/core/gpu_sample.h"
#include "trainmon/core/host_sample.h"

namespace trainmon {

struct GpuJoinOptions {
  /// Slack on the start-time rule, seconds: start time resolution (1/USER_HZ) plus the time between
  /// NVML's process list and the /proc read of the same tick.
  double start_tolerance_s = 1.0;
  /// An entry not listed by NVML for longer than this is forgotten (seconds).
  double forget_after_s = 10.0;
  /// Whether our /proc shows the initial PID namespace (detect_host_pid_namespace); nullopt: assume so.
  std::optional<bool> host_pid_namespace;
};

/// What the join remembers about one GPU pid across ticks.
struct GpuJoinEntry {
  double first_seen_boot_s = 0;  ///< when NVML first listed this pid (CLOCK_BOOTTIME)
  double last_seen_boot_s = 0;
  std::optional<std::uint64_t> bound_start_ticks;  ///< start time of the host process it was matched to
};

/// The join's memory: keep one per sampler, pass it to every call.
struct GpuJoinMemory {
  std::unordered_map<std::uint32_t, GpuJoinEntry> entries;
};

struct GpuJoinStats {
  std::size_t visible = 0, not_visible = 0, zombie = 0;
  std::size_t pid_reused = 0;  ///< matches refused by the start-time rules (2 and 3)
};

/// Sets `host` on every GPU process (visible / not_visible / zombie), fills a missing process_name
/// from the host comm, and on each matched host process appends the GPU index to gpu_indices and adds
/// the GPU memory to gpu_memory_bytes. `host_processes` must contain the GPU pids (collect them with
/// HostCollector, pids = the GPU pids); `now_boot_s` is HostSample::uptime_s of the same tick, read
/// after NVML's process list. Never throws.
GpuJoinStats join_gpu_processes(std::vector<GpuProcessSample>& gpu_processes,
                                std::vector<ProcessSample>& host_processes, GpuJoinMemory& memory,
                                double now_boot_s, const GpuJoinOptions& options = {});

/// Whether `proc_root`/self/ns/pid is the initial PID namespace (inode 0xEFFFFFFC, PROC_PID_INIT_INO).
/// nullopt when the link cannot be read (fixture trees, very old kernels).
std::optional<bool> detect_host_pid_namespace(const std::string& proc_root);

}  // namespace trainmon
