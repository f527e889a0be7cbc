// SPDX-License-Identifier: Apache-2.0
// Identity check before the signal dialog's kill (signal_target.h).
#include "trainmon/tui/signal_target.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include "core/pidfd.h"
#include "trainmon/host/parse_process.h"

namespace trainmon::tui {

TargetCheck check_signal_target(const std::string& proc_root, std::uint32_t pid,
                                std::uint64_t start_time_ticks) {
  if (pid == 0) return TargetCheck::gone;
  const std::string path = proc_root + "/" + std::to_string(pid) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT || errno == ESRCH ? TargetCheck::gone : TargetCheck::unreadable;
  char buf[4096];
  std::size_t len = 0;
  int read_errno = 0;
  while (len < sizeof buf) {
    const ssize_t n = ::read(fd, buf + len, sizeof buf - len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) read_errno = errno;
    if (n <= 0) break;
    len += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (read_errno == ESRCH) return TargetCheck::gone;  // exited between open and read
  if (read_errno != 0) return TargetCheck::unreadable;
  const auto stat = parse_pid_stat(std::string_view(buf, len));
  if (!stat || stat->pid != pid) return TargetCheck::unreadable;
  return stat->start_time_ticks == start_time_ticks ? TargetCheck::same : TargetCheck::reused;
}

SignalOutcome send_signal_checked(const std::string& proc_root, std::uint32_t pid,
                                  std::uint64_t start_time_ticks, int signal) {
  SignalOutcome out;
  const long pidfd = ::syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0U);
  const int open_errno = pidfd < 0 ? errno : 0;
  // Checked after the pidfd is open (see the header). ESRCH from pidfd_open: gone, unless the
  // check says otherwise (a fixture tree under --proc-root).
  out.check = check_signal_target(proc_root, pid, start_time_ticks);
  if (out.check != TargetCheck::same) {
    if (pidfd >= 0) ::close(static_cast<int>(pidfd));
    return out;
  }
  if (pidfd >= 0) {
    out.via_pidfd = true;
    const long rc = ::syscall(SYS_pidfd_send_signal, static_cast<int>(pidfd), signal, nullptr, 0U);
    out.err = rc == 0 ? 0 : errno;
    ::close(static_cast<int>(pidfd));
    return out;
  }
  if (open_errno == ESRCH) {  // the real process is gone although the (fixture) stat file is there
    out.err = ESRCH;
    return out;
  }
  out.err = ::kill(static_cast<pid_t>(pid), signal) == 0 ? 0 : errno;
  return out;
}

std::string describe_not_sent(std::uint32_t pid, TargetCheck check) {
  const std::string p = "process " + std::to_string(pid);
  switch (check) {
    case TargetCheck::same: return {};
    case TargetCheck::gone: return p + " exited: nothing sent";
    case TargetCheck::reused: return p + " exited (pid now used by another process): nothing sent";
    case TargetCheck::unreadable:
      return p + ": cannot confirm it is the selected process (/proc/" + std::to_string(pid) +
             "/stat unreadable): nothing sent";
  }
  return {};
}

}  // namespace trainmon::tui
