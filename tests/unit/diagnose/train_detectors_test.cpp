// SPDX-License-Identifier: Apache-2.0
// D23 hang, D24 straggler, D25 measured data wait, D26 throughput drop: each with a trigger, near
// misses, the kinds told apart in the evidence and the cost; D4 / D18 / D19 / D2 giving way where
// the training loop's own timing exists.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <tuple>

#include <fmt/format.h>

#include "trainmon/core/i18n.h"
#include "trainmon/diagnose/engine.h"
#include "trainmon/diagnose/stacks.h"
#include "unit/diagnose/synth.h"
#include "unit/diagnose/train_synth.h"

namespace trainmon::diagnose {
namespace {
using testing::job_process;
using testing::RankFeed;
using testing::Synth;
using testing::with_code;
const Thresholds kTh;

/// Two ranks (pids 1000 / 1001 on GPU0 / GPU1) that step every 0.2 s until `stop`, then only send
/// heartbeats in `phase` until `until`; both processes live until `alive`.
/// Two processes (pids 1000, 1001) that step each second until `stop`, then only send heartbeats in
/// `phase` until `until`; alive until `alive`.
void feed_two_stalled(Synth& x, RankFeed& a, RankFeed& b, double stop, double until, double alive,
                      TrainPhase phase) {
  for (RankFeed* r : {&a, &b}) {
    r->steps(x.s, 0, stop, 1.0, 0.2, 0.01);
    r->heartbeats(x.s, stop, until, 1.0, phase, stop);
  }
  job_process(x.s, 1000, 0, alive);
  job_process(x.s, 1001, 0, alive);
}

Synth hung_job(double stop, double until, double alive, TrainPhase phase = TrainPhase::compute) {
  Synth x(2, until);
  RankFeed r0(0, 1000, 0), r1(1, 1001, 1);
  feed_two_stalled(x, r0, r1, stop, until, alive, phase);
  return x;
}

TEST(DiagD23Hang, NoStepForTheWindowWhileAliveIsCritical) {
  auto x = hung_job(100, 400, 400);
  const auto f = detect_training_hang(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].code, "D23");
  EXPECT_EQ(f[0].slug, "training-hang");
  EXPECT_EQ(f[0].severity, Severity::critical);
  EXPECT_NEAR(f[0].start_s, 100, 1e-6);  // since the last step
  EXPECT_NEAR(f[0].end_s, 400, 1e-6);
  EXPECT_EQ(f[0].gpus, (std::vector<unsigned>{0, 1}));
  EXPECT_EQ(f[0].pids, (std::vector<std::uint32_t>{1000, 1001}));
  EXPECT_NEAR(f[0].numbers.at("window_s"), 120, 1e-9);  // max(5 x 0.22 s, the 120 s floor)
  EXPECT_NEAR(f[0].numbers.at("p90_step_s"), 0.22, 1e-3);
  EXPECT_NEAR(f[0].numbers.at("stall_s"), 300, 1e-6);
  EXPECT_EQ(f[0].numbers.at("ranks_stalled"), 2);
  EXPECT_NE(f[0].evidence.find("no step completed on rank 0, rank 1"), std::string::npos) << f[0].evidence;
  // Synth's GPUs stay at 90 %: busy without progress, the collective kind
  EXPECT_NE(f[0].evidence.find("every job GPU is busy"), std::string::npos) << f[0].evidence;
  ASSERT_TRUE(f[0].cost.has_value());
  EXPECT_EQ(f[0].cost->share, 1.0);
  EXPECT_EQ(f[0].cost->speedup, 0.0);
}

/// hung_job's ranks without a GPU of their own (no CUDA device told, nothing resolved); `procs`: the GPUs'
/// process lists as Synth makes them (the job's pids 1000 / 1001), or held by another program, or none.
enum class Lists { job, foreign, none };
Synth hung_cpu_job(Lists procs) {
  Synth x(2, 400, 1.0, procs != Lists::none);
  RankFeed r0(0, 1000), r1(1, 1001);
  feed_two_stalled(x, r0, r1, 100, 400, 400, TrainPhase::compute);
  if (procs == Lists::foreign)
    for (auto& g : x.s.gpus)
      for (auto& p : g.procs) {
        p.pid += 4000;
        p.in_job = false;
      }
  return x;
}

TEST(DiagD23Hang, SpeaksOfTheJobsGpusOnlyWhenTheJobIsKnownToUseThem) {
  // Every GPU at 90 % in all three; only in the first does the job hold them (its pids on the lists).
  {
    const auto f = detect_training_hang(hung_cpu_job(Lists::job).s, kTh);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_NE(f[0].evidence.find("every job GPU is busy"), std::string::npos) << f[0].evidence;
    EXPECT_TRUE(f[0].numbers.contains("gpu_mean_util_pct"));
  }
  {  // a CPU-only job (gloo) while another program keeps the GPUs busy
    const auto f = detect_training_hang(hung_cpu_job(Lists::foreign).s, kTh);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].evidence.find("GPU is busy"), std::string::npos) << f[0].evidence;
    EXPECT_EQ(f[0].evidence.find("GPUs are idle"), std::string::npos) << f[0].evidence;
    EXPECT_NE(f[0].evidence.find("the job uses no GPU"), std::string::npos) << f[0].evidence;
    EXPECT_FALSE(f[0].numbers.contains("gpu_mean_util_pct"));
    EXPECT_TRUE(f[0].gpus.empty());
  }
  {  // no process list at all: GPU memory in use is no sign of the job
    const auto f = detect_training_hang(hung_cpu_job(Lists::none).s, kTh);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].evidence.find("GPU is busy"), std::string::npos) << f[0].evidence;
    EXPECT_NE(f[0].evidence.find("which GPU the job uses is unknown"), std::string::npos) << f[0].evidence;
    EXPECT_FALSE(f[0].numbers.contains("gpu_mean_util_pct"));
  }
  {  // a rank that told its CUDA device is not "on the CPU", even when no list shows it
    auto x = hung_cpu_job(Lists::foreign);
    x.s.train.ranks[0].id.cuda_device = 0;
    const auto f = detect_training_hang(x.s, kTh);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].evidence.find("the job uses no GPU"), std::string::npos) << f[0].evidence;
    EXPECT_NE(f[0].evidence.find("which GPU the job uses is unknown"), std::string::npos) << f[0].evidence;
  }
}

TEST(DiagD23Hang, FoundOnlyOnceTheWindowHasPassed) {
  auto x = hung_job(100, 400, 400);
  EXPECT_TRUE(detect_training_hang(slice(x.s, 0, 219), kTh).empty());  // 119 s: inside the window
  EXPECT_EQ(detect_training_hang(slice(x.s, 0, 222), kTh).size(), 1u);
}

TEST(DiagD23Hang, TheWindowFollowsTheRanksOwnStepTime) {
  // 60-s steps: the window is 5 x p90 (66 s) = 330 s, not the 120-s floor
  Synth x(1, 2000);
  RankFeed r0(0, 1000, 0);
  r0.steps(x.s, 0, 1200, 1.0, 60, 1);
  const double last = r0.last_step;
  r0.heartbeats(x.s, 1200, 2000, 1.0, TrainPhase::compute, last);
  job_process(x.s, 1000, 0, 2000);
  EXPECT_TRUE(detect_training_hang(slice(x.s, 0, last + 320), kTh).empty());
  const auto f = detect_training_hang(slice(x.s, 0, last + 340), kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NEAR(f[0].numbers.at("window_s"), 330, 1);
}

TEST(DiagD23Hang, NearMisses) {
  {  // a 100-s pause, then steps again
    Synth x(2, 400);
    RankFeed r0(0, 1000, 0);
    r0.steps(x.s, 0, 100, 1.0, 0.2, 0.01);
    r0.heartbeats(x.s, 100, 200, 1.0, TrainPhase::compute, 100);
    r0.steps(x.s, 200, 400, 1.0, 0.2, 0.01);
    job_process(x.s, 1000, 0, 400);
    EXPECT_TRUE(detect_training_hang(x.s, kTh).empty());
  }
  {  // outside the loop (evaluation, checkpoint): phase idle
    auto x = hung_job(100, 400, 400, TrainPhase::idle);
    EXPECT_TRUE(detect_training_hang(x.s, kTh).empty());
  }
  {  // the processes ended at 100 s: a finished job, not a hang
    Synth x(2, 400);
    RankFeed r0(0, 1000, 0);
    r0.steps(x.s, 0, 100, 1.0, 0.2, 0.01);
    job_process(x.s, 1000, 0, 100);
    EXPECT_TRUE(detect_training_hang(x.s, kTh).empty());
  }
  {  // never stepped (still loading the model): not judged
    Synth x(1, 400);
    RankFeed r0(0, 1000, 0);
    r0.heartbeats(x.s, 0, 400, 1.0, TrainPhase::data, 0);
    job_process(x.s, 1000, 0, 400);
    EXPECT_TRUE(detect_training_hang(x.s, kTh).empty());
  }
}

TEST(DiagD23Hang, TellsTheKindsApart) {
  {  // one rank waits for data, the other in compute; GPUs idle
    Synth x(2, 400);
    RankFeed r0(0, 1000, 0), r1(1, 1001, 1);
    r0.steps(x.s, 0, 100, 1.0, 0.2, 0.01);
    r1.steps(x.s, 0, 100, 1.0, 0.2, 0.01);
    r0.heartbeats(x.s, 100, 400, 1.0, TrainPhase::compute, 100);
    r1.heartbeats(x.s, 100, 400, 1.0, TrainPhase::data, 100);
    job_process(x.s, 1000, 0, 400);
    job_process(x.s, 1001, 0, 400);
    for (auto& g : x.s.gpus) x.set(g.util_gpu_pct, 100, 400, 0);
    const auto f = detect_training_hang(x.s, kTh);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_NE(f[0].evidence.find("rank 1 waits for data while the others wait in compute"), std::string::npos)
        << f[0].evidence;
    EXPECT_NE(f[0].evidence.find("GPUs are idle"), std::string::npos) << f[0].evidence;
    EXPECT_EQ(f[0].evidence.find("every job GPU is busy"), std::string::npos) << f[0].evidence;
  }
  {  // rank 1's process lives but sends nothing any more (the GIL held, or stopped)
    Synth x(2, 400);
    RankFeed r0(0, 1000, 0), r1(1, 1001, 1);
    r0.steps(x.s, 0, 100, 1.0, 0.2, 0.01);
    r1.steps(x.s, 0, 100, 1.0, 0.2, 0.01);
    r0.heartbeats(x.s, 100, 400, 1.0, TrainPhase::compute, 100);
    job_process(x.s, 1000, 0, 400);
    job_process(x.s, 1001, 0, 400);
    const auto f = detect_training_hang(x.s, kTh);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].numbers.at("ranks_stalled"), 2);
    EXPECT_NE(f[0].evidence.find("rank 1 stopped reporting"), std::string::npos) << f[0].evidence;
  }
}

TEST(DiagD23Hang, AHangThatEndsIsDescribedAsItWasWhileItLasted) {
  // Both ranks stop at 100 s and resume together at about 300 s; rank 1's first row after the stall
  // arrives a second before rank 0's. The step that ended rank 1's stall is not its "last step":
  // nobody stopped first, and each rank's phase is the one it stalled in.
  Synth x(2, 400);
  RankFeed r0(0, 1000, 0), r1(1, 1001, 1);
  r0.steps(x.s, 0, 100, 1.0, 0.2, 0.01);
  r1.steps(x.s, 0, 100, 1.0, 0.2, 0.01);
  r1.heartbeats(x.s, 100, 300, 1.0, TrainPhase::compute, 100);
  r0.heartbeats(x.s, 100, 301, 1.0, TrainPhase::data, 100);
  r1.steps(x.s, 300, 400, 1.0, 0.2, 0.01);
  r0.steps(x.s, 301, 400, 1.0, 0.2, 0.01);
  job_process(x.s, 1000, 0, 400);
  job_process(x.s, 1001, 0, 400);
  const auto f = detect_training_hang(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NEAR(f[0].start_s, 100, 1e-6);
  EXPECT_EQ(f[0].numbers.at("ranks_stalled"), 2);
  EXPECT_EQ(f[0].evidence.find("stopped first"), std::string::npos) << f[0].evidence;
  EXPECT_NE(f[0].evidence.find("rank 0 in data since 100 s, rank 1 in compute since 100 s"),
            std::string::npos)
      << f[0].evidence;
  // a rank that really stopped earlier still is the one that stopped first
  Synth y(2, 400);
  RankFeed q0(0, 1000, 0), q1(1, 1001, 1);
  q0.steps(y.s, 0, 100, 1.0, 0.2, 0.01);
  q1.steps(y.s, 0, 110, 1.0, 0.2, 0.01);
  q0.heartbeats(y.s, 100, 400, 1.0, TrainPhase::compute, 100);
  q1.heartbeats(y.s, 110, 400, 1.0, TrainPhase::compute, 110);
  job_process(y.s, 1000, 0, 400);
  job_process(y.s, 1001, 0, 400);
  const auto g = detect_training_hang(y.s, kTh);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_NE(g[0].evidence.find("rank 0 stopped first (10.0 s before the others)"), std::string::npos)
      << g[0].evidence;
}

TEST(DiagD23Hang, StacksSayWhereEachRankIsStuck) {
  auto x = hung_job(100, 400, 400);
  append_train_stack(x.s, {250, 1, 1001, "D23",
                           "Thread 0x00007f0000000001 (most recent call first):\n"
                           "  File \"/usr/lib/python3/dist-packages/trainmon/_timing.py\", line 88 in _beat\n"
                           "  File \"/usr/lib/python3.11/threading.py\", line 975 in run\n"
                           "  File \"/usr/lib/python3.11/threading.py\", line 995 in _bootstrap\n\n"
                           "Current thread 0x00007f0000000002 (most recent call first):\n"
                           "  File \"/home/u/ddp.py\", line 12 in run\n"
                           "  File \"/usr/lib/python3.11/multiprocessing/process.py\", line 108 in run\n"
                           "  File \"<string>\", line 1 in <module>\n"});
  append_train_stack(x.s, {250, 0, 1000, "D23",
                           "Current thread 0x00007f0000000003 (most recent call first):\n"
                           "  File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", "
                           "line 1536 in all_reduce\n"
                           "  File \"/home/u/ddp.py\", line 20 in run\n"
                           "  File \"<string>\", line 1 in <module>\n"});
  append_train_stack(
      x.s, {30, 0, 1000, "", "Current thread 0x1 (most recent call first):\n  File \"a.py\", line 1 in f\n"});
  const auto f = detect_training_hang(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  ASSERT_EQ(f[0].stacks.size(), 2u);  // the one from before the hang is not its stack
  EXPECT_EQ(f[0].stacks[0].rank, 0);
  EXPECT_EQ(f[0].stacks[0].where, "torch/distributed/distributed_c10d.py:1536 in all_reduce");
  EXPECT_EQ(f[0].stacks[0].collective, "all_reduce");
  EXPECT_EQ(f[0].stacks[1].collective, "");
  EXPECT_EQ(f[0].stacks[0].caller, "ddp.py:20 in run");
  EXPECT_EQ(f[0].stacks[1].rank, 1);
  EXPECT_EQ(f[0].stacks[1].pid, 1001u);
  EXPECT_EQ(f[0].stacks[1].where, "ddp.py:12 in run");
  EXPECT_EQ(f[0].stacks[1].caller, "");
  EXPECT_NE(f[0].stacks[1].main_stack.find("ddp.py\", line 12 in run"), std::string::npos);
  EXPECT_NE(f[0].evidence.find("rank 1 is at ddp.py:12 in run"), std::string::npos) << f[0].evidence;
  // the rank that holds the others is named, in the evidence, the numbers and the advice
  EXPECT_NE(f[0].evidence.find("rank 1 is not in a collective while rank 0 waits in one (all_reduce): rank 1 "
                               "holds the job"),
            std::string::npos)
      << f[0].evidence;
  EXPECT_EQ(f[0].numbers.at("holding_rank"), 1);
  EXPECT_TRUE(f[0].advice.starts_with("Look at rank 1 first: it is at ddp.py:12 in run")) << f[0].advice;
  const auto text = to_text(f[0]);
  EXPECT_NE(text.find("\n    rank 0 pid 1000 on node-a: torch/distributed/distributed_c10d.py:1536 in "
                      "all_reduce (called from "
                      "ddp.py:20 in run)"),
            std::string::npos)
      << text;
  // and the JSON round trip keeps them
  const nlohmann::json j = f[0];
  EXPECT_EQ(j.get<Finding>(), f[0]);
  EXPECT_EQ(j["stacks"][1]["where"], "ddp.py:12 in run");
}

/// faulthandler's text of a main thread whose innermost frames are `frames` ("file", line, "func").
std::string main_thread_text(std::initializer_list<std::tuple<const char*, int, const char*>> frames) {
  std::string t = "Current thread 0x00007f0000000009 (most recent call first):\n";
  for (const auto& [file, line, func] : frames)
    t += fmt::format("  File \"{}\", line {} in {}\n", file, line, func);
  return t;
}

TEST(DiagD23Hang, AJobOfOneProcessIsToldOfItsLoopAndLoaderNotOfCollectives) {
  // one process, no torch.distributed (WORLD_SIZE 1), stuck waiting for data
  auto one = [](bool with_stack) {
    Synth x(1, 400);
    RankFeed r0(0, 1000, 0);
    r0.id.world_size = 1;
    r0.steps(x.s, 0, 100, 1.0, 0.2, 0.01);
    r0.heartbeats(x.s, 100, 400, 1.0, TrainPhase::data, 100);
    job_process(x.s, 1000, 0, 400);
    if (with_stack)
      append_train_stack(
          x.s, {250, 0, 1000, "D23",
                main_thread_text({{"/usr/lib/python3.11/selectors.py", 415, "select"},
                                  {"/usr/lib/python3.11/multiprocessing/connection.py", 930, "wait"},
                                  {"/home/u/train.py", 20, "main"}})});
    return detect_training_hang(x.s, kTh);
  };
  for (bool with_stack : {false, true}) {
    const auto f = one(with_stack);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_NE(f[0].evidence.find("it waits for data: its DataLoader gives it no batch"), std::string::npos)
        << f[0].evidence;
    for (const char* word :
         {"collective", "NCCL", "init_process_group", "rank 0 first", "holds the", "holds them"})
      EXPECT_EQ(f[0].advice.find(word), std::string::npos) << word << ": " << f[0].advice;
    EXPECT_NE(f[0].advice.find("DataLoader(timeout=...)"), std::string::npos) << f[0].advice;
    if (with_stack)
      EXPECT_TRUE(
          f[0].advice.starts_with("The loop makes no progress: it waits for its next batch (at train.py:20 "
                                  "in main). Its DataLoader's worker processes feed it"))
          << f[0].advice;
    else
      EXPECT_TRUE(
          f[0].advice.starts_with("The loop makes no progress: it waits for its next batch. Its "
                                  "DataLoader's"))
          << f[0].advice;
    EXPECT_EQ(f[0].advice.find("fix that line"), std::string::npos) << f[0].advice;
    EXPECT_EQ(f[0].evidence.find("stopped first"), std::string::npos) << f[0].evidence;
  }
  {  // one process stalled in compute, no stack: where it is, no DataLoader sentence
    Synth x(1, 400);
    RankFeed r0(0, 1000, 0);
    r0.id.world_size = 1;
    r0.steps(x.s, 0, 100, 1.0, 0.2, 0.01);
    r0.heartbeats(x.s, 100, 400, 1.0, TrainPhase::compute, 100);
    job_process(x.s, 1000, 0, 400);
    const auto f = detect_training_hang(x.s, kTh);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_TRUE(f[0].advice.starts_with("The loop makes no progress. Look at where it is")) << f[0].advice;
    EXPECT_EQ(f[0].advice.find("DataLoader"), std::string::npos) << f[0].advice;
    EXPECT_EQ(f[0].advice.find("collective"), std::string::npos) << f[0].advice;
  }
  // two ranks: rank 1 waits for data (its loader), rank 0 in the all-reduce: the loader is named
  auto x = hung_job(100, 400, 400);
  x.s.train.ranks.clear();
  RankFeed r0(0, 1000, 0), r1(1, 1001, 1);
  r0.steps(x.s, 0, 100, 1.0, 0.2, 0.01);
  r1.steps(x.s, 0, 100, 1.0, 0.2, 0.01);
  r0.heartbeats(x.s, 100, 400, 1.0, TrainPhase::compute, 100);
  r1.heartbeats(x.s, 100, 400, 1.0, TrainPhase::data, 100);
  append_train_stack(x.s, {250, 1, 1001, "D23",
                           main_thread_text({{"/usr/lib/python3.11/selectors.py", 415, "select"},
                                             {"/home/u/ddp.py", 20, "run"}})});
  append_train_stack(
      x.s, {250, 0, 1000, "D23",
            main_thread_text(
                {{"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", 1536, "all_reduce"},
                 {"/home/u/ddp.py", 30, "run"}})});
  const auto f = detect_training_hang(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].numbers.at("holding_rank"), 1);
  EXPECT_TRUE(
      f[0].advice.starts_with("Look at rank 1 first: it waits for its next batch (at ddp.py:20 in run) "
                              "while the others wait for it in a collective. Its DataLoader's worker "
                              "processes feed it"))
      << f[0].advice;
  // said once: the stacks' "rank 1 holds the job", not also "rank 1 waits for data ... holds them all"
  EXPECT_NE(f[0].evidence.find("rank 1 holds the job"), std::string::npos) << f[0].evidence;
  EXPECT_EQ(f[0].evidence.find("holds them all"), std::string::npos) << f[0].evidence;
  EXPECT_NE(f[0].advice.find("`pstree -p 1001`"), std::string::npos) << f[0].advice;
  EXPECT_NE(f[0].advice.find("init_process_group(timeout=...)"), std::string::npos) << f[0].advice;
  EXPECT_EQ(f[0].evidence.find("its DataLoader gives it no batch"), std::string::npos) << f[0].evidence;
}

TEST(DiagD23Hang, ARankThatAnswersNothingWhileTheOthersWaitInACollectiveHoldsTheJob) {
  // rank 1 stopped (SIGSTOP): no heartbeat, no stack; rank 0 waits in the all-reduce
  Synth x(2, 400);
  RankFeed r0(0, 1000, 0), r1(1, 1001, 1);
  r0.steps(x.s, 0, 100, 1.0, 0.2, 0.01);
  r1.steps(x.s, 0, 100, 1.0, 0.2, 0.01);
  r0.heartbeats(x.s, 100, 400, 1.0, TrainPhase::compute, 100);
  job_process(x.s, 1000, 0, 400);
  job_process(x.s, 1001, 0, 400);
  append_train_stack(
      x.s, {250, 0, 1000, "D23",
            main_thread_text(
                {{"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", 1536, "all_reduce"},
                 {"/home/u/ddp.py", 30, "run"}})});
  const auto f = detect_training_hang(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(
      f[0].evidence.find("rank 1 sent no stack and stopped reporting while rank 0 waits in a collective "
                         "(all_reduce): rank 1 holds the job"),
      std::string::npos)
      << f[0].evidence;
  EXPECT_EQ(f[0].numbers.at("holding_rank"), 1);
  EXPECT_TRUE(f[0].advice.starts_with("Look at rank 1 first: it answers nothing (no stack, no heartbeat)"))
      << f[0].advice;
  EXPECT_NE(f[0].advice.find("/proc/1001/status"), std::string::npos) << f[0].advice;
  EXPECT_NE(f[0].advice.find("`kill -CONT 1001`"), std::string::npos) << f[0].advice;
  EXPECT_EQ(f[0].advice.find("fix that line"), std::string::npos) << f[0].advice;
}

TEST(DiagD23Hang, RanksInDifferentCollectivesAreAMismatchAndOneStackOrAllAlikeNameNoOne) {
  auto stack = [](const char* func, int line) {
    return fmt::format(
        "Current thread 0x1 (most recent call first):\n"
        "  File \"/usr/local/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py\", line {} "
        "in {}\n"
        "  File \"/home/u/train.py\", line 20 in main\n",
        line, func);
  };
  {
    // rank 0 in all_reduce (its step), rank 1 in barrier (it ran out of batches): a mismatch
    auto x = hung_job(100, 400, 400);
    append_train_stack(x.s, {250, 0, 1000, "D23", stack("all_reduce", 1536)});
    append_train_stack(x.s, {250, 1, 1001, "D23", stack("barrier", 3328)});
    const auto f = detect_training_hang(x.s, kTh);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_NE(f[0].evidence.find("the ranks wait in different collectives (rank 0 in all_reduce, rank 1 in "
                                 "barrier)"),
              std::string::npos)
        << f[0].evidence;
    EXPECT_TRUE(f[0].advice.starts_with("The ranks must call the same collectives in the same order"))
        << f[0].advice;
    EXPECT_FALSE(f[0].numbers.contains("holding_rank"));
  }
  {
    // both in the same collective, or one in a generic wait: nobody is named
    auto x = hung_job(100, 400, 400);
    append_train_stack(x.s, {250, 0, 1000, "D23", stack("all_reduce", 1536)});
    append_train_stack(x.s, {250, 1, 1001, "D23", stack("wait", 200)});
    const auto f = detect_training_hang(x.s, kTh);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].evidence.find("different collectives"), std::string::npos) << f[0].evidence;
    EXPECT_EQ(f[0].evidence.find("holds the job"), std::string::npos) << f[0].evidence;
    EXPECT_TRUE(f[0].advice.starts_with("The job makes no progress")) << f[0].advice;
  }
  {
    // a single stack: nothing to compare with
    auto x = hung_job(100, 400, 400);
    append_train_stack(
        x.s, {250, 1, 1001, "D23",
              "Current thread 0x1 (most recent call first):\n  File \"/home/u/train.py\", line 9 in f\n"});
    const auto f = detect_training_hang(x.s, kTh);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].evidence.find("holds the job"), std::string::npos) << f[0].evidence;
  }
}

TEST(DiagStacks, InstalledFilesArePathsInsideTheirPackageAndCollectivesAreRecognised) {
  auto frame = [](std::string file, int line, std::string func) {
    return StackFrame{std::move(file), line, std::move(func)};
  };
  EXPECT_EQ(frame_text(frame("/usr/lib/python3/dist-packages/torch/autograd/__init__.py", 197, "backward")),
            "torch/autograd/__init__.py:197 in backward");
  EXPECT_EQ(
      frame_text(frame("/opt/venv/lib/python3.11/site-packages/deepspeed/comm/comm.py", 5, "all_reduce")),
      "deepspeed/comm/comm.py:5 in all_reduce");
  EXPECT_EQ(frame_text(frame("/usr/lib/python3.11/multiprocessing/connection.py", 930, "wait")),
            "multiprocessing/connection.py:930 in wait");
  EXPECT_EQ(frame_text(frame("/home/u/proj/train.py", 3, "main")), "train.py:3 in main");
  ThreadStack t;
  t.frames = {frame("/usr/lib/python3.11/threading.py", 320, "wait"),
              frame("/usr/lib/python3/dist-packages/torch/autograd/__init__.py", 197, "backward"),
              frame("/home/u/train.py", 30, "main")};
  EXPECT_EQ(collective_of(t), "backward");  // DDP's all-reduce runs inside backward
  t.frames = {frame("/usr/lib/python3.11/time.py", 1, "sleep"), frame("/home/u/train.py", 30, "main")};
  EXPECT_EQ(collective_of(t), "");
  t.frames = {frame("/home/u/my_distributed/wait.py", 1, "all_reduce")};  // a user's file named alike
  EXPECT_EQ(collective_of(t), "");
}

// ---- D24 -----------------------------------------------------------------------------------------

/// Two ranks stepping for `seconds`: rank 0 at 0.1 s a step, rank 1 at `slow_s` (data wait `data1_s`).
Synth two_ranks(double seconds, double slow_s, double data0_s = 0.005, double data1_s = 0.005) {
  Synth x(2, seconds);
  RankFeed r0(0, 1000, 0), r1(1, 1001, 1);
  r0.steps(x.s, 0, seconds, 1.0, 0.1, data0_s);
  r1.steps(x.s, 0, seconds, 1.0, slow_s, data1_s);
  job_process(x.s, 1000, 0, seconds);
  job_process(x.s, 1001, 0, seconds);
  return x;
}

TEST(DiagD24Straggler, ASlowerRankIsNamedWithItsScore) {
  auto x = two_ranks(600, 0.14);
  const auto f = detect_straggler(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].code, "D24");
  EXPECT_EQ(f[0].severity, Severity::warning);
  EXPECT_EQ(f[0].gpus, std::vector<unsigned>{1});
  EXPECT_EQ(f[0].pids, std::vector<std::uint32_t>{1001});
  EXPECT_EQ(f[0].numbers.at("rank"), 1);
  EXPECT_NEAR(f[0].numbers.at("score"), 0.1 / 0.14, 0.01);
  EXPECT_NE(f[0].evidence.find("rank 1 (pid 1001 on node-a, GPU1) has a relative performance score of 0.71"),
            std::string::npos)
      << f[0].evidence;
  EXPECT_NE(f[0].evidence.find("1.4x slower than the others, and every step waits for it"), std::string::npos)
      << f[0].evidence;
  ASSERT_TRUE(f[0].cost);
  EXPECT_NEAR(f[0].cost->speedup, 1.4, 0.02);
  EXPECT_EQ(f[0].cost->basis, "measured");
}

TEST(DiagD24Straggler, NearMisses) {
  EXPECT_TRUE(detect_straggler(two_ranks(600, 0.1).s, kTh).empty());   // even
  EXPECT_TRUE(detect_straggler(two_ranks(600, 0.12).s, kTh).empty());  // score 0.83 >= 0.75
  Synth brief(2, 600);                                                 // slower for 60 s only
  RankFeed r0(0, 1000, 0), r1(1, 1001, 1);
  r0.steps(brief.s, 0, 600, 1.0, 0.1, 0.005);
  r1.steps(brief.s, 0, 300, 1.0, 0.1, 0.005);
  r1.steps(brief.s, 300, 360, 1.0, 0.2, 0.005);
  r1.steps(brief.s, 360, 600, 1.0, 0.1, 0.005);
  EXPECT_TRUE(detect_straggler(brief.s, kTh).empty());
  Synth one(1, 600);  // one rank: no one to compare with
  RankFeed only(0, 1000, 0);
  only.steps(one.s, 0, 600, 1.0, 0.3, 0.005);
  EXPECT_TRUE(detect_straggler(one.s, kTh).empty());
}

TEST(DiagD24Straggler, NamesTheLikelyCause) {
  {  // its GPU throttled
    auto x = two_ranks(600, 0.14);
    x.set(x.gpu(1).sm_clock_mhz, 0, 600, 1000);
    for (auto& r : x.gpu(1).clock_reasons) r = clock_event::sw_thermal_slowdown;
    const auto f = detect_straggler(x.s, kTh);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_NE(f[0].evidence.find("its GPU1 is throttled (thermal slowdown) at 1000 of 1410 MHz"),
              std::string::npos)
        << f[0].evidence;
    EXPECT_NE(f[0].advice.find("Cool or power that GPU"), std::string::npos);
  }
  {  // another process on its GPU
    auto x = two_ranks(600, 0.14);
    for (std::uint32_t i = 0; i < x.rows(); ++i)
      x.gpu(1).procs.push_back({i, 7777, 9000.f, 40.f, HostVisibility::visible, false});
    std::stable_sort(x.gpu(1).procs.begin(), x.gpu(1).procs.end(),
                     [](const GpuProcTick& a, const GpuProcTick& b) { return a.tick < b.tick; });
    const auto f = detect_straggler(x.s, kTh);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_NE(f[0].evidence.find("another process shares its GPU1 (pid 7777)"), std::string::npos)
        << f[0].evidence;
  }
  {  // its process CPU-bound
    auto x = two_ranks(600, 0.14);
    auto& p = const_cast<JobProcess&>(*x.s.job.proc(1001));
    for (std::uint32_t i = 0; i < x.rows(); ++i) {
      p.ticks.push_back(i);
      p.cpu_pct.push_back(99.f);
    }
    const auto f = detect_straggler(x.s, kTh);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_NE(f[0].evidence.find("its process is CPU-bound (99 % of one core)"), std::string::npos)
        << f[0].evidence;
  }
}

TEST(DiagD24Straggler, InASynchronousJobTheRankThatWaitsForDataHoldsTheOthers) {
  // every step lasts 0.2 s on both ranks (they meet in the all-reduce), but rank 1 waits 80 ms for
  // data where rank 0 waits 5 ms: rank 0 spends that time in the collective, waiting for rank 1
  auto x = two_ranks(600, 0.2, 0.005, 0.08);
  for (auto& r : x.s.train.ranks) {
    if (r.id.rank != 0) continue;
    for (auto& w : r.rows) {  // rank 0 also takes 0.2 s a step
      if (!w.steps) continue;
      w.step = {static_cast<float>(w.steps * 0.2), 0.19f, 0.24f, 0.2f, 0.22f, 0.23f};
    }
  }
  const auto f = detect_straggler(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].numbers.at("rank"), 1);
  EXPECT_NEAR(f[0].numbers.at("score"), 1 - 0.075 / 0.2, 0.01);
  EXPECT_NE(f[0].evidence.find("waits 75 ms longer for data than the others"), std::string::npos)
      << f[0].evidence;
  EXPECT_NE(f[0].evidence.find("its data wait is higher than the other ranks'"), std::string::npos);
  EXPECT_TRUE(detect_data_wait(x.s, kTh).empty())
      << "one problem, one finding: the typical rank does not wait";
}

// ---- D25 -----------------------------------------------------------------------------------------

TEST(DiagD25DataWait, MeasuredShareIsTheEvidenceAndTheCost) {
  Synth x(1, 900);
  RankFeed r0(0, 1000, 0);
  r0.steps(x.s, 0, 900, 1.0, 0.1, 0.041);
  job_process(x.s, 1000, 0, 900);
  auto& p = const_cast<JobProcess&>(*x.s.job.proc(1000));
  for (std::uint32_t i = 0; i < x.rows(); ++i) {
    p.ticks.push_back(i);
    p.cpu_pct.push_back(98.f);
  }
  const auto f = detect_data_wait(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].code, "D25");
  EXPECT_NEAR(f[0].numbers.at("data_share_pct"), 41, 0.5);
  EXPECT_NE(f[0].evidence.find("41 % of each step waits for data"), std::string::npos) << f[0].evidence;
  EXPECT_NE(f[0].evidence.find("8 worker processes, main process at 98 % CPU"), std::string::npos)
      << f[0].evidence;
  ASSERT_TRUE(f[0].cost);
  EXPECT_NEAR(f[0].cost->share, 0.41, 0.005);
  EXPECT_NEAR(f[0].cost->speedup, 1.0 / 0.59, 0.01);
  EXPECT_NE(cost_text(f[0]).find("costs 41 % of throughput; up to 1.7x samples/s if fixed"),
            std::string::npos)
      << cost_text(f[0]);
  EXPECT_NE(f[0].advice.find("num_workers"), std::string::npos);
}

TEST(DiagD25DataWait, TheRanksThemselvesAreNoLoaderWorkers) {
  // torch.multiprocessing: the root (1000) spawned two ranks (1001, 1002) and a resource tracker,
  // with num_workers=0; the tree holds 3 processes besides the root, 1 of them no rank.
  Synth x(1, 900);
  for (std::uint32_t i = 0; i < x.rows(); ++i) x.s.job.workers[i] = 3.f;
  for (int k = 0; k < 2; ++k) {
    RankFeed r(k, 1001 + static_cast<std::uint32_t>(k), 0);
    r.steps(x.s, 0, 900, 1.0, 0.1, 0.041);
    job_process(x.s, 1001 + static_cast<std::uint32_t>(k), 0, 900);
  }
  const auto f = detect_data_wait(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].evidence.find("; 1 worker process"), std::string::npos) << f[0].evidence;
  EXPECT_EQ(f[0].numbers.at("workers"), 1);
}

TEST(DiagD25DataWait, NearMisses) {
  Synth low(1, 900);
  RankFeed a(0, 1000, 0);
  a.steps(low.s, 0, 900, 1.0, 0.1, 0.015);  // 15 % < 20 %
  EXPECT_TRUE(detect_data_wait(low.s, kTh).empty());
  Synth brief(1, 900);
  RankFeed b(0, 1000, 0);
  b.steps(brief.s, 0, 300, 1.0, 0.1, 0.005);
  b.steps(brief.s, 300, 360, 1.0, 0.1, 0.05);  // 60 s only
  b.steps(brief.s, 360, 900, 1.0, 0.1, 0.005);
  EXPECT_TRUE(detect_data_wait(brief.s, kTh).empty());
}

TEST(DiagD25DataWait, TheGpuSideInferenceStandsBackWhereTheLoopIsTimed) {
  // the GPU waits (25 %) and the job's CPU idles: D4 without the loop's timing ...
  Synth x(1, 900);
  x.set(x.gpu(0).util_gpu_pct, 200, 700, 25, 5);
  ASSERT_EQ(detect_dataloader(x.s, kTh).size(), 1u);
  // ... and only D25 with it, carrying D4's GPU figure
  RankFeed r0(0, 1000, 0);
  r0.steps(x.s, 0, 900, 1.0, 0.1, 0.06);
  EXPECT_TRUE(detect_dataloader(x.s, kTh).empty());
  const auto f = DiagnosisEngine{}.run_all(x.s, kTh);
  EXPECT_TRUE(with_code(f, "D4").empty());
  ASSERT_EQ(with_code(f, "D25").size(), 1u);
  EXPECT_TRUE(with_code(f, "D25")[0].numbers.contains("gpu_mean_util_pct"));
}

// ---- D26 -----------------------------------------------------------------------------------------

TEST(DiagD26ThroughputDrop, BelowTheSteadyLevelWithItsCost) {
  Synth x(1, 2400);
  RankFeed r0(0, 1000, 0);
  r0.steps(x.s, 0, 1200, 1.0, 0.1, 0.005);     // 320 samples/s
  r0.steps(x.s, 1200, 1500, 1.0, 0.2, 0.005);  // half
  r0.steps(x.s, 1500, 2400, 1.0, 0.1, 0.005);
  const auto f = detect_throughput_drop(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].code, "D26");
  EXPECT_NEAR(f[0].numbers.at("steady_rate"), 320, 5);
  EXPECT_NEAR(f[0].numbers.at("level_pct"), 50, 3);
  EXPECT_GT(f[0].start_s, 1100);
  EXPECT_LT(f[0].end_s, 1600);
  ASSERT_TRUE(f[0].cost);
  EXPECT_NEAR(f[0].cost->share, 0.5, 0.03);
  EXPECT_NE(f[0].evidence.find("samples/s fell to"), std::string::npos) << f[0].evidence;
}

TEST(DiagD26ThroughputDrop, EvaluationAndWarmUpAreNotDrops) {
  Synth x(1, 2400);
  RankFeed r0(0, 1000, 0);
  r0.steps(x.s, 0, 60, 1.0, 0.4, 0.005);  // warm-up: slow first minute
  r0.steps(x.s, 60, 1200, 1.0, 0.1, 0.005);
  r0.heartbeats(x.s, 1200, 1500, 1.0, TrainPhase::idle, 1200);  // evaluation at the epoch's end
  r0.steps(x.s, 1500, 2400, 1.0, 0.1, 0.005);
  EXPECT_TRUE(detect_throughput_drop(x.s, kTh).empty());
}

TEST(DiagD26ThroughputDrop, NamesTheFindingsThatOverlapIt) {
  Synth x(1, 2400);
  RankFeed r0(0, 1000, 0);
  r0.steps(x.s, 0, 1200, 1.0, 0.1, 0.005);
  r0.steps(x.s, 1200, 1500, 1.0, 0.2, 0.005);
  r0.steps(x.s, 1500, 2400, 1.0, 0.1, 0.005);
  x.apply(x.gpu(0).sm_clock_mhz, 1200, 1500, [](double, float) { return 900.f; });
  for (std::size_t i = 0; i < x.rows(); ++i)
    if (x.s.t[i] >= 1200 && x.s.t[i] <= 1500) x.gpu(0).clock_reasons[i] = clock_event::hw_thermal_slowdown;
  const auto f = DiagnosisEngine{}.run_all(x.s, kTh);
  const auto drops = with_code(f, "D26");
  ASSERT_EQ(drops.size(), 1u);
  EXPECT_EQ(drops[0].related, std::vector<std::string>{"D12"});
  EXPECT_NE(drops[0].evidence.find("overlapping: D12 clock-throttle"), std::string::npos)
      << drops[0].evidence;
  EXPECT_NE(drops[0].evidence.find("GPU0 slowed down"), std::string::npos) << drops[0].evidence;
}

TEST(DiagD26ThroughputDrop, ACpuJobIsNotToldAboutAGpuItDoesNotUse) {
  // The drop of NamesTheFindingsThatOverlapIt, but the rank runs on the CPU: GPU0 belongs to another
  // program (pid 5000 on its list), which slows down meanwhile. Neither D26 nor D25 speak of it.
  Synth x(1, 2400);
  for (auto& p : x.gpu(0).procs) {
    p.pid = 5000;
    p.in_job = false;
  }
  RankFeed r0(0, 1000);
  r0.steps(x.s, 0, 1200, 1.0, 0.1, 0.005);
  r0.steps(x.s, 1200, 1500, 1.0, 0.2, 0.1);
  r0.steps(x.s, 1500, 2400, 1.0, 0.1, 0.005);
  job_process(x.s, 1000, 0, 2400);
  for (std::size_t i = 0; i < x.rows(); ++i)
    if (x.s.t[i] >= 1200 && x.s.t[i] <= 1500) x.gpu(0).clock_reasons[i] = clock_event::hw_thermal_slowdown;
  const auto drops = detect_throughput_drop(x.s, kTh);
  ASSERT_EQ(drops.size(), 1u);
  EXPECT_TRUE(drops[0].gpus.empty());
  EXPECT_EQ(drops[0].evidence.find("GPU0"), std::string::npos) << drops[0].evidence;
  EXPECT_EQ(drops[0].evidence.find("process 5000"), std::string::npos) << drops[0].evidence;
  EXPECT_NE(drops[0].evidence.find("the data wait rose"), std::string::npos) << drops[0].evidence;
  const auto waits = detect_data_wait(x.s, kTh);
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_TRUE(waits[0].gpus.empty());
  EXPECT_EQ(waits[0].evidence.find("GPU utilisation"), std::string::npos) << waits[0].evidence;
  // the throttled foreign GPU's D12 overlaps the drop in time but does not explain it
  const auto all = DiagnosisEngine{}.run_all(x.s, kTh);
  ASSERT_FALSE(with_code(all, "D12").empty());
  ASSERT_EQ(with_code(all, "D26").size(), 1u);
  EXPECT_EQ(with_code(all, "D26")[0].related, std::vector<std::string>{"D25"});
  // the same rank known to run on GPU0 (its CUDA device resolved): now GPU0 is its
  x.s.train.ranks[0].id.gpu = 0;
  const auto on_gpu = detect_throughput_drop(x.s, kTh);
  ASSERT_EQ(on_gpu.size(), 1u);
  EXPECT_NE(on_gpu[0].evidence.find("GPU0 slowed down"), std::string::npos) << on_gpu[0].evidence;
  EXPECT_NE(on_gpu[0].evidence.find("process 5000 (not the job's) runs on GPU0"), std::string::npos)
      << on_gpu[0].evidence;
  const auto all_on_gpu = DiagnosisEngine{}.run_all(x.s, kTh);
  const auto drops_on_gpu = with_code(all_on_gpu, "D26");
  ASSERT_EQ(drops_on_gpu.size(), 1u);
  const auto& rel = drops_on_gpu[0].related;
  EXPECT_NE(std::find(rel.begin(), rel.end(), "D12"), rel.end()) << ::testing::PrintToString(rel);
}

// ---- the live path --------------------------------------------------------------------------------

TEST(DiagLiveTrain, AHangOpensLiveAndItsStacksJoinIt) {
  auto x = hung_job(100, 400, 400);
  LiveDiagnosis live(kTh, {.every_s = 5, .window_s = 3600, .close_after_s = 60});
  live.mutable_series() = slice(x.s, 0, 200);
  live.evaluate();
  EXPECT_TRUE(live.active().empty());
  live.mutable_series() = slice(x.s, 0, 230);
  EXPECT_TRUE(live.evaluate());
  ASSERT_EQ(live.active().size(), 1u);
  EXPECT_EQ(live.active()[0].code, "D23");
  EXPECT_TRUE(live.active()[0].stacks.empty());
  live.on_train_stack(
      {230, 0, 1000, "D23",
       "Current thread 0x1 (most recent call first):\n  File \"/x/ddp.py\", line 20 in run\n"});
  live.evaluate();
  ASSERT_EQ(live.active()[0].stacks.size(), 1u);
  EXPECT_EQ(live.active()[0].stacks[0].where, "ddp.py:20 in run");
  // the final answer is the offline one, stacks included
  const auto fin = live.finish({});
  EXPECT_EQ(fin, DiagnosisEngine{}.run_all(live.series(), kTh));
}

// In Chinese the evidence names ranks and processes in Chinese and joins its lists and clauses with
// full-width punctuation (a tester found "process" and ", " between Chinese clauses).
TEST(DiagD23Hang, InChineseNoEnglishWordOrAsciiSeparatorBetweenChineseClauses) {
  const std::string mo =
      (std::filesystem::temp_directory_path() / ("trainmon-d23-" + std::to_string(::getpid()) + ".mo"))
          .string();
  const std::string cmd = "msgfmt -o '" + mo + "' '" TRAINMON_SOURCE_DIR "/po/zh_CN.po' 2>/dev/null";
  if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "msgfmt is not installed";
  ASSERT_TRUE(i18n::load_catalogue(mo, "zh_CN"));
  std::filesystem::remove(mo);
  // two ranks waiting for data, and a job of two processes without RANK (no rank number)
  auto ranked = hung_job(100, 400, 400, TrainPhase::data);
  Synth plain(2, 400);
  RankFeed p0(-1, 1000, 0), p1(-1, 1001, 1);
  p0.id.world_size = p1.id.world_size = -1;
  feed_two_stalled(plain, p0, p1, 100, 400, 400, TrainPhase::data);
  const auto a = detect_training_hang(ranked.s, kTh), b = detect_training_hang(plain.s, kTh);
  i18n::load_catalogue({}, {});
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  const std::string& za = a[0].evidence_local;
  const std::string& zb = b[0].evidence_local;
  EXPECT_NE(za.find("rank 0 处于等数据（自 100 s 起）、rank 1 处于等数据"), std::string::npos) << za;
  EXPECT_NE(zb.find("进程 1000、进程 1001"), std::string::npos) << zb;
  EXPECT_NE(b[0].evidence.find("process 1000, process 1001"), std::string::npos) << b[0].evidence;
  for (const auto& z : {za, zb}) {
    EXPECT_EQ(z.find("process"), std::string::npos) << z;
    EXPECT_EQ(z.find(" in "), std::string::npos) << z;
    // no ASCII ", " or "; " after a Chinese character or full-width punctuation (UTF-8 lead E2..EF)
    for (std::size_t i = 0; i + 1 < z.size(); ++i)
      if ((z[i] == ',' || z[i] == ';') && i >= 3 && static_cast<unsigned char>(z[i - 3]) >= 0xE2)
        ADD_FAILURE() << "ASCII '" << z[i] << "' after a CJK character at " << i << ": " << z;
  }
}

}  // namespace
}  // namespace trainmon::diagnose
