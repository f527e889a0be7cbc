// SPDX-License-Identifier: Apache-2.0
// D1, D3, D5, D21, D22: memory detectors, each with a trigger and near misses.
#include <gtest/gtest.h>

#include "trainmon/diagnose/detectors.h"
#include "unit/diagnose/synth.h"

namespace trainmon::diagnose {
namespace {
using testing::Synth;
const Thresholds kTh;
constexpr double kMiB = 1048576.0;

TrainEvent mem_event(double t, double alloc_mib, double res_mib, double retries = 0) {
  TrainEvent e;
  e.t = t;
  e.kind = "memory";
  e.gpu = 0;
  e.torch_allocated_bytes = alloc_mib * kMiB;
  e.torch_reserved_bytes = res_mib * kMiB;
  e.num_alloc_retries = retries;
  e.num_ooms = 0;
  return e;
}

TEST(DiagD1Fragmentation, ReservedFarAboveAllocated) {
  Synth x(1, 600);
  for (int k = 0; k < 5; ++k) x.s.train_events.push_back(mem_event(100 + 60 * k, 10240, 20480));
  auto f = detect_fragmentation(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::warning);
  EXPECT_DOUBLE_EQ(f[0].numbers.at("gap_mib"), 10240);
  EXPECT_DOUBLE_EQ(f[0].numbers.at("events"), 5);
  EXPECT_DOUBLE_EQ(f[0].start_s, 100);
  EXPECT_DOUBLE_EQ(f[0].end_s, 340);
  x.s.train_events.back().num_alloc_retries = 3;
  f = detect_fragmentation(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::critical);
}

TEST(DiagD1Fragmentation, AllocatorNearMisses) {
  Synth ratio(1, 600);  // 1.4x is under 1.5x
  for (int k = 0; k < 5; ++k) ratio.s.train_events.push_back(mem_event(100 + 60 * k, 10240, 14336));
  EXPECT_TRUE(detect_fragmentation(ratio.s, kTh).empty());
  Synth few(1, 600);  // two events are not enough
  for (int k = 0; k < 2; ++k) few.s.train_events.push_back(mem_event(100 + 60 * k, 10240, 20480));
  EXPECT_TRUE(detect_fragmentation(few.s, kTh).empty());
}

TEST(DiagD1Fragmentation, DriverMemoryCreepsThenSpikesToFull) {
  Synth x(1, 900);
  x.apply(x.gpu(0).mem_used_mib, 0, 600,
          [](double t, float) { return static_cast<float>(50000 + 10000 * t / 600); });
  x.apply(x.gpu(0).mem_used_mib, 601, 900, [](double t, float) { return t < 605 ? 70000.f : 79000.f; });
  const auto f = detect_fragmentation(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].gpus, std::vector<unsigned>{0});
  EXPECT_FLOAT_EQ(static_cast<float>(f[0].numbers.at("after_mib")), 79000.f);
  EXPECT_NEAR(f[0].numbers.at("jump_mib"), 79000 - (50000 + 10000 * 595 / 600.0),
              1);  // from the window minimum
  EXPECT_NEAR(f[0].numbers.at("creep_mib_per_h"), 60000, 100);
  EXPECT_DOUBLE_EQ(f[0].start_s, 595);
  EXPECT_DOUBLE_EQ(f[0].end_s, 605);
}

TEST(DiagD1Fragmentation, DriverNearMisses) {
  Synth under(1, 900);  // ends at 94 % of total
  under.set(under.gpu(0).mem_used_mib, 600, 900, 77000);
  EXPECT_TRUE(detect_fragmentation(under.s, kTh).empty());
  Synth slow(1, 900);  // reaches 96 % but over five minutes, not within 10 s
  slow.apply(slow.gpu(0).mem_used_mib, 300, 900, [](double t, float) {
    return static_cast<float>(std::min(79000.0, 30000 + 49000 * (t - 300) / 300));
  });
  EXPECT_TRUE(detect_fragmentation(slow.s, kTh).empty());
}

TEST(DiagD3HostLeak, LinearRssGrowthWithForecast) {
  Synth x(1, 4 * 3600, 10);
  x.apply(x.s.job.rss_mib, 0, 1e9,
          [&](double t, float) { return static_cast<float>(8000 + 2000 * t / 3600) + x.noise(30); });
  x.apply(x.s.host.mem_available_mib, 0, 1e9,
          [](double t, float) { return static_cast<float>(40000 - 2000 * t / 3600); });
  const auto f = detect_host_leak(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::warning);
  EXPECT_NEAR(f[0].numbers.at("slope_mib_per_h"), 2000, 20);
  EXPECT_GT(f[0].numbers.at("r2"), 0.99);
  EXPECT_NEAR(f[0].numbers.at("eta_s"), 32000.0 / 2000 * 3600, 400);
  EXPECT_EQ(f[0].pids, std::vector<std::uint32_t>{1000});
}

TEST(DiagD3HostLeak, CriticalWhenMemoryRunsOutWithinTheHour) {
  Synth x(1, 4 * 3600, 10);
  x.apply(x.s.job.rss_mib, 0, 1e9,
          [](double t, float) { return static_cast<float>(8000 + 2000 * t / 3600); });
  x.apply(x.s.host.mem_available_mib, 0, 1e9,
          [](double t, float) { return static_cast<float>(9000 - 2000 * t / 3600); });
  const auto f = detect_host_leak(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::critical);
  EXPECT_NEAR(f[0].numbers.at("eta_s"), 1800, 30);
}

TEST(DiagD3HostLeak, FallsBackToHostUsedWithoutJob) {
  Synth x(1, 4 * 3600, 10);
  x.set(x.s.job.rss_mib, 0, 1e9, kNA);
  x.apply(x.s.host.mem_available_mib, 0, 1e9,
          [](double t, float) { return static_cast<float>(100000 - 1000 * t / 3600); });
  const auto f = detect_host_leak(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NEAR(f[0].numbers.at("slope_mib_per_h"), 1000, 10);
  EXPECT_NE(f[0].evidence.find("MemTotal - MemAvailable"), std::string::npos);
}

// The job frees its memory on its way out (teardown, or the kernel unmapping it before it is a
// zombie): once it has ended, that last fall is not held against the leak the run showed while alive.
TEST(DiagD3HostLeak, TheFallAtTheJobsEndIsLeftOutOnceItEnded) {
  Synth x(1, 4 * 3600, 360);  // 41 rows: two teardown rows move a short run's fit a lot
  x.apply(x.s.job.rss_mib, 0, 1e9,
          [](double t, float) { return static_cast<float>(8000 + 2000 * t / 3600); });
  x.apply(x.s.host.mem_available_mib, 0, 1e9,
          [](double t, float) { return static_cast<float>(40000 - 2000 * t / 3600); });
  const std::size_t n = x.s.size();
  x.s.job.rss_mib[n - 2] = 4000;                    // freeing...
  x.s.job.rss_mib[n - 1] = 20;                      // ...gone
  EXPECT_TRUE(detect_host_leak(x.s, kTh).empty());  // the job still runs: a fall is a fall
  x.s.facts.exit_status = 0;
  const auto f = detect_host_leak(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NEAR(f[0].numbers.at("slope_mib_per_h"), 2000, 20);
  EXPECT_NEAR(f[0].end_s, x.s.t[n - 3], 1e-9);  // the fit ends at the last row before the fall
}

TEST(DiagD3HostLeak, NearMisses) {
  Synth slow(1, 4 * 3600, 10);  // 150 MiB/h < 200
  slow.apply(slow.s.job.rss_mib, 0, 1e9,
             [](double t, float) { return static_cast<float>(8000 + 150 * t / 3600); });
  EXPECT_TRUE(detect_host_leak(slow.s, kTh).empty());
  Synth cache(1, 4 * 3600, 10);  // buff/cache grows 40 GiB, RSS and MemAvailable flat: no leak
  cache.apply(cache.s.host.mem_cached_mib, 0, 1e9,
              [](double t, float) { return static_cast<float>(30000 + 10000 * t / 3600); });
  EXPECT_TRUE(detect_host_leak(cache.s, kTh).empty());
  Synth warmup(1, 4 * 3600, 10);  // rises in the first 30 min, then flat: not a leak
  warmup.apply(warmup.s.job.rss_mib, 0, 1e9,
               [](double t, float) { return static_cast<float>(8000 + 4000 * std::min(1.0, t / 1800)); });
  EXPECT_TRUE(detect_host_leak(warmup.s, kTh).empty());
  Synth brief(1, 1200, 10);  // 20 min is too short to call it
  brief.apply(brief.s.job.rss_mib, 0, 1e9,
              [](double t, float) { return static_cast<float>(8000 + 5000 * t / 3600); });
  EXPECT_TRUE(detect_host_leak(brief.s, kTh).empty());
}

TrainEvent epoch_end(double t, int epoch, double alloc_mib) {
  TrainEvent e;
  e.t = t;
  e.kind = "epoch_end";
  e.epoch = epoch;
  e.gpu = 0;
  e.torch_allocated_bytes = alloc_mib * kMiB;
  return e;
}

TEST(DiagD5MemoryGrowth, GrowthPerEpochAfterTheFirst) {
  Synth x(1, 3600, 10);
  for (int e = 0; e < 6; ++e) x.s.train_events.push_back(epoch_end(500 + 500 * e, e, 3000 + 300 * e));
  const auto f = detect_memory_growth(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NEAR(f[0].numbers.at("growth_mib_per_epoch"), 300, 1e-6);
  EXPECT_DOUBLE_EQ(f[0].numbers.at("epochs"), 5);
  EXPECT_DOUBLE_EQ(f[0].start_s, 1000);
  EXPECT_GT(f[0].numbers.at("epochs_to_full"), 100);
}

TEST(DiagD5MemoryGrowth, NearMisses) {
  Synth slow(1, 3600, 10);  // 150 MiB per epoch
  for (int e = 0; e < 6; ++e) slow.s.train_events.push_back(epoch_end(500 + 500 * e, e, 3000 + 150 * e));
  EXPECT_TRUE(detect_memory_growth(slow.s, kTh).empty());
  Synth first(1, 3600, 10);  // a higher first epoch, then flat
  const double v[] = {3000, 3900, 3910, 3905, 3920, 3915};
  for (int e = 0; e < 6; ++e) first.s.train_events.push_back(epoch_end(500 + 500 * e, e, v[e]));
  EXPECT_TRUE(detect_memory_growth(first.s, kTh).empty());
  Synth few(1, 3600, 10);  // two epochs after the first are not enough
  for (int e = 0; e < 3; ++e) few.s.train_events.push_back(epoch_end(500 + 500 * e, e, 3000 + 900 * e));
  EXPECT_TRUE(detect_memory_growth(few.s, kTh).empty());
}

TEST(DiagD5MemoryGrowth, SlopeFallbackWithoutEpochs) {
  Synth x(1, 2 * 3600, 10);
  x.apply(x.gpu(0).mem_used_mib, 0, 1e9,
          [](double t, float) { return static_cast<float>(20000 + 1000 * t / 3600); });
  auto f = detect_memory_growth(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NEAR(f[0].numbers.at("growth_mib_per_h"), 1000, 5);
  EXPECT_NE(f[0].evidence.find("no epoch events"), std::string::npos);
  Synth slow(1, 2 * 3600, 10);
  slow.apply(slow.gpu(0).mem_used_mib, 0, 1e9,
             [](double t, float) { return static_cast<float>(20000 + 300 * t / 3600); });
  EXPECT_TRUE(detect_memory_growth(slow.s, kTh).empty());
}

TEST(DiagD21NearFull, SustainedAboveNinetyFivePercent) {
  Synth x(1, 600);
  x.set(x.gpu(0).mem_used_mib, 200, 260, 79000);  // + 500 reserved = 97 %
  const auto f = detect_memory_near_full(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_DOUBLE_EQ(f[0].start_s, 200);
  EXPECT_DOUBLE_EQ(f[0].end_s, 260);
  EXPECT_FLOAT_EQ(static_cast<float>(f[0].numbers.at("peak_used_mib")), 79500.f);
}

TEST(DiagD21NearFull, ForecastsTimeToFull) {
  Synth x(1, 1800);
  x.apply(x.gpu(0).mem_used_mib, 1200, 1800,
          [](double t, float) { return static_cast<float>(68000 + 4000 * (t - 1200) / 600); });
  const auto f = detect_memory_near_full(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NEAR(f[0].numbers.at("eta_s"), (81920 - 72500) / (4000.0 / 600), 5);
}

TEST(DiagD21NearFull, NearMisses) {
  Synth under(1, 600);  // 77500 / 81920 = 94.6 %
  under.set(under.gpu(0).mem_used_mib, 100, 500, 77000);
  EXPECT_TRUE(detect_memory_near_full(under.s, kTh).empty());
  Synth brief(1, 600);
  brief.set(brief.gpu(0).mem_used_mib, 200, 205, 79000);
  EXPECT_TRUE(detect_memory_near_full(brief.s, kTh).empty());
  Synth flat(1, 1800);  // steady at 85 %: no forecast
  flat.set(flat.gpu(0).mem_used_mib, 0, 1800, 69000, 20);
  EXPECT_TRUE(detect_memory_near_full(flat.s, kTh).empty());
}

TEST(DiagD22BatchSize, FitsFixedPlusPerSample) {
  Synth x(1, 600);
  int k = 0;
  for (int b : {16, 32, 64}) {
    TrainEvent e;
    e.t = 100.0 * ++k;
    e.kind = "batch_end";
    e.gpu = 0;
    e.batch_size = b;
    e.torch_peak_bytes = (3000 + 150.0 * b) * kMiB;
    x.s.train_events.push_back(e);
  }
  const auto f = detect_batch_size(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::info);
  EXPECT_DOUBLE_EQ(f[0].numbers.at("max_batch"), 471);  // (81920 * 0.9 - 3000) / 150 = 471.5
  EXPECT_NEAR(f[0].numbers.at("fixed_mib"), 3000, 1e-6);
  EXPECT_NEAR(f[0].numbers.at("per_sample_mib"), 150, 1e-9);
  EXPECT_NEAR(f[0].numbers.at("r2"), 1, 1e-9);
  EXPECT_DOUBLE_EQ(f[0].numbers.at("points"), 3);
}

TEST(DiagD22BatchSize, OnePointUsesTheMissionFormula) {
  Synth x(1, 600);
  x.set(x.gpu(0).mem_used_mib, 0, 600, 12000);
  TrainEvent e;
  e.t = 300;
  e.kind = "epoch_end";
  e.gpu = 0;
  e.batch_size = 16;
  e.torch_peak_bytes = 9000 * kMiB;
  x.s.train_events.push_back(e);
  const auto f = detect_batch_size(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_DOUBLE_EQ(f[0].numbers.at("max_batch"), 127);  // 16 * (81920 - 2000) / (12000 - 2000) = 127.9
  EXPECT_NE(f[0].evidence.find("rough estimate"), std::string::npos);
  Synth none(1, 600);
  EXPECT_TRUE(detect_batch_size(none.s, kTh).empty());
}

// ---- kinds of mistakes (issue 18) -----------------------------------------------------------------

TEST(DiagMemoryNaming, EventsFromAProcessThatDoesNotKnowItsDeviceNameTheJobsOnlyGpu) {
  // D1 from torch events with gpu -1 on a one-GPU job: GPU0 (it was nameless)
  Synth x(1, 600);
  for (int k = 0; k < 5; ++k) {
    auto e = mem_event(100 + 60 * k, 10240, 20480);
    e.gpu = -1;
    x.s.train_events.push_back(e);
  }
  auto f = detect_fragmentation(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].gpus, std::vector<unsigned>{0});
  // D5 from epoch ends alike
  Synth y(1, 600);
  for (int ep = 0; ep < 6; ++ep) {
    TrainEvent e;
    e.t = 50.0 + 90 * ep;
    e.kind = "epoch_end";
    e.epoch = ep;
    e.torch_allocated_bytes = (20000 + 400.0 * ep) * kMiB;
    y.s.train_events.push_back(e);
  }
  f = detect_memory_growth(y.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].gpus, std::vector<unsigned>{0});
  // D22 with two job GPUs and events that do not say which: no advice (it would be a guess)
  Synth z(2, 600);
  int k = 0;
  for (int b : {16, 32, 64}) {
    TrainEvent e;
    e.t = 100.0 * ++k;
    e.kind = "batch_end";
    e.batch_size = b;
    e.torch_peak_bytes = (3000 + 150.0 * b) * kMiB;
    z.s.train_events.push_back(e);
  }
  EXPECT_TRUE(detect_batch_size(z.s, kTh).empty());
  z.s.facts.gpus = {1};  // one job GPU: that one
  f = detect_batch_size(z.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].gpus, std::vector<unsigned>{1});
}

TEST(DiagImpossibleReadings, NoFindingRestsOnThem) {
  // memory used above total on GPU0 for 5 min: D21 "near full" would rest on an impossible reading
  Synth x(1, 600);
  x.set(x.gpu(0).mem_used_mib, 100, 400, 90000);  // of 81920 MiB
  ASSERT_EQ(detect_memory_near_full(x.s, kTh).size(), 1u) << "the raw column would give a finding";
  drop_impossible(x.s, 0, x.rows() - 1);
  EXPECT_TRUE(detect_memory_near_full(x.s, kTh).empty());
  EXPECT_TRUE(std::isnan(x.gpu(0).mem_used_mib[200]));
  EXPECT_FALSE(std::isnan(x.gpu(0).mem_used_mib[50]));
  // used and reserved each below total but their sum above it
  Synth sum(1, 600);
  sum.set(sum.gpu(0).mem_used_mib, 100, 400, 60000);
  sum.set(sum.gpu(0).mem_reserved_mib, 100, 400, 30000);
  drop_impossible(sum.s, 0, sum.rows() - 1);
  EXPECT_TRUE(detect_memory_near_full(sum.s, kTh).empty());
  // a GPU temperature it cannot reach, and a process holding more than the GPU has
  Synth hot(1, 600);
  hot.set(hot.gpu(0).temp_c, 100, 200, 180);
  for (auto& p : hot.gpu(0).procs)
    if (p.tick >= 100 && p.tick <= 200) p.used_mib = 1e6f;
  drop_impossible(hot.s, 0, hot.rows() - 1);
  EXPECT_TRUE(std::isnan(hot.gpu(0).temp_c[150]));
  EXPECT_FALSE(std::isnan(hot.gpu(0).temp_c[50]));
  EXPECT_TRUE(std::isnan(hot.gpu(0).procs[150].used_mib));
  EXPECT_EQ(hot.gpu(0).procs[50].used_mib, 29500.f);
  // torch memory above the GPU's total is not evidence either (D1)
  Synth t(1, 600);
  for (int k = 0; k < 5; ++k) t.s.train_events.push_back(mem_event(100 + 60 * k, 100000, 200000));
  EXPECT_TRUE(detect_fragmentation(t.s, kTh).empty());
}

}  // namespace
}  // namespace trainmon::diagnose
