// SPDX-License-Identifier: Apache-2.0
// The recorder's rows on the run's timeline (a wall-clock step moves no stored time) and the run
// summary's counters across a reset (a driver reload restarts NVML's energy and ECC counters).
#include <gtest/gtest.h>

#include "trainmon/recorder/run_stats.h"
#include "trainmon/recorder/session.h"

namespace trainmon::recorder {
namespace {

constexpr std::int64_t kS = 1'000'000'000;
constexpr std::int64_t kStartUnix = 1'700'000'000 * kS;
constexpr std::int64_t kStartMono = 777 * kS;
constexpr std::int64_t kDay = 86'400 * kS;

Snapshot snap_at(int i, std::int64_t wall_offset) {
  Snapshot s;
  s.monotonic_ns = kStartMono + i * kS;
  s.time_unix_ns = kStartUnix + i * kS + wall_offset;
  GpuSample g;
  g.index = 0;
  g.gpu_utilization_samples = {{static_cast<std::uint64_t>((s.time_unix_ns - kS / 4) / 1000), 50}};
  s.gpus.push_back(g);
  s.events.push_back({s.time_unix_ns - kS / 10, 0, 0x8, 13});
  return s;
}

TEST(RecorderTimeline, StoredTimesAreStartPlusMonotonicElapsed) {
  const Timeline tl{kStartUnix, kStartMono};
  // the wall clock stepped a day back before tick 3
  auto before = make_tick_batch(snap_at(2, 0), {}, {}, tl, tl.at(kStartMono + kS), kS);
  auto after = make_tick_batch(snap_at(3, -kDay), {}, {}, tl, before.t_ns, kS);
  EXPECT_EQ(before.t_ns, kStartUnix + 2 * kS);
  EXPECT_EQ(after.t_ns, kStartUnix + 3 * kS);
  for (const auto& r : after.rows) {
    if (r.series.kind == store::SeriesKind::gpu) {
      EXPECT_EQ(r.t_ms, (kStartUnix + 3 * kS) / 1'000'000);
    }
    if (r.series.kind == store::SeriesKind::gpu_util_hr) {
      EXPECT_EQ(r.t_ms, (kStartUnix + 3 * kS - kS / 4) / 1'000'000);  // 0.25 s before its tick
    }
  }
  ASSERT_EQ(after.events.size(), 1u);
  EXPECT_EQ(after.events[0].time_unix_ns, kStartUnix + 3 * kS - kS / 10);
  // the 3-argument form keeps the snapshot's own clock
  EXPECT_EQ(make_tick_batch(snap_at(3, -kDay), {}, {}).rows[0].t_ms,
            (kStartUnix + 3 * kS - kDay) / 1'000'000);
}

TEST(RecorderStats, CountersAcrossADriverReload) {
  RunStats st;
  const std::uint64_t energy[] = {1'000'000, 2'000'000, 3'000'000, 500'000, 1'500'000};  // mJ
  const std::uint64_t ecc[] = {0, 3, 3, 0, 1};
  for (int i = 0; i < 5; ++i) {
    Snapshot s;
    GpuSample g;
    g.index = 0;
    g.total_energy_mj = Reading<std::uint64_t>::of(energy[i]);
    g.ecc_uncorrected_volatile = Reading<std::uint64_t>::of(ecc[i]);
    s.gpus.push_back(g);
    st.add(s, i * 1000, std::nullopt, {});
  }
  const auto sum = st.summary();
  ASSERT_EQ(sum.gpus.size(), 1u);
  // 2000 J before the reload, then 500 + 1000 J: never a negative 1500 J
  EXPECT_DOUBLE_EQ(*sum.gpus[0].energy_j, 3500.0);
  EXPECT_EQ(*sum.gpus[0].ecc_uncorrected_volatile_max, 3u);
  EXPECT_EQ(sum.gpus[0].counter_resets, 2u);
  const auto back = summary_from_json(summary_to_json(sum));
  EXPECT_DOUBLE_EQ(*back.gpus[0].energy_j, 3500.0);
  EXPECT_EQ(back.gpus[0].counter_resets, 2u);
  const auto text = format_summary(sum, "command exit status 0", 1, 0);
  EXPECT_NE(text.find("energy 3.5 kJ"), std::string::npos) << text;
  EXPECT_NE(text.find("counters reset 2 times"), std::string::npos) << text;
}

}  // namespace
}  // namespace trainmon::recorder
