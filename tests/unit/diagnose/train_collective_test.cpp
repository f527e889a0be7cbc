// SPDX-License-Identifier: Apache-2.0
// Issue 30 on built TrainSeries (protocol v3: collective wait per step, the collective a rank is in):
// D24 on compute (even, noisy even, 1.2x, 1.3x, 2x), D27 communication-bound, D23's warning for a
// stall inside a collective (and what is no hang: a checkpoint on rank 0, an evaluation pass, a slow
// first step), D28 pauses.
#include <gtest/gtest.h>

#include <utility>

#include "trainmon/diagnose/engine.h"
#include "unit/diagnose/synth.h"
#include "unit/diagnose/train_synth.h"

namespace trainmon::diagnose {
namespace {
using testing::job_process;
using testing::RankFeed;
using testing::Synth;
using testing::with_code;
const Thresholds kTh;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// A synchronous two-rank job: rank 0 computes `c0` s a step, rank 1 `c1`; both wait 5 ms for data and
/// the collective itself takes 20 ms; the faster rank waits the difference in the collective too.
/// Even (c0 == c1) until `skew_at`, then rank 1 computes `c1`.
Synth sync_pair(double c0, double c1, double seconds = 600, double skew_at = 0, double noise = 0) {
  Synth x(2, seconds);
  RankFeed r0(0, 1000, 0), r1(1, 1001, 1);
  r1.rng = 987654321u;
  const double d = 0.005, link = 0.02;
  auto feed = [&](double t0, double t1, double a, double b) {
    const double step = std::max(a, b) + d + link;
    r0.steps_v3(x.s, t0, t1, 1.0, step, d, step - d - a, noise);
    r1.steps_v3(x.s, t0, t1, 1.0, step, d, step - d - b, noise);
  };
  if (skew_at > 0) feed(0, skew_at, c0, c0);
  feed(skew_at, seconds, c0, c1);
  job_process(x.s, 1000, 0, seconds);
  job_process(x.s, 1001, 0, seconds);
  return x;
}

// ---- D24 on compute ------------------------------------------------------------------------------

TEST(DiagD24Compute, ARankWhoseComputeIs13xIsFoundWithinTwoMinutes) {
  auto x = sync_pair(0.1, 0.13, 600, 300);
  EXPECT_TRUE(detect_straggler(slice(x.s, 0, 300), kTh).empty());
  const auto early = detect_straggler(slice(x.s, 0, 420), kTh);  // two minutes after the skew began
  ASSERT_EQ(early.size(), 1u);
  const auto f = detect_straggler(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].numbers.at("rank"), 1);
  EXPECT_NEAR(f[0].numbers.at("score"), 0.1 / 0.13, 0.01);
  EXPECT_NEAR(f[0].numbers.at("compute_median_s"), 0.13, 1e-3);
  EXPECT_NEAR(f[0].numbers.at("fastest_compute_median_s"), 0.1, 1e-3);
  EXPECT_EQ(f[0].gpus, std::vector<unsigned>{1});
  EXPECT_TRUE(has(f[0].evidence,
                  "rank 1 (pid 1001 on node-a, GPU1) has a relative performance score of 0.77 (< 0.80)"))
      << f[0].evidence;
  EXPECT_TRUE(
      has(f[0].evidence, "its compute takes 130 ms a step, the fastest rank's 100 ms: it is 1.3x slower"))
      << f[0].evidence;
  EXPECT_TRUE(has(f[0].evidence, "wait 30 ms of each 155-ms step for it in the collectives"))
      << f[0].evidence;
  ASSERT_TRUE(f[0].cost);
  EXPECT_NEAR(f[0].cost->share, 0.03 / 0.155, 0.01);  // every step shortens by the difference
  EXPECT_EQ(f[0].cost->basis, "measured");
  EXPECT_EQ(f[0].thresholds.at("straggler_compute_frac"), 0.8);
}

TEST(DiagD24Compute, TwiceAsSlowAndItsCause) {
  auto x = sync_pair(0.1, 0.2);
  x.set(x.gpu(1).sm_clock_mhz, 0, 600, 900);
  const auto f = detect_straggler(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].numbers.at("rank"), 1);
  EXPECT_NEAR(f[0].numbers.at("score"), 0.5, 0.01);
  EXPECT_TRUE(has(f[0].evidence, "it is 2.0x slower")) << f[0].evidence;
  EXPECT_TRUE(has(f[0].evidence, "likely cause: its GPU1 is clocked below its maximum at 900 of 1410 MHz"))
      << f[0].evidence;
  ASSERT_TRUE(f[0].cost);
  EXPECT_NEAR(f[0].cost->speedup, 0.225 / 0.125, 0.02);
}

TEST(DiagD24Compute, EvenNoisyEvenAndNearMissesAreNoStragglers) {
  EXPECT_TRUE(detect_straggler(sync_pair(0.1, 0.1).s, kTh).empty());
  EXPECT_TRUE(detect_straggler(sync_pair(0.1, 0.1, 900, 0, 0.3).s, kTh).empty());  // +-30 % per row
  EXPECT_TRUE(detect_straggler(sync_pair(0.1, 0.12).s, kTh).empty());              // 1.2x: score 0.83
  // the noisy job's ranks still tell a 1.3x rank apart
  EXPECT_FALSE(detect_straggler(sync_pair(0.1, 0.13, 900, 0, 0.15).s, kTh).empty());
}

// ---- D27 communication-bound ---------------------------------------------------------------------

Synth comm_job(double comm0, double comm1, double seconds = 600) {
  Synth x(2, seconds);
  RankFeed r0(0, 1000, 0), r1(1, 1001, 1);
  r0.steps_v3(x.s, 0, seconds, 1.0, 0.2, 0.005, comm0);
  r1.steps_v3(x.s, 0, seconds, 1.0, 0.2, 0.005, comm1);
  job_process(x.s, 1000, 0, seconds);
  job_process(x.s, 1001, 0, seconds);
  return x;
}

TEST(DiagD27CommBound, EveryRankWaitingInCollectivesIsTheFindingWithShareCostAndLink) {
  auto x = comm_job(0.1, 0.11);
  for (auto& g : x.s.gpus) {  // GPU1's link trained down (D16's evidence)
    x.set(g.pcie_gen_max, 0, 600, 4);
    x.set(g.pcie_width_max, 0, 600, 16);
    x.set(g.pcie_gen, 0, 600, g.index == 1 ? 3 : 4);
    x.set(g.pcie_width, 0, 600, 16);
  }
  const auto f = detect_comm_bound(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].code, "D27");
  EXPECT_EQ(f[0].slug, "comm-bound");
  EXPECT_NEAR(f[0].numbers.at("comm_share_pct"), 50, 0.5);
  EXPECT_NEAR(f[0].numbers.at("rank1_comm_share_pct"), 55, 0.5);
  EXPECT_TRUE(has(f[0].evidence, "every rank waits in collectives for at least 50 % of each step"))
      << f[0].evidence;
  EXPECT_TRUE(has(f[0].evidence, "rank 0 50 %, rank 1 55 %")) << f[0].evidence;
  EXPECT_TRUE(has(f[0].evidence, "GPU1 at Gen3 x16 of Gen4 x16")) << f[0].evidence;
  EXPECT_TRUE(has(f[0].evidence, "see D16")) << f[0].evidence;
  EXPECT_TRUE(has(f[0].advice, "bucket_cap_mb") && has(f[0].advice, "no_sync") && has(f[0].advice, "NCCL"));
  ASSERT_TRUE(f[0].cost);
  EXPECT_NEAR(f[0].cost->share, 0.5, 0.01);
  EXPECT_EQ(f[0].cost->basis, "estimated");
}

TEST(DiagD27CommBound, NotCommBound) {
  EXPECT_TRUE(detect_comm_bound(comm_job(0.02, 0.02).s, kTh).empty());  // 10 %
  // a straggler makes the others wait, not itself: D24's, not D27's
  EXPECT_TRUE(detect_comm_bound(comm_job(0.1, 0.01).s, kTh).empty());
  // no collective timing (protocol < 3)
  Synth old(2, 600);
  RankFeed a(0, 1000, 0), b(1, 1001, 1);
  a.steps(old.s, 0, 600, 1.0, 0.2, 0.005);
  b.steps(old.s, 0, 600, 1.0, 0.2, 0.005);
  EXPECT_TRUE(detect_comm_bound(old.s, kTh).empty());
}

// ---- D23: a stall inside a collective --------------------------------------------------------------

/// Four ranks step every 0.5 s until 100 s; then ranks 0, 2, 3 wait in all_reduce #5120 while rank 1
/// stays in compute; alive until `until`.
Synth stalled_in_collective(double until, double bytes = 4.0 * 1048576) {
  Synth x(4, until);
  const CollectiveAt ar{"all_reduce", 5120, "0", bytes};
  for (int k = 0; k < 4; ++k) {
    RankFeed r(k, 1000 + static_cast<std::uint32_t>(k), k);
    r.id.world_size = 4;
    r.steps_v3(x.s, 0, 100, 1.0, 0.5, 0.01, 0.05);
    if (k == 1)
      r.heartbeats(x.s, 100, until, 1.0, TrainPhase::compute, 100);
    else
      r.heartbeats(x.s, 100, until, 1.0, TrainPhase::collective, 100.2, ar);
    job_process(x.s, 1000 + static_cast<std::uint32_t>(k), 0, until);
  }
  return x;
}

TEST(DiagD23CollectiveStall, ThePayloadIsInABinaryUnit) {
  // A 4-byte all_reduce read "(0.0 MiB)"; 8 GiB read "(8192.0 MiB)".
  for (auto [bytes, text] : {std::pair{4.0, "(group 0, 4 B)"},
                             {1536.0, "(group 0, 1.5 KiB)"},
                             {8.0 * 1073741824, "(group 0, 8.0 GiB)"},
                             {3.0 * 1099511627776, "(group 0, 3.0 TiB)"}}) {
    auto x = stalled_in_collective(400, bytes);
    const auto w = detect_training_hang(slice(x.s, 0, 140), kTh);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_TRUE(has(w[0].evidence, text)) << w[0].evidence;
  }
}

TEST(DiagD23CollectiveStall, AWarningNamingTheRankThatHoldsTheOthersWithinAMinute) {
  auto x = stalled_in_collective(400);
  EXPECT_TRUE(detect_training_hang(slice(x.s, 0, 125), kTh).empty());  // inside the 30-s window
  const auto w = detect_training_hang(slice(x.s, 0, 140), kTh);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].severity, Severity::warning);
  EXPECT_EQ(w[0].code, "D23");
  EXPECT_EQ(w[0].numbers.at("holding_rank"), 1);
  EXPECT_NEAR(w[0].numbers.at("window_s"), 30, 1e-9);
  EXPECT_TRUE(has(w[0].evidence, "ranks 0, 2, 3 wait in all_reduce #5120 (group 0, 4.0 MiB) since 100 s"))
      << w[0].evidence;
  EXPECT_TRUE(has(w[0].evidence, "; rank 1 never entered it (rank 1 in compute since 100 s)"))
      << w[0].evidence;
  EXPECT_TRUE(has(w[0].advice, "Look at rank 1 (pid 1001 on node-a, GPU1) first")) << w[0].advice;
  EXPECT_EQ(w[0].pids, (std::vector<std::uint32_t>{1000, 1001, 1002, 1003}));
  // at today's floor it is critical, one finding, the sentence in it
  const auto c = detect_training_hang(x.s, kTh);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].severity, Severity::critical);
  EXPECT_EQ(c[0].numbers.at("holding_rank"), 1);
  EXPECT_TRUE(has(c[0].evidence, "rank 1 never entered it")) << c[0].evidence;
  EXPECT_EQ(c[0].pids, w[0].pids);  // live, the warning becomes the critical one
}

TEST(DiagD23CollectiveStall, TheWarningCarriesTheStacksAskedForAndTheHoldersLine) {
  // trainmon asks the ranks for their stacks when the warning opens (cmd_run): the warning shows
  // them, and its advice names the line the holding rank is on
  auto x = stalled_in_collective(150);
  append_train_stack(x.s, {131, 1, 1001, "D23",
                           "Current thread 0x00007f0000000002 (most recent call first):\n"
                           "  File \"/home/u/job.py\", line 40 in run\n"
                           "  File \"/usr/lib/python3.11/multiprocessing/process.py\", line 108 in run\n"});
  append_train_stack(x.s, {131, 0, 1000, "D23",
                           "Current thread 0x00007f0000000003 (most recent call first):\n"
                           "  File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", "
                           "line 1536 in all_reduce\n"
                           "  File \"/home/u/job.py\", line 42 in run\n"});
  const auto w = detect_training_hang(x.s, kTh);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].severity, Severity::warning);
  ASSERT_EQ(w[0].stacks.size(), 2u);
  EXPECT_EQ(w[0].stacks[0].rank, 0);
  EXPECT_EQ(w[0].stacks[0].collective, "all_reduce");
  EXPECT_EQ(w[0].stacks[1].where, "job.py:40 in run");
  EXPECT_TRUE(
      has(w[0].advice,
          "Look at rank 1 (pid 1001 on node-a, GPU1) first: it is at job.py:40 in run while the others "
          "wait for it in a collective."))
      << w[0].advice;
  EXPECT_EQ(w[0].numbers.at("holding_rank"), 1);
}

TEST(DiagD23CollectiveStall, CheckpointEvaluationAndSlowFirstStepAreNoHang) {
  {  // rank 0 saves alone for 45 s (in compute) while rank 1 waits in the all-reduce, then both resume
    Synth x(2, 300);
    RankFeed r0(0, 1000, 0), r1(1, 1001, 1);
    for (RankFeed* r : {&r0, &r1}) r->steps_v3(x.s, 0, 100, 1.0, 0.2, 0.005, 0.02);
    r0.heartbeats(x.s, 100, 145, 1.0, TrainPhase::compute, 100);
    r1.heartbeats(x.s, 100, 145, 1.0, TrainPhase::collective, 100.1, {"all_reduce", 500, "0"});
    for (RankFeed* r : {&r0, &r1}) r->steps_v3(x.s, 145, 300, 1.0, 0.2, 0.005, 0.02);
    job_process(x.s, 1000, 0, 300);
    job_process(x.s, 1001, 0, 300);
    EXPECT_TRUE(detect_training_hang(x.s, kTh).empty());
  }
  {  // an evaluation pass: rank 0 still evaluates (idle) while rank 1 waits in its metrics' all-reduce
    Synth x(2, 400);
    RankFeed r0(0, 1000, 0), r1(1, 1001, 1);
    for (RankFeed* r : {&r0, &r1}) r->steps_v3(x.s, 0, 100, 1.0, 0.2, 0.005, 0.02);
    r0.heartbeats(x.s, 100, 400, 1.0, TrainPhase::idle, 100);
    r1.heartbeats(x.s, 100, 400, 1.0, TrainPhase::collective, 150, {"all_reduce", 500, "0"});
    job_process(x.s, 1000, 0, 400);
    job_process(x.s, 1001, 0, 400);
    EXPECT_TRUE(detect_training_hang(x.s, kTh).empty());
  }
  {  // a slow first step: rank 0 waits in the initial broadcast for 200 s while rank 1 compiles
    Synth x(2, 400);
    RankFeed r0(0, 1000, 0), r1(1, 1001, 1);
    r0.heartbeats(x.s, 0, 200, 1.0, TrainPhase::collective, 0.5, {"broadcast", 0, "0"});
    r1.heartbeats(x.s, 0, 200, 1.0, TrainPhase::compute, 0.5);
    r0.long_step(x.s, 201, 200, 0, 199);
    r1.long_step(x.s, 201, 200, 0, 1);
    for (RankFeed* r : {&r0, &r1}) r->steps_v3(x.s, 201, 400, 1.0, 0.2, 0.005, 0.02);
    job_process(x.s, 1000, 0, 400);
    job_process(x.s, 1001, 0, 400);
    EXPECT_TRUE(detect_training_hang(x.s, kTh).empty());
    EXPECT_TRUE(detect_pauses(x.s, kTh).empty());
  }
}

// ---- D28 pauses ----------------------------------------------------------------------------------

TEST(DiagD28Pauses, ARankZeroCheckpointEveryFifteenSecondsIsNamedWithItsCost) {
  // 3 s of 0.2-s steps, then rank 0 saves for 12 s (compute) while rank 1 waits in the all-reduce
  Synth x(2, 600);
  RankFeed r0(0, 1000, 0), r1(1, 1001, 1);
  for (double t = 0; t + 15 <= 600; t += 15) {
    for (RankFeed* r : {&r0, &r1}) r->steps_v3(x.s, t, t + 3, 1.0, 0.2, 0.005, 0.02);
    r0.heartbeats(x.s, t + 3, t + 14, 1.0, TrainPhase::compute, t + 3);
    r1.heartbeats(x.s, t + 3, t + 14, 1.0, TrainPhase::collective, t + 3, {"all_reduce", 1, "0"});
    // rank 1 waits a little longer than rank 0 saves (until rank 0 is back in the all-reduce), as
    // measured for real (test_train_scenarios): the finding still names rank 0, the one that works
    r0.long_step(x.s, t + 15, 12.2, 0.005, 0.02);
    r1.long_step(x.s, t + 15, 12.3, 0.005, 12.1);
  }
  job_process(x.s, 1000, 0, 600);
  job_process(x.s, 1001, 0, 600);
  const auto f = detect_pauses(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].code, "D28");
  EXPECT_NEAR(f[0].numbers.at("pause_share_pct"), 80, 2);
  EXPECT_EQ(f[0].numbers.at("rank"), 0);
  EXPECT_GE(f[0].numbers.at("compute_pct"), 90);
  EXPECT_TRUE(has(f[0].evidence, "on rank 0 (pid 1000")) << f[0].evidence;
  EXPECT_TRUE(has(f[0].evidence, "rank 0 computed alone during its pauses")) << f[0].evidence;
  EXPECT_TRUE(has(f[0].evidence, "while rank 1 waited in the collectives")) << f[0].evidence;
  EXPECT_TRUE(has(f[0].advice, "async_save")) << f[0].advice;
  ASSERT_TRUE(f[0].cost);
  EXPECT_NEAR(f[0].cost->share, 0.8, 0.02);
  EXPECT_TRUE(detect_training_hang(x.s, kTh).empty());
  // steady steps: no pause
  EXPECT_TRUE(detect_pauses(sync_pair(0.1, 0.1).s, kTh).empty());
}

TEST(DiagEngineTrain, TheNewCodesAreInTheTable) {
  EXPECT_EQ(find_kind("D27")->slug, "comm-bound");
  EXPECT_EQ(find_kind("D28")->slug, "training-pauses");
  auto x = comm_job(0.1, 0.1);
  EXPECT_EQ(with_code(DiagnosisEngine{}.run_all(x.s, kTh), "D27").size(), 1u);
}

}  // namespace
}  // namespace trainmon::diagnose
