// SPDX-License-Identifier: Apache-2.0
// TrainSeries (include/trainmon/diagnose/train_series.h): merging windows, figures over a span,
// which GPU a rank uses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "trainmon/diagnose/train_series.h"

using namespace trainmon::diagnose;

namespace {

/// A window of `n` steps of `step_s` each, `data_s` of which waited for data, `samples` per step,
/// ending at `t`, after `before` steps (cumulative totals).
TrainWindow window(double t, std::uint32_t n, double step_s, double data_s, double samples, double before) {
  TrainWindow w;
  w.t = t;
  w.steps = n;
  w.samples = samples * n;
  w.span_s = static_cast<float>(n * step_s);
  const auto s = static_cast<float>(step_s), d = static_cast<float>(data_s);
  w.step = {static_cast<float>(n * step_s), s, s, s, s, s};
  w.data = {static_cast<float>(n * data_s), d, d, d, d, d};
  w.total_steps = before + n;
  w.total_samples = (before + n) * samples;
  w.total_step_s = (before + n) * step_s;
  w.total_data_s = (before + n) * data_s;
  w.last_step_t = t;
  w.phase = TrainPhase::data;
  w.phase_t = t;
  return w;
}

TrainRank rank(int r, std::uint32_t pid) {
  TrainRank id;
  id.rank = r;
  id.pid = pid;
  id.key = train_rank_key(r, pid);
  return id;
}

}  // namespace

TEST(TrainSeries, KeysAndOrder) {
  EXPECT_EQ(train_rank_key(3, 100), 3);
  EXPECT_EQ(train_rank_key(-1, 100), -101);
  EXPECT_NE(train_rank_key(-1, 0), train_rank_key(0, 0));
  TrainSeries s;
  s.upsert(rank(-1, 500));
  s.upsert(rank(2, 10));
  s.upsert(rank(-1, 400));
  s.upsert(rank(0, 11));
  ASSERT_EQ(s.ranks.size(), 4u);
  EXPECT_EQ(s.ranks[0].id.key, 0);
  EXPECT_EQ(s.ranks[1].id.key, 2);
  EXPECT_EQ(s.ranks[2].id.pid, 400u);
  EXPECT_EQ(s.ranks[3].id.pid, 500u);
  // Identity fields given later are kept; absent ones do not erase.
  TrainRank more;
  more.key = 2;
  more.host = "node-3";
  more.gpu = 5;
  s.upsert(more);
  EXPECT_EQ(s.find(2)->id.host, "node-3");
  EXPECT_EQ(s.find(2)->id.pid, 10u);
  EXPECT_EQ(s.find(2)->id.gpu, 5);
  EXPECT_EQ(s.find(7), nullptr);
}

TEST(TrainSeries, MergeKeepsCountsSumsExtremesAndTotalsExact) {
  TrainWindow a = window(1, 4, 0.5, 0.1, 32, 0);
  TrainWindow b = window(2, 6, 0.5, 0.2, 32, 4);
  b.step.min = 0.3f;
  b.step.max = 0.9f;
  merge_windows(a, b);
  EXPECT_EQ(a.steps, 10u);
  EXPECT_DOUBLE_EQ(a.samples, 320);
  EXPECT_FLOAT_EQ(a.step.sum, 5.0f);
  EXPECT_FLOAT_EQ(a.data.sum, 0.4f + 1.2f);
  EXPECT_FLOAT_EQ(a.step.min, 0.3f);
  EXPECT_FLOAT_EQ(a.step.max, 0.9f);
  EXPECT_DOUBLE_EQ(a.total_steps, 10);
  EXPECT_DOUBLE_EQ(a.t, 2);
  EXPECT_DOUBLE_EQ(a.last_step_t, 2);
  // Same distribution on both sides: the percentiles stay.
  EXPECT_NEAR(a.step.p50, 0.5, 1e-6);
  // A heartbeat merged in changes no figure but the phase.
  TrainWindow hb;
  hb.t = 3;
  hb.phase = TrainPhase::compute;
  hb.phase_t = 2.5;
  merge_windows(a, hb);
  EXPECT_EQ(a.steps, 10u);
  EXPECT_FLOAT_EQ(a.step.sum, 5.0f);
  EXPECT_EQ(a.phase, TrainPhase::compute);
  EXPECT_DOUBLE_EQ(a.t, 3);
}

TEST(TrainSeries, MergedMedianLiesWithTheMajority) {
  // 9 steps of 0.1 s and 1 step of 2 s: the median is 0.1, the p99 near 2.
  TrainWindow fast = window(1, 9, 0.1, 0, 1, 0);
  TrainWindow slow = window(2, 1, 2.0, 0, 1, 9);
  merge_windows(fast, slow);
  EXPECT_NEAR(fast.step.p50, 0.1, 1e-3);
  EXPECT_GT(fast.step.p99, 1.0);
  EXPECT_FLOAT_EQ(fast.step.max, 2.0f);
}

namespace {

/// The window a sender makes of these step times: sum, min, max and nearest-rank percentiles
/// (python/trainmon/_timing.py _stats).
TrainWindow sent(double t, std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  auto at = [&](double q) {
    return static_cast<float>(v[static_cast<std::size_t>(std::max(1.0, std::ceil(q * n))) - 1]);
  };
  TrainWindow w;
  w.t = t;
  w.steps = static_cast<std::uint32_t>(n);
  double sum = 0;
  for (double x : v) sum += x;
  w.step = {static_cast<float>(sum),
            static_cast<float>(v.front()),
            static_cast<float>(v.back()),
            at(0.5),
            at(0.9),
            at(0.99)};
  return w;
}

/// Nearest-rank quantile of all values.
double exact(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(std::max(1.0, std::ceil(q * v.size()))) - 1];
}

}  // namespace

TEST(TrainSeries, OneLongStepInASmallWindowDoesNotSpreadOverTheOthers) {
  // A rank that waited 40 s once in 59 steps of 0.05 s (a stall in a collective), sent in small
  // windows: the one with the stall holds it and one more step. Its p90 is the stall, its p50 is
  // not: no step lies between them, so the job's p90 stays 0.05 (it read 0.5 to 9 s).
  TrainSeries s;
  const auto id = rank(0, 10);
  std::vector<double> all;
  double t = 0;
  for (int w = 0; w < 29; ++w) {
    std::vector<double> v = {0.05, 0.051};
    if (w == 10) v = {40.0, 0.05};
    if (w == 28) v = {0.05};
    all.insert(all.end(), v.begin(), v.end());
    append_train_window(s, id, sent(t += 1, v));
  }
  ASSERT_EQ(all.size(), 57u);
  const auto st = train_stats(s, 0, 1e9);
  ASSERT_EQ(st.ranks.size(), 1u);
  EXPECT_NEAR(st.ranks[0].step_p90_s, exact(all, 0.9), 1e-3);
  EXPECT_NEAR(st.ranks[0].step_median_s, exact(all, 0.5), 1e-3);
  EXPECT_NEAR(st.ranks[0].step_p99_s, 40.0, 1e-3);  // 1 of 57: the nearest-rank p99 is the stall
  // The same windows merged tick by tick (the live recorder) keep it too.
  TrainWindow merged = sent(0, {0.05});
  for (int w = 0; w < 10; ++w) merge_windows(merged, sent(w + 1, {0.05, 0.051}));
  merge_windows(merged, sent(11, {40.0, 0.05}));
  EXPECT_LT(merged.step.p90, 0.06f);
  EXPECT_FLOAT_EQ(merged.step.max, 40.0f);
}

TEST(TrainSeries, MergedPercentilesStayBetweenTheTrueNeighbours) {
  // Many windows of every size drawn from a long-tailed distribution: each merged percentile lies
  // between the exact percentiles 5 points either side (a sketch of 5 points per window is no
  // exact merge, but it may not move a percentile by more than its windows' spread).
  std::uint64_t state = 42;
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / 9007199254740992.0;
  };
  for (int trial = 0; trial < 20; ++trial) {
    TrainSeries s;
    const auto id = rank(0, 10);
    std::vector<double> all;
    for (int w = 0; w < 40; ++w) {
      const int n = 1 + static_cast<int>(next() * (trial % 2 ? 3 : 40));
      std::vector<double> v;
      for (int i = 0; i < n; ++i) v.push_back(next() < 0.03 ? 5 + 30 * next() : 0.1 + 0.01 * next());
      all.insert(all.end(), v.begin(), v.end());
      append_train_window(s, id, sent(w + 1, v));
    }
    const auto st = train_stats(s, 0, 1e9).ranks.at(0);
    for (auto [q, got] : {std::pair{0.5, st.step_median_s}, {0.9, st.step_p90_s}}) {
      EXPECT_GE(got, exact(all, q - 0.05) - 1e-6) << "trial " << trial << " q " << q;
      EXPECT_LE(got, exact(all, q + 0.05) + 1e-6) << "trial " << trial << " q " << q;
    }
  }
}

TEST(TrainSeries, StatsUseTotalsSoADroppedWindowLosesNothing) {
  TrainSeries s;
  const auto r0 = rank(0, 100);
  // 10 steps per second of 0.1 s, 30 % data wait, 64 samples per step; the window at t=2 was lost.
  append_train_window(s, r0, window(1, 10, 0.1, 0.03, 64, 0));
  append_train_window(s, r0, window(3, 10, 0.1, 0.03, 64, 20));
  auto st = train_stats(s);
  ASSERT_EQ(st.ranks.size(), 1u);
  EXPECT_EQ(st.ranks[0].steps, 30u);
  EXPECT_DOUBLE_EQ(st.ranks[0].samples, 30 * 64);
  EXPECT_NEAR(st.ranks[0].samples_per_s, 640, 1e-6);
  EXPECT_NEAR(st.ranks[0].steps_per_s, 10, 1e-9);
  EXPECT_NEAR(st.ranks[0].data_share, 0.3, 1e-6);
  EXPECT_NEAR(st.ranks[0].step_median_s, 0.1, 1e-6);
  EXPECT_EQ(st.steps, 30u);
  // A span that holds only the second row counts only its steps.
  auto late = train_stats(s, 2.5, 10);
  EXPECT_EQ(late.ranks[0].steps, 10u);
  EXPECT_DOUBLE_EQ(late.ranks[0].samples, 640);
  EXPECT_TRUE(train_stats(TrainSeries{}).empty());
}

TEST(TrainSeries, JobFiguresAddThroughputAndFollowTheSlowestRank) {
  TrainSeries s;
  append_train_window(s, rank(0, 100), window(5, 50, 0.1, 0.01, 32, 0));
  append_train_window(s, rank(1, 101), window(5, 25, 0.2, 0.10, 32, 0));
  auto st = train_stats(s);
  EXPECT_NEAR(st.samples_per_s, 320 + 160, 1e-6);
  EXPECT_NEAR(st.step_median_s, 0.2, 1e-6);  // the slowest rank's
  EXPECT_NEAR(st.steps_per_s, 5, 1e-6);      // the slowest rank sets the pace
  EXPECT_NEAR(st.data_share, (0.5 + 2.5) / (5 + 5), 1e-6);
  EXPECT_EQ(st.steps, 50u);
}

TEST(TrainSeries, WithoutTotalsTheRowsAreSummed) {
  TrainSeries s;
  auto w = window(1, 5, 0.2, 0.05, 8, 0);
  w.total_steps = w.total_samples = w.total_step_s = w.total_data_s = NAN;
  append_train_window(s, rank(-1, 77), w);
  auto w2 = window(2, 5, 0.2, 0.05, 8, 0);
  w2.total_steps = w2.total_samples = w2.total_step_s = w2.total_data_s = NAN;
  w2.samples = NAN;  // unknown samples in one window: the known ones count
  append_train_window(s, rank(-1, 77), w2);
  auto st = train_stats(s);
  EXPECT_EQ(st.ranks[0].steps, 10u);
  EXPECT_DOUBLE_EQ(st.ranks[0].samples, 40);
  EXPECT_NEAR(st.ranks[0].data_share, 0.25, 1e-6);
}

TEST(TrainSeries, SliceKeepsIdentitiesAndRowsInSpan) {
  TrainSeries s;
  auto r = rank(0, 1);
  r.host = "h";
  for (int i = 0; i < 10; ++i) append_train_window(s, r, window(i, 1, 0.1, 0, 1, i));
  auto part = slice(s, 3, 5);
  ASSERT_EQ(part.ranks.size(), 1u);
  EXPECT_EQ(part.ranks[0].id.host, "h");
  ASSERT_EQ(part.ranks[0].rows.size(), 3u);
  EXPECT_DOUBLE_EQ(part.ranks[0].rows.front().t, 3);
  auto none = slice(s, 20, 30);
  ASSERT_EQ(none.ranks.size(), 1u);
  EXPECT_TRUE(none.ranks[0].rows.empty());
}

TEST(TrainSeries, ResolveRankGpuFromTheStrongestEvidence) {
  std::vector<NvmlGpuRef> gpus(4);
  for (unsigned i = 0; i < 4; ++i) {
    gpus[i].index = i;
    gpus[i].uuid = "GPU-" + std::to_string(i) + "aaaaaaa-bbbb";
  }
  gpus[3].mig_uuids = {"MIG-77e1-0001"};
  TrainRank r;
  r.pid = 4242;
  // 1. The pid: a DDP rank with a stray 300 MiB context on GPU0 and its model on GPU2.
  gpus[0].procs = {{4242, 300ull << 20}};
  gpus[2].procs = {{4242, 40ull << 30}, {5000, 1}};
  EXPECT_EQ(resolve_rank_gpu(r, gpus), 2u);
  gpus[0].procs.clear();
  gpus[2].procs.clear();
  // 2. The UUID torch told (a unique prefix is enough, as for CUDA).
  r.gpu_uuid = "GPU-1aaa";
  EXPECT_EQ(resolve_rank_gpu(r, gpus), 1u);
  r.gpu_uuid = "MIG-77e1-0001";
  EXPECT_EQ(resolve_rank_gpu(r, gpus), 3u);
  r.gpu_uuid.clear();
  // 3. CUDA_VISIBLE_DEVICES: integers only with CUDA_DEVICE_ORDER=PCI_BUS_ID.
  r.cuda_visible_devices = "3,1";
  r.cuda_device = 1;
  EXPECT_FALSE(resolve_rank_gpu(r, gpus).has_value());  // fastest-first: unknown to NVML
  r.cuda_device_order = "PCI_BUS_ID";
  EXPECT_EQ(resolve_rank_gpu(r, gpus), 1u);
  r.cuda_device = 0;
  EXPECT_EQ(resolve_rank_gpu(r, gpus), 3u);
  r.cuda_device = 5;  // beyond the list
  EXPECT_FALSE(resolve_rank_gpu(r, gpus).has_value());
  r.cuda_device_order.clear();
  r.cuda_visible_devices = "GPU-2aaa";  // UUIDs work in any order
  r.cuda_device = -1;                   // one entry: the process's device 0
  EXPECT_EQ(resolve_rank_gpu(r, gpus), 2u);
  // 4. The CUDA index alone: only on a single-GPU machine or with PCI_BUS_ID.
  r.cuda_visible_devices.clear();
  r.cuda_device = 2;
  EXPECT_FALSE(resolve_rank_gpu(r, gpus).has_value());
  r.cuda_device_order = "PCI_BUS_ID";
  EXPECT_EQ(resolve_rank_gpu(r, gpus), 2u);
  std::vector<NvmlGpuRef> one(1);
  one[0].index = 0;
  TrainRank single;
  single.cuda_device = 0;
  EXPECT_EQ(resolve_rank_gpu(single, one), 0u);
  EXPECT_FALSE(resolve_rank_gpu(TrainRank{}, gpus).has_value());
}

TEST(TrainSeries, AFewLongStepsDoNotInflateTheRunsP90) {
  // The checkpoint run of issue 30 (train_ddp.py --steps 400 --checkpoint-every 50
  // --checkpoint-s 1.5): 21 windows, 7 of them 17 steps with one 1.5 s pause, the rest ~0.035 s
  // steps. Its rows were stored with p90 = p99 = max = 1.53 s (re-sketched merges), which no window
  // of 17 steps summing to 16 x 0.035 + 1.5 s can hold; the p90 read 0.716 s. The true one is 0.037.
  std::vector<double> all;
  TrainSeries stored, sent_rows;
  const auto id = rank(0, 10);
  std::uint64_t state = 7;
  auto jitter = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return 0.030 + 0.008 * (static_cast<double>(state >> 11) / 9007199254740992.0);
  };
  for (int w = 0; w < 21; ++w) {
    const bool pause = w % 3 == 1;
    const int n = pause ? 17 : (w == 0 ? 21 : 20);
    std::vector<double> v;
    for (int i = 0; i < n; ++i) v.push_back(jitter());
    if (pause) v[5] = 1.53;
    all.insert(all.end(), v.begin(), v.end());
    auto row = sent(w + 1, v);
    append_train_window(sent_rows, id, row);
    if (pause) row.step.p90 = row.step.p99 = row.step.max;  // as the old recorder stored it
    append_train_window(stored, id, row);
  }
  ASSERT_EQ(all.size(), 400u);
  const double p90 = exact(all, 0.9), p50 = exact(all, 0.5);
  EXPECT_LT(p90, 0.04);
  for (const auto* s : {&stored, &sent_rows}) {
    const auto st = train_stats(*s, 0, 1e9).ranks.at(0);
    EXPECT_NEAR(st.step_p90_s, p90, 0.002);
    EXPECT_NEAR(st.step_median_s, p50, 0.002);
    EXPECT_NEAR(st.step_p99_s, 1.53, 1e-3);  // 7 of 400: the p99 is a pause
  }
  // An even run (no pause): the figures are those of the consistent rows, unchanged.
  TrainSeries even;
  std::vector<double> flat;
  for (int w = 0; w < 21; ++w) {
    std::vector<double> v;
    for (int i = 0; i < 19; ++i) v.push_back(jitter());
    flat.insert(flat.end(), v.begin(), v.end());
    append_train_window(even, id, sent(w + 1, v));
  }
  const auto st = train_stats(even, 0, 1e9).ranks.at(0);
  EXPECT_NEAR(st.step_p90_s, exact(flat, 0.9), 0.001);
  EXPECT_NEAR(st.step_median_s, exact(flat, 0.5), 0.001);
}

TEST(TrainSeries, ATicksWindowsMergeOnceNotSketchOfSketch) {
  // 28 one-step windows in one tick, the 6th a 1.53 s pause: folding them one by one re-sketched
  // the running row and stored p90 = 1.53 s; merged at once the p90 is an ordinary step.
  std::vector<TrainWindow> parts;
  std::vector<double> all;
  for (int i = 0; i < 28; ++i) {
    const double v = i == 5 ? 1.53 : 0.035 + 0.0001 * i;
    all.push_back(v);
    parts.push_back(sent(i + 1, {v}));
  }
  const auto row = merge_windows(std::span<const TrainWindow>(parts));
  EXPECT_EQ(row.steps, 28u);
  EXPECT_NEAR(row.step.p90, exact(all, 0.9), 1e-3);
  EXPECT_NEAR(row.step.p50, exact(all, 0.5), 1e-3);
  EXPECT_FLOAT_EQ(row.step.max, 1.53f);
  EXPECT_FLOAT_EQ(row.step.p99, 1.53f);
  EXPECT_DOUBLE_EQ(row.t, 28);
  EXPECT_EQ(merge_windows(std::span<const TrainWindow>{}).steps, 0u);
}
