// SPDX-License-Identifier: Apache-2.0
#include "trainmon/runner/oom.h"

#include <gtest/gtest.h>
#include <signal.h>

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
}

TEST(RunnerOom, ElapsedFormat) {
  EXPECT_EQ(format_elapsed(0), "00:00:00");
  EXPECT_EQ(format_elapsed(45'296'000), "12:34:56");
  EXPECT_EQ(format_elapsed(-5), "00:00:00");
}

}  // namespace
}  // namespace trainmon::runner
