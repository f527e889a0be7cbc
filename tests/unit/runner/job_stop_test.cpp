// SPDX-License-Identifier: Apache-2.0
// Stopping a job as a whole: /proc/PID/stat parsing (names with blanks and parentheses), the tree
// below trainmon (skipped subtrees, stale parent pids), the summary's words, and a real tree: a
// child that ignores SIGTERM with a grandchild that setsid() away.
#include "trainmon/runner/job_stop.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <vector>

#include "trainmon/runner/launcher.h"

namespace trainmon::runner {
namespace {

using namespace std::chrono_literals;

std::string stat_line(int pid, std::string_view comm, char state, int ppid, int pgid, std::uint64_t start) {
  // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
  // cutime cstime priority nice threads itrealvalue starttime vsize ...
  return std::to_string(pid) + " (" + std::string(comm) + ") " + state + " " + std::to_string(ppid) + " " +
         std::to_string(pgid) + " 7 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 " + std::to_string(start) +
         " 1000 200 18446744073709551615\n";
}

TEST(JobStop, ParsesStatWithAwkwardNames) {
  for (std::string_view comm : {"python", "a b", "x) (y", ")", "(", "trainer (rank 0)"}) {
    auto p = parse_proc_stat(stat_line(4242, comm, 'S', 17, 4240, 987654));
    ASSERT_TRUE(p) << comm;
    EXPECT_EQ(p->pid, 4242);
    EXPECT_EQ(p->comm, comm);
    EXPECT_EQ(p->state, 'S');
    EXPECT_EQ(p->ppid, 17);
    EXPECT_EQ(p->pgid, 4240);
    EXPECT_EQ(p->start_ticks, 987654u);
  }
  EXPECT_FALSE(parse_proc_stat(""));
  EXPECT_FALSE(parse_proc_stat("12 (x) S 1 2"));  // cut short
  EXPECT_FALSE(parse_proc_stat("x (y) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21"));
}

TEST(JobStop, DescendantsSkipOwnedSubtreesAndStaleParents) {
  std::vector<ProcStat> all = {
      {10, 1, 10, 'S', 100, "trainmon"}, {11, 10, 10, 'S', 110, "python"}, {12, 11, 10, 'S', 120, "worker"},
      {13, 10, 13, 'S', 130, "orphan"},  {14, 13, 14, 'Z', 140, "zombie"}, {20, 10, 20, 'S', 150, "alert"},
      {21, 20, 20, 'S', 160, "curl"},    {30, 11, 30, 'S', 50, "older"},  // ppid 11 but older: not a child
      {40, 1, 40, 'S', 90, "elsewhere"},
  };
  const std::vector<pid_t> skip{20};
  auto d = descendants_in(all, 10, skip);
  std::vector<pid_t> pids;
  for (const auto& p : d) pids.push_back(p.pid);
  EXPECT_EQ(pids, (std::vector<pid_t>{11, 13, 12, 14}));  // parents first; zombies listed here
  EXPECT_TRUE(descendants_in(all, 99, {}).empty());
}

TEST(JobStop, PidListsAreAbbreviatedWithAMark) {
  std::vector<ProcStat> ps;
  for (int i = 1; i <= 11; ++i) ps.push_back({i, 0, 0, 'S', 0, ""});
  EXPECT_EQ(pid_list(std::span(ps).first(3)), "1, 2, 3");
  EXPECT_EQ(pid_list(ps, 8), "1, 2, 3, 4, 5, 6, 7, 8 … (+3)");
  EXPECT_EQ(pid_list({}), "");
}

TEST(JobStop, SummaryLine) {
  JobStopReport r;
  EXPECT_EQ(describe_stop(r, 30s), "");
  r.signal = SIGTERM;
  r.signalled = 5;
  EXPECT_EQ(describe_stop(r, 30s), "job stop: SIGTERM passed on to 5 processes; all ended");
  JobStopReport ctrl_c = r;
  ctrl_c.signal = SIGINT;
  ctrl_c.from_terminal = true;  // the terminal sent it to the job's foreground group: not "passed on"
  EXPECT_EQ(describe_stop(ctrl_c, 30s), "job stop: SIGINT from the terminal reached 5 processes; all ended");
  r.killed = 2;
  EXPECT_EQ(describe_stop(r, 2500ms),
            "job stop: SIGTERM passed on to 5 processes; SIGKILL to 2 still running after 2.5 s; all ended");
  r.escalated = true;
  r.not_ended = {{77, 1, 77, 'D', 0, "python"}};
  EXPECT_EQ(describe_stop(r, 30s),
            "job stop: SIGTERM passed on to 5 processes; SIGKILL to 2 at the second stop signal; NOT ended: "
            "77 (python, D)");
  JobStopReport left;
  left.signal = SIGTERM;
  left.leftovers = true;
  left.signalled = 1;
  EXPECT_EQ(describe_stop(left, 30s),
            "job stop: the command left 1 process running; SIGTERM sent; all ended");
}

TEST(JobStop, SummaryCountsSayProcessOrProcesses) {
  // Issue 33 plurals: 1 process, any other count processes, in each form of the line.
  for (auto [n, noun] :
       {std::pair{0u, "processes"}, {1u, "process"}, {2u, "processes"}, {11u, "processes"}}) {
    JobStopReport r;
    r.signal = SIGTERM;
    r.signalled = n;
    EXPECT_EQ(describe_stop(r, 30s), fmt::format("job stop: SIGTERM passed on to {} {}; all ended", n, noun));
    r.from_terminal = true;
    r.signal = SIGINT;
    EXPECT_EQ(describe_stop(r, 30s),
              fmt::format("job stop: SIGINT from the terminal reached {} {}; all ended", n, noun));
    r.from_terminal = false;
    r.leftovers = true;
    r.signal = SIGTERM;
    EXPECT_EQ(describe_stop(r, 30s),
              fmt::format("job stop: the command left {} {} running; SIGTERM sent; all ended", n, noun));
  }
}

std::int64_t mono_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

TEST(JobStop, EndsASetsidGrandchildAndKillsAChildThatIgnoresSigterm) {
  prepare_signals();  // this test's own process (ctest runs each TEST alone): subreaper, signals blocked
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGTERM, SIG_IGN);
    if (::fork() == 0) {  // the grandchild: its own session, default SIGTERM
      ::signal(SIGTERM, SIG_DFL);
      ::setsid();
      [[maybe_unused]] auto n = ::write(ready[1], "g", 1);
      for (;;) ::pause();
    }
    [[maybe_unused]] auto n = ::write(ready[1], "c", 1);
    for (;;) ::pause();
  }
  char buf[2];
  ASSERT_EQ(::read(ready[0], buf, 1), 1);
  ASSERT_EQ(::read(ready[0], buf + 1, 1), 1);
  ::close(ready[0]);
  ::close(ready[1]);
  ::usleep(100'000);  // the grandchild's setsid() is done
  ASSERT_EQ(job_processes().size(), 2u);

  JobStop stop(child, JobStopOptions{"test", 300ms, true});
  const std::int64_t t0 = mono_ns();
  stop.on_signal(SIGTERM, false, t0);
  ChildExit exit;
  for (;;) {
    auto ev = wait_for_event(child, 50ms);
    stop.tick(mono_ns());
    if (ev.kind == Event::child_exited) {
      exit = ev.exit;
      break;
    }
    ASSERT_LT(mono_ns() - t0, 10'000'000'000) << "the child was not killed";
  }
  EXPECT_GE(mono_ns() - t0, 300'000'000);  // not before the grace period
  ASSERT_TRUE(exit.signal);
  EXPECT_EQ(*exit.signal, SIGKILL);
  const auto& r = stop.finish();
  EXPECT_EQ(r.signal, SIGTERM);
  EXPECT_EQ(r.signalled, 2u);
  EXPECT_EQ(r.killed, 1u);  // the grandchild had ended by SIGTERM
  EXPECT_TRUE(r.not_ended.empty());
  EXPECT_TRUE(job_processes().empty());
}

}  // namespace
}  // namespace trainmon::runner
