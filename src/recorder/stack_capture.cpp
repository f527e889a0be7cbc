// SPDX-License-Identifier: Apache-2.0
#include "trainmon/recorder/stack_capture.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "core/pidfd.h"

namespace trainmon::recorder {
namespace {

std::optional<std::string> read_small(const std::string& path, std::size_t cap) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[4096];
  while (out.size() < cap) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

struct Pending {
  int fd = -1;
  off_t before = 0;
  off_t last_size = -1;
  int stable = 0;
  bool done = false;
};

}  // namespace

std::optional<std::uint64_t> parse_sigcgt(std::string_view text) {
  const auto at = text.find("SigCgt:");
  if (at == std::string_view::npos || (at > 0 && text[at - 1] != '\n')) return std::nullopt;
  std::string_view v = text.substr(at + 7);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  const auto end = v.find_first_not_of("0123456789abcdefABCDEF");
  const auto hex = v.substr(0, end);
  if (hex.empty() || hex.size() > 16) return std::nullopt;
  std::uint64_t mask = 0;
  auto [p, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), mask, 16);
  if (ec != std::errc{} || p != hex.data() + hex.size()) return std::nullopt;
  return mask;
}

bool signal_caught(const std::string& proc_root, std::uint32_t pid, int sig) {
  if (pid == 0 || sig < 1 || sig > 64) return false;
  const auto text = read_small(fmt::format("{}/{}/status", proc_root, pid), 16384);
  if (!text) return false;
  const auto mask = parse_sigcgt(*text);
  return mask && ((*mask >> (sig - 1)) & 1u);
}

std::vector<StackResult> capture_stacks(const std::vector<StackTarget>& targets,
                                        const StackCaptureOptions& o) {
  std::vector<StackResult> out(targets.size());
  std::vector<Pending> pending(targets.size());
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const auto& t = targets[i];
    out[i].target = t;
    // Only a real-time signal: never one whose meaning is to stop, kill or dump the process.
    if (t.signal < SIGRTMIN || t.signal > SIGRTMAX) {
      out[i].skipped = fmt::format("signal {} is not a real-time signal", t.signal);
      continue;
    }
    const std::string path = fmt::format("{}/stacks-{}.txt", o.directory, t.pid);
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
      out[i].skipped = fd < 0 ? fmt::format("no stacks file ({})", std::strerror(errno))
                              : std::string("the stacks file is not a regular file of ours");
      if (fd >= 0) ::close(fd);
      continue;
    }
    // The pidfd first, the handler check after: the signal can reach only the process checked.
    const long pidfd = ::syscall(SYS_pidfd_open, static_cast<pid_t>(t.pid), 0U);
    const int open_errno = pidfd < 0 ? errno : 0;
    if (!signal_caught(o.proc_root, t.pid, t.signal)) {
      out[i].skipped = fmt::format("/proc/{}/status SigCgt shows no handler for signal {}", t.pid, t.signal);
      if (pidfd >= 0) ::close(static_cast<int>(pidfd));
      ::close(fd);
      continue;
    }
    int err = 0;
    if (pidfd >= 0) {
      if (::syscall(SYS_pidfd_send_signal, static_cast<int>(pidfd), t.signal, nullptr, 0U) != 0) err = errno;
      ::close(static_cast<int>(pidfd));
    } else if (open_errno == ESRCH) {
      err = ESRCH;
    } else if (::kill(static_cast<pid_t>(t.pid), t.signal) != 0) {
      err = errno;
    }
    if (err != 0) {
      out[i].skipped = fmt::format("signal not sent: {}", std::strerror(err));
      ::close(fd);
      continue;
    }
    pending[i].fd = fd;
    pending[i].before = st.st_size;
  }
  // One bounded wait for all: a dump is complete when its file grew and then stayed the same size
  // for two polls (faulthandler writes it in one go from the handler).
  const auto deadline = std::chrono::steady_clock::now() + o.wait;
  for (;;) {
    bool waiting = false;
    for (auto& p : pending) {
      if (p.fd < 0 || p.done) continue;
      struct stat st {};
      if (::fstat(p.fd, &st) != 0) {
        p.done = true;
        continue;
      }
      if (st.st_size > p.before && st.st_size == p.last_size) {
        if (++p.stable >= 2) p.done = true;
      } else {
        p.stable = 0;
      }
      p.last_size = st.st_size;
      waiting = waiting || !p.done;
    }
    if (!waiting || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (std::size_t i = 0; i < targets.size(); ++i) {
    auto& p = pending[i];
    if (p.fd < 0) continue;
    std::string text;
    char buf[8192];
    off_t at = p.before;
    while (text.size() < o.max_bytes) {
      const std::size_t want = std::min(sizeof buf, o.max_bytes - text.size());
      const ssize_t n = ::pread(p.fd, buf, want, at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      text.append(buf, static_cast<std::size_t>(n));
      at += n;
    }
    ::close(p.fd);
    if (text.empty()) out[i].skipped = "no stacks came within the wait";
    out[i].text = std::move(text);
  }
  return out;
}

}  // namespace trainmon::recorder
