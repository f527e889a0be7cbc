// SPDX-License-Identifier: Apache-2.0
#include "trainmon/runner/launcher.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>

extern char** environ;

namespace trainmon::runner {
namespace {

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

sigset_t watched_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kForwarded) sigaddset(&set, s);
  sigaddset(&set, SIGCHLD);
  return set;
}

void on_sigchld(int) {}

}  // namespace

void prepare_signals() {
  sigset_t set = watched_set();
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  // A handler (not SIG_DFL) so that SIGCHLD is never discarded; it never runs while blocked.
  struct sigaction sa {};
  sa.sa_handler = on_sigchld;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGCHLD, &sa, nullptr);
  ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

bool stop_signal_pending() {
  sigset_t pending;
  sigemptyset(&pending);
  if (::sigpending(&pending) != 0) return false;
  for (int s : kForwarded)
    if (sigismember(&pending, s) == 1) return true;
  return false;
}

Expected<pid_t> launch(const LaunchOptions& options) {
  if (options.argv.empty()) {
    return std::unexpected(
        Error{ErrorDomain::usage, 0, "NO_COMMAND", "no command given (trainmon run -- CMD ARGS)"});
  }
  // Everything the child needs is built before fork: after it only async-signal-safe calls run.
  std::vector<std::string> env_store;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    bool overridden = false;
    for (const auto& [k, v] : options.extra_env) {
      if (kv.size() > k.size() && kv.substr(0, k.size()) == k && kv[k.size()] == '=') overridden = true;
    }
    if (!overridden) env_store.emplace_back(kv);
  }
  for (const auto& [k, v] : options.extra_env) env_store.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_store = options.argv;
  for (auto& s : argv_store) argv.push_back(s.data());
  argv.push_back(nullptr);

  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) {
    int err = errno;
    return std::unexpected(Error{ErrorDomain::os, err, "pipe2", std::strerror(err)});
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    return std::unexpected(
        Error{ErrorDomain::os, err, "fork", fmt::format("cannot start the command: {}", std::strerror(err))});
  }
  if (pid == 0) {
    // child: default dispositions and an empty mask, as if started by the shell
    ::close(pipefd[0]);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ::sigaction(SIGCHLD, &dfl, nullptr);
    sigset_t empty;
    sigemptyset(&empty);
    ::sigprocmask(SIG_SETMASK, &empty, nullptr);
    ::execvpe(argv[0], argv.data(), envp.data());
    int err = errno;
    [[maybe_unused]] auto n = ::write(pipefd[1], &err, sizeof err);
    ::_exit(127);
  }
  ::close(pipefd[1]);
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(pipefd[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  ::close(pipefd[0]);
  if (n == sizeof child_errno) {
    int st = 0;
    ::waitpid(pid, &st, 0);
    return std::unexpected(
        Error{ErrorDomain::os, child_errno, child_errno == ENOENT ? "ENOENT" : "EXEC",
              fmt::format("cannot run '{}': {}", options.argv[0], std::strerror(child_errno))});
  }
  return pid;
}

int exit_code_for_launch_error(const Error& error) noexcept {
  if (error.domain != ErrorDomain::os) return 1;
  if (error.code == ENOENT) return 127;
  if (error.code == EACCES || error.code == ENOEXEC || error.code == EPERM) return 126;
  return 1;
}

namespace {

struct OwnedChildren {
  std::mutex mu;
  std::set<pid_t> pids;
};

OwnedChildren& owned() {
  static OwnedChildren o;
  return o;
}

/// Reaps every exited child that nobody else owns; returns the main child's status when it is
/// among them. A zombie owned by another component stops the sweep (waitid shows the same first
/// zombie until it is reaped): its owner polls it within milliseconds, the next sweep goes on.
std::optional<ChildExit> reap_children(pid_t child) {
  auto& o = owned();
  std::lock_guard lk(o.mu);
  for (;;) {
    siginfo_t si{};
    if (::waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == 0) return std::nullopt;
    if (o.pids.contains(si.si_pid)) return std::nullopt;
    int st = 0;
    const pid_t p = ::waitpid(si.si_pid, &st, WNOHANG);
    if (p <= 0) return std::nullopt;
    if (child > 0 && p == child) return decode_wait_status(st);
  }
}

}  // namespace

pid_t spawn_owned_child(const std::function<pid_t()>& spawn) {
  auto& o = owned();
  std::lock_guard lk(o.mu);
  const pid_t pid = spawn();
  if (pid > 0) o.pids.insert(pid);
  return pid;
}

void release_owned_child(pid_t pid) {
  auto& o = owned();
  std::lock_guard lk(o.mu);
  o.pids.erase(pid);
}

std::vector<pid_t> owned_children() {
  auto& o = owned();
  std::lock_guard lk(o.mu);
  return {o.pids.begin(), o.pids.end()};
}

Event wait_for_event(pid_t child, std::chrono::nanoseconds timeout) {
  const sigset_t set = watched_set();
  timespec deadline{};
  ::clock_gettime(CLOCK_MONOTONIC, &deadline);
  const std::int64_t ns = std::max<std::int64_t>(timeout.count(), 0);
  deadline.tv_sec += static_cast<time_t>(ns / 1'000'000'000);
  deadline.tv_nsec += static_cast<long>(ns % 1'000'000'000);
  if (deadline.tv_nsec >= 1'000'000'000) {
    deadline.tv_sec += 1;
    deadline.tv_nsec -= 1'000'000'000;
  }
  for (;;) {
    // Reap: the main child, and orphans reparented to us (we are a subreaper); not the children
    // other parts of trainmon wait for themselves (spawn_owned_child).
    if (auto exit = reap_children(child)) return Event{Event::child_exited, *exit, 0};
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    std::int64_t left_ns =
        (deadline.tv_sec - now.tv_sec) * 1'000'000'000LL + (deadline.tv_nsec - now.tv_nsec);
    if (left_ns <= 0) return Event{};
    timespec wait{static_cast<time_t>(left_ns / 1'000'000'000), static_cast<long>(left_ns % 1'000'000'000)};
    siginfo_t info{};
    int sig = ::sigtimedwait(&set, &info, &wait);
    if (sig < 0) {
      if (errno == EAGAIN) return Event{};
      continue;  // EINTR
    }
    if (sig == SIGCHLD) continue;
    // A terminal-generated signal (si_code SI_KERNEL) went to the whole foreground group; anything
    // else (kill(1), a scheduler) only reached us. JobStop passes it on where it did not reach.
    return Event{Event::signal, {}, sig, info.si_code == SI_KERNEL};
  }
}

}  // namespace trainmon::runner
