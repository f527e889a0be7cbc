// SPDX-License-Identifier: Apache-2.0
#include "trainmon/runner/oom.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace trainmon::runner {
namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

ChildExit killed(int sig) {
  ChildExit e;
  e.signal = sig;
  return e;
}

TEST(RunnerOom, CgroupCountPlusSigkillIsCertain) {
  OomInputs in;
  in.exit = killed(SIGKILL);
  in.oom_kills = 1;
  in.end_elapsed_ms = (3 * 60 + 12) * 60'000LL;  // 03:12:00
  in.tree_rss_bytes = static_cast<std::uint64_t>(58.1 * kGiB);
  in.rss_growth_bytes_per_h = 1.2 * kGiB;
  auto v = oom_verdict(in);
  ASSERT_TRUE(v);
  EXPECT_TRUE(v->certain);
  EXPECT_TRUE(v->main_process_killed);
  EXPECT_EQ(
      v->message,
      "killed by the kernel OOM killer at 03:12:00; the job's RSS was 58.1 GiB and had grown 1.2 GiB/h");
}

TEST(RunnerOom, SigkillWithExhaustedMemoryIsInferred) {
  OomInputs in;
  in.exit = killed(SIGKILL);
  in.end_elapsed_ms = 90'000;
  in.memory_total_bytes = 64 * kGiB;
  in.min_available_bytes = kGiB;  // 1.6 % available
  in.tree_rss_bytes = 60 * kGiB;
  auto v = oom_verdict(in);
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->certain);
  EXPECT_EQ(
      v->message,
      "probably killed by the kernel OOM killer at 00:01:30 (SIGKILL while available memory was exhausted); "
      "the job's RSS was 60.0 GiB");
}

TEST(RunnerOom, SigkillWithPlentyOfMemoryIsNotOom) {
  OomInputs in;
  in.exit = killed(SIGKILL);
  in.memory_total_bytes = 64 * kGiB;
  in.min_available_bytes = 30 * kGiB;
  in.oom_kills = 0;
  EXPECT_FALSE(oom_verdict(in));
}

TEST(RunnerOom, NormalExitWithoutKillsIsNotOomButAKilledWorkerIsReported) {
  OomInputs in;
  in.exit.exited = true;
  in.exit.code = 1;
  in.oom_kills = 0;
  EXPECT_FALSE(oom_verdict(in));
  in.oom_kills = 2;  // a DataLoader worker died; the main process exited with an error
  in.end_elapsed_ms = 5000;
  auto v = oom_verdict(in);
  ASSERT_TRUE(v);
  EXPECT_TRUE(v->certain);
  EXPECT_FALSE(v->main_process_killed);
  EXPECT_EQ(v->message, "a process of the job was killed by the kernel OOM killer (by 00:00:05)");
  // Named by the diagnosis (D20): the killed worker's own RSS, not the job's after the kill (issue 34).
  in.tree_rss_bytes = kGiB / 10;
  in.rss_growth_bytes_per_h = 271.9 * kGiB;
  in.killed_pid = 4242;
  in.killed_rss_bytes = 12 * kGiB;
  in.killed_kind = "DataLoader worker";
  v = oom_verdict(in);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->message,
            "a process of the job was killed by the kernel OOM killer (by 00:00:05); the killed process "
            "(DataLoader worker, pid 4242) had 12.0 GiB RSS; the job's RSS had grown 271.9 GiB/h");
}

JobCgroupLimits limit_of(std::uint64_t bytes, bool reached, bool oom) {
  JobCgroupLimits l;
  l.version = 2;
  l.path = "/job";
  l.memory_limit_bytes = bytes;
  l.memory_limit_file = "memory.max";
  l.memory_limit_path = "/job";
  l.memory_peak_bytes = bytes - 4096;
  l.memory_limit_reached = reached;
  l.memory_limit_oom = oom;
  return l;
}

TEST(RunnerOom, AKillAtTheCgroupLimitNamesTheLimitNotTheHost) {
  OomInputs in;
  in.exit = killed(SIGKILL);
  in.oom_kills = 1;
  in.end_elapsed_ms = 3000;
  in.memory_total_bytes = 64 * kGiB;
  in.min_available_bytes = 40 * kGiB;  // the host had room
  in.tree_rss_bytes = 60ull << 20;
  in.cgroup = limit_of(64ull << 20, true, true);
  auto v = oom_verdict(in);
  ASSERT_TRUE(v);
  EXPECT_TRUE(v->certain);
  EXPECT_TRUE(v->at_cgroup_limit);
  EXPECT_EQ(
      v->message,
      "killed by the kernel OOM killer at 00:00:03: the job's memory cgroup reached its limit of 64.0 MiB "
      "(memory.max of cgroup /job), not the host's memory; the job's RSS was 0.1 GiB; the cgroup's peak "
      "usage was 64.0 MiB");
  // Peak at the limit without the limit's own OOM count (v1): still the limit, while the host has room ...
  in.cgroup = limit_of(64ull << 20, true, false);
  EXPECT_TRUE(oom_verdict(in)->at_cgroup_limit);
  // ... but not when the host was exhausted too: then the peak (page cache) proves nothing.
  in.min_available_bytes = kGiB / 2;
  v = oom_verdict(in);
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->at_cgroup_limit);
  EXPECT_EQ(v->message.find("limit"), std::string::npos) << v->message;
  // A limit never reached: a host OOM.
  in.min_available_bytes = 40 * kGiB;
  in.cgroup = limit_of(64 * kGiB, false, false);
  v = oom_verdict(in);
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->at_cgroup_limit);
}

TEST(RunnerOom, SigkillAtTheLimitIsInferredOnlyWithoutAKillCount) {
  OomInputs in;
  in.exit = killed(SIGKILL);
  in.end_elapsed_ms = 1000;
  in.memory_total_bytes = 64 * kGiB;
  in.min_available_bytes = 40 * kGiB;
  in.cgroup = limit_of(2 * kGiB, true, false);
  auto v = oom_verdict(in);  // kernel < 4.13: no oom_kill count
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->certain);
  EXPECT_TRUE(v->at_cgroup_limit);
  EXPECT_EQ(
      v->message,
      "probably killed by the kernel OOM killer at 00:00:01 (SIGKILL while its memory cgroup was at its "
      "limit): the job's memory cgroup reached its limit of 2.0 GiB (memory.max of cgroup /job), not the "
      "host's memory; the cgroup's peak usage was 2.0 GiB");
  in.oom_kills = 0;  // counted, and nobody was OOM-killed: a SIGKILL from elsewhere (kill -9)
  EXPECT_FALSE(oom_verdict(in));
}

TEST(RunnerOom, DescribeLimits) {
  JobCgroupLimits l = limit_of(3 * kGiB / 2, false, false);
  l.cpu_limit_cpus = 1.5;
  l.cpu_limit_file = "cpu.max";
  l.cpu_limit_path = "/job";
  EXPECT_EQ(describe_cgroup_limits(l),
            "memory 1.5 GiB (memory.max of /job), CPU 1.50 CPUs (cpu.max of /job)");
  EXPECT_TRUE(l.any());
  EXPECT_EQ(describe_cgroup_limits(JobCgroupLimits{}), "");
  EXPECT_FALSE(JobCgroupLimits{}.any());
}

TEST(RunnerOom, ElapsedFormat) {
  EXPECT_EQ(format_elapsed(0), "00:00:00");
  EXPECT_EQ(format_elapsed(45'296'000), "12:34:56");
  EXPECT_EQ(format_elapsed(-5), "00:00:00");
}

}  // namespace
}  // namespace trainmon::runner

namespace trainmon::runner {
namespace {

// A job that forks all day: what OomWatch remembers is bounded by the processes alive at one time,
// not by every process the job ever ran (it kept ~1 KB per pid for the whole run).
TEST(RunnerOom, WatchForgetsProcessesThatAreGone) {
  const auto root =
      std::filesystem::temp_directory_path() / ("trainmon-oom-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  const auto proc = root / "proc";
  auto make_pid = [&](std::uint32_t pid) {
    std::filesystem::create_directories(proc / std::to_string(pid));
    std::ofstream(proc / std::to_string(pid) / "cgroup") << "0::/user.slice/user-1000.slice/job.scope\n";
  };
  OomWatch watch(proc.string(), (root / "sys").string());
  for (std::uint32_t generation = 0; generation < 50; ++generation) {
    std::vector<std::uint32_t> alive;
    for (std::uint32_t k = 0; k < 20; ++k) {
      const std::uint32_t pid = 1000 + generation * 20 + k;
      make_pid(pid);
      alive.push_back(pid);
    }
    watch.observe_job(alive);
    EXPECT_EQ(watch.pids_remembered(), 20u) << "generation " << generation;
    for (auto pid : alive) std::filesystem::remove_all(proc / std::to_string(pid));
  }
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace trainmon::runner
