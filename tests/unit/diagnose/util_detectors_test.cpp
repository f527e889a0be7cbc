// SPDX-License-Identifier: Apache-2.0
// D2, D4, D6, D7, D8, D11: utilisation-based detectors, each with a trigger and near misses.
#include <gtest/gtest.h>

#include "trainmon/diagnose/detectors.h"
#include "unit/diagnose/synth.h"

namespace trainmon::diagnose {
namespace {
using testing::Synth;
const Thresholds kTh;

TEST(DiagD2Imbalance, SpreadAboveFifteenTriggers) {
  Synth x(2, 600);
  x.set(x.gpu(1).util_gpu_pct, 100, 400, 60, 2);
  const auto f = detect_imbalance(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].code, "D2");
  EXPECT_EQ(f[0].gpus, (std::vector<unsigned>{0, 1}));
  EXPECT_GT(f[0].numbers.at("spread_pct"), 20);
  EXPECT_LT(f[0].numbers.at("spread_pct"), 32);
  EXPECT_GT(f[0].start_s, 120);
  EXPECT_LT(f[0].start_s, 140);
  EXPECT_NE(f[0].evidence.find("GPU1 mean"), std::string::npos);
}

TEST(DiagD2Imbalance, NearMisses) {
  Synth under(2, 600);
  under.set(under.gpu(1).util_gpu_pct, 100, 400, 77, 2);  // spread 13 < 15
  EXPECT_TRUE(detect_imbalance(under.s, kTh).empty());
  Synth brief(2, 600);
  brief.set(brief.gpu(1).util_gpu_pct, 100, 140, 60, 2);  // 40 s dip: condition holds < 60 s
  EXPECT_TRUE(detect_imbalance(brief.s, kTh).empty());
  Synth one(1, 600);
  EXPECT_TRUE(detect_imbalance(one.s, kTh).empty());
}

TEST(DiagD4Dataloader, LowUtilWithIdleCpuTriggersAndCountsSwings) {
  Synth x(1, 900);
  x.set(x.gpu(0).util_gpu_pct, 200, 700, 25, 5);
  x.set(x.s.host.cpu_busy_pct, 0, 900, 20, 2);
  for (double t = 300; t < 400; t += 0.25) {
    x.gpu(0).hires_util.t.push_back(t);
    x.gpu(0).hires_util.value.push_back(static_cast<int>(t) % 4 < 2 ? 0.f : 88.f);
  }
  const auto f = detect_dataloader(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].slug, "dataloader-starved");
  EXPECT_EQ(f[0].gpus, std::vector<unsigned>{0});
  EXPECT_EQ(f[0].pids, std::vector<std::uint32_t>{1000});
  EXPECT_NEAR(f[0].numbers.at("mean_util_pct"), 27, 4);
  EXPECT_GE(f[0].numbers.at("swing_cycles"), 20);
  EXPECT_NEAR(f[0].numbers.at("job_cpu_share_pct"), 400.0 / 32, 1);  // the job's 4 of 32 cores
  EXPECT_GE(f[0].start_s, 240);
  EXPECT_LE(f[0].end_s, 760);
}

TEST(DiagD4Dataloader, MainProcessPinnedCountsAsCpuEvidence) {
  Synth x(1, 900);
  x.set(x.gpu(0).util_gpu_pct, 200, 700, 25, 5);
  x.set(x.s.job.main_cpu_pct, 0, 900, 99, 1);
  ASSERT_EQ(detect_dataloader(x.s, kTh).size(), 1u);
}

TEST(DiagD4Dataloader, NearMisses) {
  Synth above(1, 900);  // 45 % is not under 40 %
  above.set(above.gpu(0).util_gpu_pct, 200, 700, 45, 3);
  above.set(above.s.host.cpu_busy_pct, 0, 900, 20);
  EXPECT_TRUE(detect_dataloader(above.s, kTh).empty());
  Synth busy_cpu(1, 900);  // no CPU-side evidence: the job's processes use half the cores, main 60 %
  busy_cpu.set(busy_cpu.gpu(0).util_gpu_pct, 200, 700, 25, 5);
  busy_cpu.set(busy_cpu.s.job.cpu_pct, 0, 900, 1600, 20);
  EXPECT_TRUE(detect_dataloader(busy_cpu.s, kTh).empty());
  Synth brief(1, 900);  // a 60 s dip never keeps the rolling mean low for 120 s
  brief.set(brief.gpu(0).util_gpu_pct, 200, 260, 25, 5);
  brief.set(brief.s.host.cpu_busy_pct, 0, 900, 20);
  EXPECT_TRUE(detect_dataloader(brief.s, kTh).empty());
}

TEST(DiagD6PowerBound, PowerAtCapWithLowUtil) {
  Synth x(1, 600);
  x.set(x.gpu(0).power_w, 100, 500, 385, 3);
  x.set(x.gpu(0).util_gpu_pct, 100, 500, 65, 2);
  auto f = detect_power_bound(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].numbers.at("bandwidth_bound"), 0);
  EXPECT_NEAR(f[0].numbers.at("power_w"), 385, 5);
  x.set(x.gpu(0).gpm_dram_pct, 0, 600, 85);
  f = detect_power_bound(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].numbers.at("bandwidth_bound"), 1);
  EXPECT_NE(f[0].evidence.find("bandwidth bound"), std::string::npos);
}

TEST(DiagD6PowerBound, NearMisses) {
  Synth low_power(1, 600);  // 375 W is 93.75 % of 400 W
  low_power.set(low_power.gpu(0).power_w, 100, 500, 375, 2);
  low_power.set(low_power.gpu(0).util_gpu_pct, 100, 500, 65, 2);
  EXPECT_TRUE(detect_power_bound(low_power.s, kTh).empty());
  Synth busy(1, 600);  // at the cap but busy: that is just full load
  busy.set(busy.gpu(0).power_w, 100, 500, 390, 2);
  busy.set(busy.gpu(0).util_gpu_pct, 100, 500, 84, 1);
  EXPECT_TRUE(detect_power_bound(busy.s, kTh).empty());
}

TEST(DiagD7WrongDevice, IntendedGpuIdleWhileJobRunsElsewhere) {
  Synth x(2, 600);
  x.s.facts.gpus = {0};
  x.drop_procs(0, 0, 600);
  x.set(x.gpu(0).util_gpu_pct, 0, 600, 0);
  const auto f = detect_wrong_device(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].numbers.at("intended_gpu"), 0);
  EXPECT_EQ(f[0].gpus, (std::vector<unsigned>{0, 1}));
  EXPECT_EQ(f[0].pids, std::vector<std::uint32_t>{1001});
}

TEST(DiagD7WrongDevice, MemoryHeldOnAnIdleGpu) {
  Synth x(2, 900);
  x.set(x.gpu(1).util_gpu_pct, 0, 900, 0);
  for (auto& p : x.gpu(1).procs) p.used_mib = 600;
  const auto f = detect_wrong_device(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].gpus, std::vector<unsigned>{1});
  EXPECT_EQ(f[0].numbers.at("held_unused"), 1);
  EXPECT_NEAR(f[0].numbers.at("held_mib"), 600, 1e-3);
  EXPECT_TRUE(detect_ddp_not_running(x.s, kTh).empty());  // it has a process: D7, not D8
}

TEST(DiagD7WrongDevice, NearMisses) {
  Synth used(2, 900);  // 30 % is used, not idle
  used.set(used.gpu(1).util_gpu_pct, 0, 900, 30, 2);
  EXPECT_TRUE(detect_wrong_device(used.s, kTh).empty());
  Synth brief(2, 900);  // idle 200 s only
  brief.set(brief.gpu(1).util_gpu_pct, 100, 300, 0);
  EXPECT_TRUE(detect_wrong_device(brief.s, kTh).empty());
  Synth healthy(2, 900);
  healthy.s.facts.gpus = {0, 1};
  EXPECT_TRUE(detect_wrong_device(healthy.s, kTh).empty());
}

TEST(DiagD8DdpNotRunning, OneBusyOthersIdleWithoutProcess) {
  Synth x(4, 600);
  for (unsigned g = 1; g < 4; ++g) {
    x.drop_procs(g, 0, 600);
    x.set(x.gpu(g).util_gpu_pct, 0, 600, 0);
    x.set(x.gpu(g).mem_used_mib, 0, 600, 0);
  }
  const auto f = detect_ddp_not_running(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].gpus, (std::vector<unsigned>{0, 1, 2, 3}));
  EXPECT_EQ(f[0].pids, std::vector<std::uint32_t>{1000});
  EXPECT_LT(f[0].numbers.at("gpu2_mean_util_pct"), 1);
  EXPECT_TRUE(detect_imbalance(x.s, kTh).empty());  // D2 is for GPUs that all hold the job
}

TEST(DiagD8DdpNotRunning, NearMisses) {
  Synth single(4, 600);
  single.s.facts.gpus = {0};  // a one-GPU job leaving others idle is fine
  for (unsigned g = 1; g < 4; ++g) {
    single.drop_procs(g, 0, 600);
    single.set(single.gpu(g).util_gpu_pct, 0, 600, 0);
  }
  EXPECT_TRUE(detect_ddp_not_running(single.s, kTh).empty());
  Synth brief(2, 600);
  brief.drop_procs(1, 100, 140);
  brief.set(brief.gpu(1).util_gpu_pct, 100, 140, 0);
  EXPECT_TRUE(detect_ddp_not_running(brief.s, kTh).empty());
}

TEST(DiagD11Utilization, BandsAndSeverity) {
  Synth healthy(2, 900);  // 90 %: healthy, nothing to do, no finding
  auto f = detect_utilization(healthy.s, kTh);
  EXPECT_TRUE(f.empty());
  Synth low(2, 900);
  low.set(low.gpu(1).util_gpu_pct, 0, 900, 30, 3);
  f = detect_utilization(low.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::warning);
  EXPECT_EQ(f[0].gpus, std::vector<unsigned>{1});
  EXPECT_NEAR(f[0].numbers.at("gpu1_mean_util_pct"), 30, 0.5);
  ASSERT_TRUE(f[0].cost);
  EXPECT_NEAR(f[0].cost->share, 1 - 30.0 / 95, 0.01);
  EXPECT_EQ(f[0].cost->basis, "estimated");
  Synth mid(1, 900);
  mid.set(mid.gpu(0).util_gpu_pct, 0, 900, 55, 3);
  f = detect_utilization(mid.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::info);
  EXPECT_NE(f[0].evidence.find("headroom"), std::string::npos);
}

TEST(DiagD11Utilization, NearMisses) {
  Synth saturated(1, 900);
  saturated.set(saturated.gpu(0).util_gpu_pct, 0, 900, 98, 0.5);
  EXPECT_TRUE(detect_utilization(saturated.s, kTh).empty());
  Synth brief(1, 200);  // under util_min_span_s of use
  brief.set(brief.gpu(0).util_gpu_pct, 0, 200, 20);
  EXPECT_TRUE(detect_utilization(brief.s, kTh).empty());
}

// ---- kinds of mistakes (issue 18): each test would have caught one -------------------------------

TEST(DiagD2Imbalance, TheBusiestGpuThrottledIsTheStragglerNotTheLoader) {
  // GPU0 is thermally throttled at 1000 of 1410 MHz and therefore the busiest; GPU1 waits for it
  Synth x(2, 600);
  x.set(x.gpu(1).util_gpu_pct, 100, 500, 55, 2);
  x.set(x.gpu(0).sm_clock_mhz, 0, 600, 1000);
  for (auto& r : x.gpu(0).clock_reasons) r = clock_event::sw_thermal_slowdown;
  const auto f = detect_imbalance(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].numbers.at("straggler_gpu"), 0);
  EXPECT_NE(
      f[0].evidence.find("GPU0 is the busiest because it is the slowest: throttled (thermal slowdown) at "
                         "1000 of 1410 MHz"),
      std::string::npos)
      << f[0].evidence;
  EXPECT_NE(f[0].advice.find("GPU0 is the straggler"), std::string::npos);
  EXPECT_EQ(f[0].advice.find("DataLoader"), std::string::npos)
      << "no loader advice for a throttled straggler";
  ASSERT_TRUE(f[0].cost);
  EXPECT_NEAR(f[0].cost->speedup, 1410.0 / 1000, 0.01);
  // only clocked below max (no reason reported): the same
  Synth y(2, 600);
  y.set(y.gpu(1).util_gpu_pct, 100, 500, 55, 2);
  y.set(y.gpu(0).sm_clock_mhz, 0, 600, 1100);
  const auto g = detect_imbalance(y.s, kTh);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_NE(g[0].evidence.find("clocked below its maximum at 1100 of 1410 MHz"), std::string::npos)
      << g[0].evidence;
  // at full clocks the loader advice stays
  Synth z(2, 600);
  z.set(z.gpu(1).util_gpu_pct, 100, 500, 55, 2);
  const auto h = detect_imbalance(z.s, kTh);
  ASSERT_EQ(h.size(), 1u);
  EXPECT_FALSE(h[0].numbers.contains("straggler_gpu"));
  EXPECT_NE(h[0].advice.find("DataLoader"), std::string::npos);
}

TEST(DiagD4Dataloader, SwingingUtilisationIsStarvationWhateverItsMean) {
  // 0 % / 95 % every other 2 s: a mean near 50 %, above starved_util_pct, yet the GPU waits half the time
  Synth x(1, 900);
  x.apply(x.gpu(0).util_gpu_pct, 200, 700,
          [](double t, float) { return static_cast<int>(t) % 4 < 2 ? 0.f : 95.f; });
  const auto f = detect_dataloader(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_GT(f[0].numbers.at("mean_util_pct"), kTh.starved_util_pct);
  EXPECT_GE(f[0].numbers.at("swing_cycles"), 100);
  EXPECT_NE(f[0].evidence.find("although its mean looks busy"), std::string::npos) << f[0].evidence;
  // the same from hi-res samples with per-tick means of 50 %
  Synth h(1, 900);
  h.set(h.gpu(0).util_gpu_pct, 200, 700, 50, 2);
  for (double t = 200; t < 700; t += 0.25) {
    h.gpu(0).hires_util.t.push_back(t);
    h.gpu(0).hires_util.value.push_back(static_cast<int>(t * 4) % 4 < 2 ? 2.f : 92.f);
  }
  EXPECT_EQ(detect_dataloader(h.s, kTh).size(), 1u);
  // healthy noise around 90 % never swings
  Synth calm(1, 900);
  EXPECT_TRUE(detect_dataloader(calm.s, kTh).empty());
  // D19 sees the same waiting GPU (the job's main process pinned)
  x.set(x.s.job.main_cpu_pct, 0, 900, 99, 0.5);
  EXPECT_EQ(detect_cpu_bound(x.s, kTh).size(), 1u);
}

TEST(DiagD19CpuBound, OnlyTheJobsOwnCpuCounts) {
  // the GPU waits and the host is 95 % busy, but the job itself uses 4 of 32 cores: other users' load
  Synth x(1, 900);
  x.set(x.gpu(0).util_gpu_pct, 100, 800, 20, 3);
  x.set(x.s.host.cpu_busy_pct, 0, 900, 95, 1);
  EXPECT_TRUE(detect_cpu_bound(x.s, kTh).empty());
  // the job's own tree on 30 of the 32 cores: CPU-bound
  x.set(x.s.job.cpu_pct, 0, 900, 3000, 10);
  const auto f = detect_cpu_bound(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NEAR(f[0].numbers.at("job_cpu_share_pct"), 3000.0 / 32, 1);
  EXPECT_NE(f[0].evidence.find("the job's processes keep 94 % of the machine's cores busy"),
            std::string::npos)
      << f[0].evidence;
  // D4's CPU sign likewise: an idle job on a host others keep busy still counts as "CPU low"
  Synth y(1, 900);
  y.set(y.gpu(0).util_gpu_pct, 200, 700, 25, 3);
  y.set(y.s.host.cpu_busy_pct, 0, 900, 95, 1);
  EXPECT_EQ(detect_dataloader(y.s, kTh).size(), 1u);
}

}  // namespace
}  // namespace trainmon::diagnose
