// SPDX-License-Identifier: Apache-2.0
// The join between the processes NVML lists on each GPU and the processes of the /proc trainmon reads.
//
// NVML reports each process by its pid in the initial PID namespace (the driver does not translate
// pids into a container's namespace: NVIDIA/nvidia-docker#1483, NVIDIA/gpu-monitoring-tools#63) and
// nothing that identifies the process over time. A bare pid match is wrong in three cases: the process lives
// in another PID namespace (a container: the number means another process here, or nothing), it
// exited and the number was reused by an unrelated process, or trainmon itself reads the /proc of a
// child PID namespace (runs in a container). The join therefore uses the identity (pid, start time),
// the namespace of the /proc it reads, and a small memory kept across ticks:
//
//  1. Each GPU pid gets an entry the first time it is listed: first_seen = now (CLOCK_BOOTTIME
//     seconds, i.e. HostSample::uptime_s of the same tick). An entry not listed for more than
//     `forget_after_s` is dropped, and a pid listed again after such a gap is a new GPU process.
//  2. A local process with the same pid is the GPU process only if it started no later than
//     first_seen + start_tolerance_s: a process that started after the GPU process was already listed
//     cannot be it (it reused the number, or the GPU process is in another namespace).
//  3. Once matched, the entry is bound to that process's start time. A later tick that finds a
//     different start time at the same pid means the GPU process exited and the pid was reused,
//     never the new process.
//  4. When the /proc we read is a child PID namespace's (`host_pid_namespace` false) NVML's pids are
//     not its numbers: no GPU process is matched to a local process, whatever the number.
//
// What an unmatched GPU process is called ("not visible from here" or "gone") depends on what this
// /proc can see, and is decided from evidence, never from the absence alone:
//  - `exited` (gone) only when the /proc shows the initial PID namespace (`host_pid_namespace` true):
//    there every living process has its pid directory, so a listed pid with none (or state X) has
//    exited, and one refused by rules 2 or 3 now belongs to another process. When the /proc is also
//    this process's own namespace (`probe_missing_pids`) a missing pid is confirmed with kill(pid, 0):
//    EPERM or success means it exists but is hidden (hidepid=), hence `not_visible`.
//  - `not_visible` in every other case: a child namespace (a container: the job's own GPU processes
//    are among them, under host pids we cannot see), an unknown namespace (fixture trees, an
//    unreadable ns link), or a hidden pid. Such a process is never a ghost and never signalled.
// NVML reads a process's name from /proc/PID of the caller's mount namespace (nvidia-smi in a
// container shows names only with the host's /proc mounted): when the join refuses a local process
// with the same pid, an NVML name equal to that process's comm or argv[0] is that process's name, not
// the GPU process's, and is dropped (ReadStatus::not_available).
//  5. NSpid, when trainmon runs in a PID namespace `own_level` levels below the one of the /proc it
//     reads (a container given the host's /proc: `unshare --pid` without --mount-proc, a /host/proc
//     bind mount), and the driver numbers processes in trainmon's own namespace (a driver that
//     translates pids into the caller's namespace): a process's NSpid lists its pid in each namespace
//     from the /proc's down to its own, so entry `own_level` is its number in trainmon's namespace. A
//     GPU pid P is the process whose NSpid[own_level] is P when no process of trainmon's namespace
//     has the /proc number P (that one would be the driver numbering as /proc does, rules 1-3); the
//     start-time rules apply to it as to any match, and the GPU process then carries the /proc number
//     (GpuProcessSample::pid = that process's pid), so every view joins it by that number. The
//     sampler collects those processes (proc_pids_by_nspid: only processes of trainmon's own
//     namespace, by their ns/pid link; other containers' have the same small numbers). Without it a live
//     local process was matched to the host process of the same number (pid 2 is kthreadd) or called gone.
//     The reverse, trainmon in a container reading its own /proc while the driver gives host pids,
//     cannot be mapped: an own /proc's NSpid starts at the container's level and never shows host
//     numbers; those processes stay not_visible (rule 4), never gone, their GPU figures kept.
// Not covered: a driver that did translate pids into the caller's namespace while trainmon reads its
// own namespace's /proc would have its container-local pids refused by rule 4 too (shown
// not_visible: less said, nothing wrong said); a
// reuse that happens before the first sighting (NVML lists a pid, and by the time we
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
  /// Whether the /proc read shows the initial PID namespace (ProcPidNamespace::initial). nullopt
  /// (unknown): pids are matched as if it did (rules 1-3), but an unmatched pid is only not_visible.
  std::optional<bool> host_pid_namespace;
  /// Confirm a pid missing from /proc with kill(pid, 0) before calling it exited (hidepid hides
  /// other users' processes). Only valid when the /proc read is this process's own namespace and
  /// the initial one (ProcPidNamespace::own and ::initial): else kill(2) numbers other processes.
  bool probe_missing_pids = false;
  /// How many PID namespaces below the /proc's trainmon runs (ProcPidNamespace::self_depth): 0 when
  /// the /proc is its own namespace's (or unknown). Above 0, rule 5 maps GPU pids through NSpid.
  std::size_t own_level = 0;
  /// For rule 5, the /proc numbers of the processes of trainmon's own PID namespace this tick
  /// (proc_pids_by_nspid): only those are mapped through NSpid (another container's processes at the
  /// same depth have the same small numbers there). Sorted.
  std::vector<std::uint32_t> own_namespace_pids;
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
  std::size_t visible = 0, not_visible = 0, zombie = 0, exited = 0;
  std::size_t pid_reused = 0;  ///< matches refused by the start-time rules (2 and 3)
};

/// Sets `host` on every GPU process (visible / zombie / not_visible / exited), fills a missing
/// process_name from the host comm of a matched process (drops one copied from a refused one), and
/// on each matched host process appends the GPU index to gpu_indices and adds the GPU memory to
/// gpu_memory_bytes; a host process that is not matched is left untouched. `host_processes` must contain the
/// GPU pids (collect them with HostCollector, pids = the GPU pids); `now_boot_s` is HostSample::uptime_s of
/// the same tick, read after NVML's process list. Never throws.
GpuJoinStats join_gpu_processes(std::vector<GpuProcessSample>& gpu_processes,
                                std::vector<ProcessSample>& host_processes, GpuJoinMemory& memory,
                                double now_boot_s, const GpuJoinOptions& options = {});

/// The PID namespace of a /proc tree, as far as it can be told.
struct ProcPidNamespace {
  /// Whether the tree shows the initial PID namespace (every process, numbered as NVML numbers
  /// them); nullopt when it cannot be told (a fixture tree, no permission, a kernel before 3.8).
  std::optional<bool> initial;
  /// Whether it is this process's own PID namespace: `proc_root`/self/status has a one-entry NSpid
  /// (proc(5): NSpid lists the pid in each namespace from the one of the /proc mount down to the
  /// process's own), so kill(2) and /proc agree on numbers.
  bool own = false;
  /// How many PID namespaces below the tree's this process runs: `proc_root`/self/status's NSpid
  /// entries minus one (0 for its own namespace, without an NSpid line, or when unreadable).
  std::size_t self_depth = 0;
};

/// Reads the namespace of `proc_root` ("/proc"). The initial namespace is recognised by its fixed
/// inode 0xEFFFFFFC (PROC_PID_INIT_INO, include/linux/proc_ns.h, Linux >= 3.8) in the link
/// `ns/pid` of the tree's pid 1 (init of the namespace the /proc mount belongs to, so right also
/// for a /proc mounted from an ancestor namespace; needs ptrace access to pid 1, i.e. root), else of
/// `self` when the tree is our own namespace. Never throws.
ProcPidNamespace detect_proc_pid_namespace(const std::string& proc_root);

/// The /proc numbers (under `proc_root`) of the processes of this process's own PID namespace (their
/// ns/pid link is `proc_root`/self/ns/pid's) whose NSpid entry `level` is one of `local_pids` (their
/// numbers in the namespace `level` levels below the tree's), sorted; for rule 5.
/// Reads every `proc_root`/N/status: call it only with level > 0 and GPU processes listed. Empty
/// when none or unreadable. Never throws.
std::vector<std::uint32_t> proc_pids_by_nspid(const std::string& proc_root, std::size_t level,
                                              const std::vector<std::uint32_t>& local_pids);

}  // namespace trainmon
