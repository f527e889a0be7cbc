// SPDX-License-Identifier: Apache-2.0
// A wall-clock step (NTP, a VM resumed) in the middle of a run: the series' times and the findings'
// windows come from the monotonic clock, the wall clock only labels the start.
#include <gtest/gtest.h>

#include <memory>

#include "trainmon/core/timeline.h"
#include "trainmon/diagnose/engine.h"
#include "trainmon/diagnose/series.h"

namespace trainmon::diagnose {
namespace {

constexpr std::int64_t kS = 1'000'000'000;
constexpr std::int64_t kStartUnix = 1'700'000'000 * kS;
constexpr std::int64_t kStartMono = 5'000 * kS;
constexpr std::int64_t kDay = 86'400 * kS;

/// Tick `i` (1 s apart on the monotonic clock); the wall clock steps a day ahead from tick 5.
Snapshot tick(int i) {
  Snapshot s;
  s.monotonic_ns = kStartMono + i * kS;
  s.time_unix_ns = kStartUnix + i * kS + (i >= 5 ? kDay : 0);
  GpuSample g;
  g.index = 0;
  g.responsive = Reading<bool>::of(true);
  g.utilization_gpu_pct = Reading<unsigned>::of(90);
  g.ecc_uncorrected_volatile = Reading<std::uint64_t>::of(2);
  // a driver sample 0.5 s before the snapshot, by the (stepped) wall clock
  g.gpu_utilization_samples = {{static_cast<std::uint64_t>((s.time_unix_ns - kS / 2) / 1000), 88}};
  s.gpus.push_back(g);
  // an Xid read just before the step, delivered with the first tick after it
  if (i == 5) s.events.push_back({kStartUnix + 4 * kS + kS / 2, 0, 0x8, 79});
  return s;
}

TEST(DiagClockStep, RowsEventsAndSamplesFollowTheMonotonicClock) {
  RunSeries s;
  const JobContext ctx{kStartUnix, 0, {}, std::nullopt, kStartMono};
  for (int i = 0; i < 10; ++i) append_snapshot(s, tick(i), ctx);
  ASSERT_EQ(s.t.size(), 10u);
  for (int i = 0; i < 10; ++i) EXPECT_DOUBLE_EQ(s.t[static_cast<std::size_t>(i)], i);
  ASSERT_EQ(s.gpu_events.size(), 1u);
  // near its tick (at most the slack of buffered readings before the previous one), not a day off
  EXPECT_GE(s.gpu_events[0].t, 4.0 - static_cast<double>(kWallReadingSlackNs) / 1e9);
  EXPECT_LE(s.gpu_events[0].t, 5.0);
  const auto& hr = s.gpus[0].hires_util.t;
  ASSERT_FALSE(hr.empty());
  EXPECT_NEAR(hr.back(), 8.5, 1e-6);
  for (double t : hr) EXPECT_LT(t, 10.0);
}

TEST(DiagClockStep, AFindingLastsWhatTheRunLasted) {
  LiveDiagnosis live;
  for (int i = 0; i < 10; ++i)
    live.on_snapshot(tick(i), JobContext{kStartUnix, 0, {}, std::nullopt, kStartMono});
  const auto found = live.finish(JobFacts{});
  bool ecc = false;
  for (const auto& f : found) {
    EXPECT_LE(f.end_s - f.start_s, 10.0) << f.code << " claims " << f.end_s - f.start_s << " s";
    ecc = ecc || f.code == "D10";
  }
  EXPECT_TRUE(ecc);
}

TEST(DiagClockStep, WithoutAMonotonicStartTheWallClockIsUsed) {
  RunSeries s;
  for (int i = 0; i < 10; ++i) append_snapshot(s, tick(i), JobContext{kStartUnix, 0, {}, std::nullopt});
  EXPECT_DOUBLE_EQ(s.t.back(), 9.0 + 86'400.0);  // what callers without the monotonic start get
}

}  // namespace
}  // namespace trainmon::diagnose
