// SPDX-License-Identifier: Apache-2.0
// The engine: healthy runs stay quiet; the live wrapper does not flap and ends with exactly the
// offline result on the same series.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "diagnose/detail.h"
#include "trainmon/diagnose/detectors.h"
#include "trainmon/diagnose/engine.h"
#include "unit/diagnose/synth.h"
#include "unit/diagnose/train_synth.h"

namespace trainmon::diagnose {
namespace {
using testing::Synth;
using testing::with_code;

void make_healthy(Synth& x) {
  // all GPUs move together around 90 % (85-95), with noise
  for (auto& g : x.s.gpus)
    x.apply(g.util_gpu_pct, 0, 1e9, [&](double t, float) {
      return std::clamp(static_cast<float>(90 + 4 * std::sin(t / 300)) + x.noise(1.5f), 0.f, 100.f);
    });
}

// A finding that says "nothing to do" is not a finding: a healthy run reports none at all (the
// healthy D11 band and a power cap at full clocks used to give info lines).
TEST(DiagHealthy, OneGpuRunHasNoFinding) {
  Synth x(1, 2 * 3600);
  make_healthy(x);
  for (auto& r : x.gpu(0).clock_reasons) r = clock_event::sw_power_cap;  // at its cap, clocks at max
  const auto f = DiagnosisEngine{}.run_all(x.s, Thresholds{});
  for (const auto& v : f) ADD_FAILURE() << to_text(v);
}

TEST(DiagHealthy, EightGpuRunHasNoFinding) {
  Synth x(8, 2 * 3600);
  make_healthy(x);
  const auto f = DiagnosisEngine{}.run_all(x.s, Thresholds{});
  for (const auto& v : f) ADD_FAILURE() << to_text(v);
}

TEST(DiagHealthy, HealthyTrainingRanksGiveNoFinding) {
  // two even ranks, 5 % data wait, rows every second, a 2-minute evaluation in the middle
  Synth x(2, 3600);
  make_healthy(x);
  testing::RankFeed r0(0, 1000, 0), r1(1, 1001, 1);
  for (auto* r : {&r0, &r1}) {
    r->steps(x.s, 0, 1800, 1.0, 0.1, 0.005);
    r->heartbeats(x.s, 1800, 1920, 1.0, TrainPhase::idle, 1800);
    r->steps(x.s, 1920, 3600, 1.0, 0.1, 0.005);
  }
  testing::job_process(x.s, 1000, 0, 3600);
  testing::job_process(x.s, 1001, 0, 3600);
  const auto f = DiagnosisEngine{}.run_all(x.s, Thresholds{});
  for (const auto& v : f) ADD_FAILURE() << to_text(v);
}

TEST(DiagEngine, RunAllSortsAndCombines) {
  Synth x(2, 900);
  x.set(x.gpu(1).ecc_uncorrected_volatile, 600, 900, 1);
  x.s.gpu_events = {{100, 0, 0x8, 43}};
  x.set(x.gpu(0).util_gpu_pct, 200, 900, 30, 2);  // and GPU0 mostly waits (D11)
  const auto f = DiagnosisEngine{}.run_all(x.s, Thresholds{});
  ASSERT_GE(f.size(), 3u);
  for (std::size_t i = 1; i < f.size(); ++i) EXPECT_FALSE(finding_less(f[i], f[i - 1]));
  EXPECT_EQ(with_code(f, "D13").size(), 1u);
  EXPECT_EQ(with_code(f, "D10").size(), 1u);
}

constexpr std::int64_t kStart = 1'800'000'000'000'000'000;

/// One tick of a 2-GPU job: root 1000 on GPU0, its child 1001 on GPU1; GPU1 is starved from
/// 300 to 800 s (with 18 s recoveries every 100 s, which briefly lift the 60 s mean over 40 %)
/// while the host CPU idles.
Snapshot tick(double t, std::mt19937& rng) {
  std::normal_distribution<double> nd(0, 2);
  Snapshot s;
  s.time_unix_ns = kStart + static_cast<std::int64_t>(t * 1e9);
  auto info = std::make_shared<GpuStaticInfo>();
  info->memory_total_bytes = Reading<std::uint64_t>::of(80ull << 30);
  for (unsigned g = 0; g < 2; ++g) {
    GpuSample gs;
    gs.index = g;
    gs.info = info;
    gs.responsive = Reading<bool>::of(true);
    double u = 90 + nd(rng);
    const bool starved = g == 1 && t >= 300 && t <= 800 && std::fmod(t, 100) >= 18;
    if (starved) u = 20 + nd(rng);
    gs.utilization_gpu_pct = Reading<unsigned>::of(static_cast<unsigned>(std::clamp(u, 0.0, 100.0)));
    gs.memory_used_bytes = Reading<std::uint64_t>::of(30ull << 30);
    gs.memory_total_bytes = Reading<std::uint64_t>::of(80ull << 30);
    gs.power_draw_mw = Reading<unsigned>::of(300000);
    gs.enforced_power_limit_mw = Reading<unsigned>::of(400000);
    gs.clocks_event_reasons_active = Reading<std::uint64_t>::of(0);
    s.gpus.push_back(gs);
    GpuProcessSample p;
    p.gpu_index = g;
    p.pid = 1000 + g;
    p.used_memory_bytes = Reading<std::uint64_t>::of(29ull << 30);
    p.host = HostVisibility::visible;
    s.gpu_processes.push_back(p);
  }
  s.host.cpu_total.busy_pct = t >= 300 && t <= 800 ? 15 : 45;
  s.host.cpu_count_online = 32;
  s.host.memory.total_bytes = Reading<std::uint64_t>::of(256ull << 30);
  s.host.memory.available_bytes = Reading<std::uint64_t>::of(200ull << 30);
  ProcessSample root;
  root.pid = 1000;
  root.ppid = 1;
  root.rss_bytes = Reading<std::uint64_t>::of(8ull << 30);
  root.cpu_pct = Reading<double>::of(60);
  ProcessSample child = root;
  child.pid = 1001;
  child.ppid = 1000;
  s.processes = {root, child};
  if (t == 500) s.events.push_back({s.time_unix_ns, 0, 0x8, 31});
  return s;
}

TEST(DiagLive, DoesNotFlapAndEndsWithTheOfflineResult) {
  LiveDiagnosis live(Thresholds{}, LiveOptions{.every_s = 10, .window_s = 3600, .close_after_s = 60});
  const JobContext ctx{kStart, 1000, {}, std::nullopt};
  std::mt19937 rng(7);
  bool d4_open_mid_run = false;
  for (int t = 0; t <= 1500; ++t) {
    live.on_snapshot(tick(t, rng), ctx);
    if (t == 600) d4_open_mid_run = !with_code(live.active(), "D4").empty();
  }
  EXPECT_TRUE(d4_open_mid_run);
  EXPECT_TRUE(with_code(live.active(), "D4").empty());  // closed after the run recovered
  int d4_opened = 0;
  for (const auto& l : live.history())
    if (l.finding.code == "D4") {
      ++d4_opened;
      EXPECT_GE(l.opened_s, 300 + Thresholds{}.starved_for_s);
      EXPECT_FALSE(l.open);
    }
  EXPECT_EQ(d4_opened, 1);  // short recoveries inside the episode did not close and reopen it

  JobFacts facts;
  facts.exit_status = 0;
  facts.gpus = {0, 1};
  facts.root_pid = 1000;
  const auto final_live = live.finish(facts);
  const auto offline = DiagnosisEngine{}.run_all(live.series(), Thresholds{});
  EXPECT_EQ(final_live, offline);
  const auto d4 = with_code(offline, "D4");
  std::string all;
  for (const auto& f : offline) all += to_text(f) + "\n";
  ASSERT_EQ(d4.size(), 1u) << all;
  EXPECT_EQ(d4[0].gpus, std::vector<unsigned>{1});
  EXPECT_EQ(d4[0].pids, std::vector<std::uint32_t>{1001});
  EXPECT_EQ(with_code(offline, "D13").size(), 1u);
  EXPECT_EQ(with_code(offline, "D2").size(), 1u);  // GPU0 90 % while GPU1 ~30 %

  // The same rows rebuilt from JSON findings give the same findings back (store round trip).
  const nlohmann::json j = offline;
  EXPECT_EQ(j.get<std::vector<Finding>>(), offline);
}

TEST(DiagLive, RetainBoundsTheSeriesAndStillFindsWhatHoldsNow) {
  // A daemon (record / serve) keeps only retain_s seconds; the D4 episode (300..900 s) is still
  // found live, and the series never grows past 1.1 x retain_s rows.
  LiveDiagnosis live(Thresholds{},
                     LiveOptions{.every_s = 10, .window_s = 400, .close_after_s = 60, .retain_s = 400});
  const JobContext ctx{kStart, 1000, {}, std::nullopt};
  std::mt19937 rng(7);
  bool d4_open_mid_run = false;
  std::size_t most_rows = 0;
  for (int t = 0; t <= 1500; ++t) {
    live.on_snapshot(tick(t, rng), ctx);
    most_rows = std::max(most_rows, live.series().size());
    if (t == 600) d4_open_mid_run = !with_code(live.active(), "D4").empty();
  }
  EXPECT_TRUE(d4_open_mid_run);
  EXPECT_LE(most_rows, 441u);
  EXPECT_GE(live.series().size(), 400u);
  EXPECT_DOUBLE_EQ(live.series().t.back(), 1500);
  EXPECT_GE(live.series().t.front(), 1500 - 440);
}

}  // namespace
}  // namespace trainmon::diagnose

namespace trainmon::diagnose {
namespace {

// run_all shares rolling means and GPU uses between the detectors (detail::RunAllMemo): its
// findings must be exactly those of the detectors run one by one, which remember nothing.
TEST(DiagEngine, RunAllMemoGivesTheDetectorsOwnFindings) {
  Synth x(4, 3600);
  x.set(x.gpu(2).util_gpu_pct, 600, 1800, 2.f);       // GPU2 held but idle while the others work (D7, D2)
  x.set(x.gpu(1).mem_used_mib, 1200, 3600, 78000.f);  // near full (D21)
  x.set(x.s.host.cpu_busy_pct, 2000, 2600, 99.f);
  x.set(x.gpu(3).util_gpu_pct, 2000, 2600, 10.f, 3.f);  // starved while the host CPU is saturated
  x.s.facts.gpus = {0, 1};                              // GPUs 2 and 3 were not meant to be used
  const Thresholds th;
  const auto together = DiagnosisEngine{}.run_all(x.s, th);
  std::vector<Finding> alone;
  for (const auto& d : detector_table()) {
    auto v = d.fn(x.s, th);
    alone.insert(alone.end(), v.begin(), v.end());
  }
  std::stable_sort(alone.begin(), alone.end(), finding_less);
  ASSERT_GE(together.size(), 3u);
  ASSERT_EQ(together.size(), alone.size());
  for (std::size_t i = 0; i < together.size(); ++i) EXPECT_EQ(to_text(together[i]), to_text(alone[i]));
  EXPECT_FALSE(with_code(together, "D7").empty());
}

// A column a detector computes itself is never remembered: a later one at the same address (the
// first was freed) must not get the first one's rolling mean.
TEST(DiagEngine, RunAllMemoForgetsColumnsOutsideTheSeries) {
  Synth x(1, 100);
  const detail::RunAllMemo memo(x.s);
  const auto mean_of = [&](float v) {
    std::vector<float> temp(x.s.size(), v);
    return detail::rolling_mean(x.s.t, temp, 60).back();
  };
  EXPECT_FLOAT_EQ(mean_of(1.f), 1.f);
  EXPECT_FLOAT_EQ(mean_of(2.f), 2.f);
  // The series' own columns are remembered: the same answer twice, and the right one.
  const auto a = detail::rolling_mean(x.s.t, x.s.gpus[0].util_gpu_pct, 60);
  const auto b = detail::rolling_mean(x.s.t, x.s.gpus[0].util_gpu_pct, 60);
  EXPECT_EQ(a, b);
  EXPECT_NEAR(a.back(), 90.f, 2.f);
}

}  // namespace
}  // namespace trainmon::diagnose
