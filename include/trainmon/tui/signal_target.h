// SPDX-License-Identifier: Apache-2.0
// The signal dialog of `trainmon top` signals only the process the user selected: a process is
// identified by (pid, start time), never by pid alone, because a pid is reused once its process
// exits (the same rule as htop's and btop's "kill"). The start time is field 22 `starttime` of
// /proc/PID/stat (proc(5)): clock ticks after boot, fixed for the life of the process.
#pragma once

#include <cstdint>
#include <string>

namespace trainmon::tui {

/// Whether `pid` is still the process the dialog was opened for.
enum class TargetCheck : std::uint8_t {
  same,        ///< PROC/PID/stat exists and its start time equals the remembered one
  gone,        ///< no PROC/PID (ENOENT, ESRCH): the process exited and was reaped
  reused,      ///< PROC/PID/stat has another start time: the pid now belongs to another process
  unreadable,  ///< PROC/PID/stat could not be read (EACCES, ...) or is malformed: identity unknown
};

/// Reads `proc_root`/PID/stat (--proc-root; "/proc" normally) and compares its field 22 with
/// `start_time_ticks`. Never throws; anything but `same` means "do not signal".
TargetCheck check_signal_target(const std::string& proc_root, std::uint32_t pid,
                                std::uint64_t start_time_ticks);

/// Outcome of send_signal_checked.
struct SignalOutcome {
  TargetCheck check = TargetCheck::unreadable;  ///< the identity check; a signal went out only when `same`
  int err = 0;             ///< when `check` is `same`: 0 (sent) or the errno of the send (EPERM, ESRCH)
  bool via_pidfd = false;  ///< sent through a pidfd (pidfd_open(2) + pidfd_send_signal(2))
};

/// Sends `signal` to `pid` only when it is still the process started at `start_time_ticks`.
/// Race-free where pidfds exist (Linux >= 5.3): the pidfd is opened first, the start time checked
/// after, so the pidfd refers to the checked process (that process held the pid from its start until
/// the check), and pidfd_send_signal cannot reach a later holder of the pid. Where pidfd_open fails
/// with ENOSYS, EPERM (seccomp) or EINVAL, the check is followed at once by kill(2): the remaining
/// window is the few microseconds between the two calls.
SignalOutcome send_signal_checked(const std::string& proc_root, std::uint32_t pid,
                                  std::uint64_t start_time_ticks, int signal);

/// One line for the user when nothing was sent ("process 1234 exited (pid now used by another
/// process): nothing sent"); empty for TargetCheck::same.
std::string describe_not_sent(std::uint32_t pid, TargetCheck check);

}  // namespace trainmon::tui
