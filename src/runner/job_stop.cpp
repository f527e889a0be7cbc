// SPDX-License-Identifier: Apache-2.0
#include "trainmon/runner/job_stop.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <map>
#include <set>

#include "trainmon/core/i18n.h"
#include "trainmon/core/i18n_plural.h"
#include "trainmon/runner/launcher.h"

namespace trainmon::runner {
namespace {

std::int64_t mono_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::optional<std::string> read_small(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[1024];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > 8192) break;
  }
  ::close(fd);
  return out;
}

std::optional<ProcStat> read_stat(pid_t pid) {
  auto text = read_small(fmt::format("/proc/{}/stat", pid));
  return text ? parse_proc_stat(*text) : std::nullopt;
}

bool is_alive(const ProcStat& p) {
  return p.state != 'Z' && p.state != 'X' && p.state != 'x';
}

std::string seconds_text(std::chrono::nanoseconds d) {
  return fmt::format("{:g}", std::chrono::duration<double>(d).count());
}

}  // namespace

std::optional<ProcStat> parse_proc_stat(std::string_view text) {
  ProcStat p;
  const auto open = text.find('(');
  const auto close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return std::nullopt;
  auto num = [](std::string_view s, auto& out) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && ptr != s.data();
  };
  if (!num(text.substr(0, open), p.pid) || p.pid <= 0) return std::nullopt;
  p.comm = std::string(text.substr(open + 1, close - open - 1));
  // fields after the name: 3 state, 4 ppid, 5 pgrp, 6 session ... 22 starttime
  std::vector<std::string_view> f;
  std::string_view rest = text.substr(close + 1);
  while (!rest.empty()) {
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\n')) rest.remove_prefix(1);
    if (rest.empty()) break;
    const auto end = std::min(rest.find_first_of(" \n"), rest.size());
    f.push_back(rest.substr(0, end));
    rest.remove_prefix(end);
  }
  if (f.size() < 20 || f[0].size() != 1) return std::nullopt;
  p.state = f[0][0];
  if (!num(f[1], p.ppid) || !num(f[2], p.pgid) || !num(f[19], p.start_ticks)) return std::nullopt;
  return p;
}

std::vector<ProcStat> descendants_in(std::span<const ProcStat> all, pid_t root, std::span<const pid_t> skip) {
  std::multimap<pid_t, const ProcStat*> children;
  std::map<pid_t, const ProcStat*> by_pid;
  for (const auto& p : all) {
    children.emplace(p.ppid, &p);
    by_pid.emplace(p.pid, &p);
  }
  const std::set<pid_t> skipped(skip.begin(), skip.end());
  std::vector<ProcStat> out;
  std::set<pid_t> seen{root};
  std::vector<pid_t> queue{root};
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const pid_t parent = queue[i];
    const auto pit = by_pid.find(parent);
    const std::uint64_t parent_start = pit != by_pid.end() ? pit->second->start_ticks : 0;
    auto [b, e] = children.equal_range(parent);
    for (auto it = b; it != e; ++it) {
      const ProcStat& c = *it->second;
      if (c.start_ticks < parent_start || skipped.contains(c.pid) || !seen.insert(c.pid).second) continue;
      out.push_back(c);
      queue.push_back(c.pid);
    }
  }
  return out;
}

std::vector<ProcStat> job_processes() {
  std::vector<ProcStat> all;
  DIR* d = ::opendir("/proc");
  if (!d) return {};
  while (const dirent* e = ::readdir(d)) {
    pid_t pid = 0;
    const std::string_view name(e->d_name);
    auto [ptr, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (ec != std::errc() || ptr != name.data() + name.size() || pid <= 0) continue;
    if (auto p = read_stat(pid)) all.push_back(std::move(*p));
  }
  ::closedir(d);
  const std::vector<pid_t> owned = owned_children();
  auto out = descendants_in(all, ::getpid(), owned);
  std::erase_if(out, [](const ProcStat& p) { return !is_alive(p); });
  return out;
}

int signal_process(const ProcStat& p, int sig) {
  // syscall(): glibc 2.36's <sys/pidfd.h> declares these without C linkage for C++.
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, p.pid, 0));
  if (fd < 0 && errno == ESRCH) return ESRCH;
  // The pidfd pins the process; the start time proves it is the one listed (not a reused pid).
  const auto now = read_stat(p.pid);
  int err = 0;
  if (!now || now->start_ticks != p.start_ticks) {
    err = ESRCH;
  } else if (fd >= 0) {
    err = ::syscall(SYS_pidfd_send_signal, fd, sig, nullptr, 0) == 0 ? 0 : errno;
  } else {
    err = ::kill(p.pid, sig) == 0 ? 0 : errno;  // no pidfd (Linux < 5.3): checked just above
  }
  if (fd >= 0) ::close(fd);
  return err;
}

std::string pid_list(std::span<const ProcStat> ps, std::size_t max) {
  std::string out;
  for (std::size_t i = 0; i < ps.size() && i < max; ++i) out += fmt::format("{}{}", i ? ", " : "", ps[i].pid);
  if (ps.size() > max) out += fmt::format(" … (+{})", ps.size() - max);
  return out;
}

std::string describe_stop(const JobStopReport& r, std::chrono::nanoseconds grace) {
  if (r.signal == 0 && r.killed == 0 && r.not_ended.empty()) return {};
  std::string out =
      r.leftovers ? i18n::trfn(r.signalled, "job stop: the command left {} process running; SIGTERM sent",
                               "job stop: the command left {} processes running; SIGTERM sent", r.signalled)
      : r.from_terminal
          ? i18n::trfn(r.signalled, "job stop: SIG{} from the terminal reached {} process",
                       "job stop: SIG{} from the terminal reached {} processes", sigabbrev_np(r.signal),
                       r.signalled)
          : i18n::trfn(r.signalled, "job stop: SIG{} passed on to {} process",
                       "job stop: SIG{} passed on to {} processes", sigabbrev_np(r.signal), r.signalled);
  if (r.killed > 0)
    out += r.escalated ? i18n::trf("; SIGKILL to {} at the second stop signal", r.killed)
                       : i18n::trf("; SIGKILL to {} still running after {} s", r.killed, seconds_text(grace));
  if (r.not_ended.empty()) {
    out += i18n::tr("; all ended");
  } else {
    std::string names;
    for (std::size_t i = 0; i < r.not_ended.size() && i < 8; ++i)
      names += fmt::format("{}{} ({}, {})", i ? ", " : "", r.not_ended[i].pid, r.not_ended[i].comm,
                           r.not_ended[i].state);
    if (r.not_ended.size() > 8) names += fmt::format(" … (+{})", r.not_ended.size() - 8);
    out += i18n::trf("; NOT ended: {}", names);
  }
  return out;
}

void JobStop::say(const std::string& line) const {
  if (!o_.quiet) std::fputs(line.c_str(), stderr);
}

void JobStop::on_signal(int sig, bool from_terminal, std::int64_t now_ns) {
  if (sig != SIGINT && sig != SIGTERM && sig != SIGHUP && sig != SIGQUIT) return;
  if (report_.signal != 0) {  // the second stop signal: no more waiting
    if (killed_at_ns_ < 0) kill_all(now_ns, true);
    return;
  }
  report_.signal = sig;
  auto job = job_processes();
  const pid_t own_group = ::getpgrp();
  std::size_t sent = 0;
  for (const auto& p : job) {
    // Ctrl-C reached trainmon's foreground process group already: not twice.
    if (!(from_terminal && p.pgid == own_group) && signal_process(p, sig) == 0) ++sent;
    if (p.state == 'T') (void)signal_process(p, SIGCONT);  // a stopped process acts on it (as systemd)
  }
  report_.signalled = job.size();
  report_.from_terminal = from_terminal;
  grace_end_ns_ = now_ns + o_.grace.count();
  const std::string tail =
      o_.grace.count() <= 0 ? std::string(i18n::tr("what still runs gets SIGKILL now"))
      : from_terminal       ? i18n::trf("what still runs in {} s gets SIGKILL (a second Ctrl-C: at once)",
                                        seconds_text(o_.grace))
                      : i18n::trf("what still runs in {} s gets SIGKILL (a second stop signal: at once)",
                                  seconds_text(o_.grace));
  say(from_terminal
          ? i18n::trfn(job.size(),
                       "trainmon {}: SIG{} from the terminal reached the job ({} process; trainmon "
                       "passed it on to the {} outside its process group); {}\n",
                       "trainmon {}: SIG{} from the terminal reached the job ({} processes; trainmon "
                       "passed it on to the {} outside its process group); {}\n",
                       o_.tool, sigabbrev_np(sig), job.size(), sent, tail)
          : i18n::trfn(job.size(), "trainmon {}: SIG{} passed on to the job's {} process ({}); {}\n",
                       "trainmon {}: SIG{} passed on to the job's {} processes ({}); {}\n", o_.tool,
                       sigabbrev_np(sig), job.size(), pid_list(job), tail));
  tick(now_ns);
}

void JobStop::kill_all(std::int64_t now_ns, bool escalated) {
  auto job = job_processes();
  killed_at_ns_ = now_ns;
  grace_end_ns_ = -1;
  report_.escalated = escalated;
  for (const auto& p : job)
    if (signal_process(p, SIGKILL) == 0) ++report_.killed;
  if (job.empty()) return;
  say(escalated
          ? i18n::trfn(job.size(), "trainmon {}: stop signal again: SIGKILL to the job's {} process ({})\n",
                       "trainmon {}: stop signal again: SIGKILL to the job's {} processes ({})\n", o_.tool,
                       job.size(), pid_list(job))
          : i18n::trfn(
                job.size(), "trainmon {}: {} process of the job still ran {} s after SIG{}: SIGKILL ({})\n",
                "trainmon {}: {} processes of the job still ran {} s after SIG{}: SIGKILL ({})\n", o_.tool,
                job.size(), seconds_text(o_.grace), sigabbrev_np(report_.signal), pid_list(job)));
}

void JobStop::tick(std::int64_t now_ns) {
  if (grace_end_ns_ >= 0 && killed_at_ns_ < 0 && now_ns >= grace_end_ns_) kill_all(now_ns, false);
}

std::optional<std::int64_t> JobStop::deadline_ns() const {
  if (grace_end_ns_ >= 0 && killed_at_ns_ < 0) return grace_end_ns_;
  return std::nullopt;
}

const JobStopReport& JobStop::finish() {
  auto left = job_processes();
  // What ends by itself once its parent is gone gets kLeftoverSettle first (reaped meanwhile).
  const std::int64_t settle_end = mono_ns() + std::chrono::nanoseconds(kLeftoverSettle).count();
  while (!left.empty() && report_.signal == 0 && mono_ns() < settle_end) {
    const std::int64_t wait = std::min<std::int64_t>(100'000'000, settle_end - mono_ns());
    auto ev = wait_for_event(0, std::chrono::nanoseconds(std::max<std::int64_t>(wait, 0)));
    if (ev.kind == Event::signal) on_signal(ev.signal_number, ev.from_terminal, mono_ns());
    left = job_processes();
  }
  if (!left.empty() && report_.signal == 0) {
    // The command ended and left processes behind: the ghosts that hold GPU memory. As systemd's
    // control-group mode: SIGTERM now, SIGKILL after the grace period.
    report_.signal = SIGTERM;
    report_.leftovers = true;
    std::size_t sent = 0;
    for (const auto& p : left) {
      if (signal_process(p, SIGTERM) == 0) ++sent;
      if (p.state == 'T') (void)signal_process(p, SIGCONT);
    }
    report_.signalled = sent;
    grace_end_ns_ = mono_ns() + o_.grace.count();
    say(main_ > 0 ? i18n::trfn(left.size(),
                               "trainmon {}: the command (pid {}) ended but left {} process running ({}): "
                               "SIGTERM; SIGKILL in {} s (Ctrl-C: at once)\n",
                               "trainmon {}: the command (pid {}) ended but left {} processes running ({}): "
                               "SIGTERM; SIGKILL in {} s (Ctrl-C: at once)\n",
                               o_.tool, main_, left.size(), pid_list(left), seconds_text(o_.grace))
                  : i18n::trfn(left.size(),
                               "trainmon {}: {} process started by its helpers still runs ({}): SIGTERM; "
                               "SIGKILL in {} s (Ctrl-C: at once)\n",
                               "trainmon {}: {} processes started by its helpers still run ({}): SIGTERM; "
                               "SIGKILL in {} s (Ctrl-C: at once)\n",
                               o_.tool, left.size(), pid_list(left), seconds_text(o_.grace)));
  }
  while (!left.empty()) {
    const std::int64_t now = mono_ns();
    tick(now);
    if (killed_at_ns_ >= 0 && now - killed_at_ns_ >= std::chrono::nanoseconds(kKillWait).count()) break;
    std::int64_t wait = 100'000'000;  // a re-scan of /proc every 0.1 s at most
    if (auto d = deadline_ns()) wait = std::clamp<std::int64_t>(*d - now, 0, wait);
    auto ev = wait_for_event(0, std::chrono::nanoseconds(wait));  // reaps the orphans among them
    if (ev.kind == Event::signal) {
      if (killed_at_ns_ >= 0) break;  // a stop signal after SIGKILL: stop waiting, name what is left
      on_signal(ev.signal_number, ev.from_terminal, mono_ns());
    }
    left = job_processes();
  }
  report_.not_ended = std::move(left);
  if (!report_.not_ended.empty()) {
    std::string names;
    for (const auto& p : report_.not_ended)
      names += fmt::format("{}{} ({}, state {})", names.empty() ? "" : ", ", p.pid, p.comm, p.state);
    // Said even with -q: these are the ghosts a user must know about.
    std::fputs(
        i18n::trf("trainmon {}: could not end these processes of the job: {}\n", o_.tool, names).c_str(),
        stderr);
  }
  return report_;
}

}  // namespace trainmon::runner
