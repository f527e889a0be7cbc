// SPDX-License-Identifier: Apache-2.0
// D9, D10, D12-D16: detectors on NVML health data, each with a trigger and near misses.
#include <gtest/gtest.h>

#include <limits>

#include "trainmon/diagnose/detectors.h"
#include "unit/diagnose/synth.h"

namespace trainmon::diagnose {
namespace {
using testing::Synth;
const Thresholds kTh;

void add_proc(Synth& x, unsigned gpu, std::uint32_t pid, double t0, double t1, float mib, float sm,
              HostVisibility h) {
  auto& p = x.gpu(gpu).procs;
  for (std::size_t i = 0; i < x.rows(); ++i)
    if (x.s.t[i] >= t0 && x.s.t[i] <= t1)
      p.push_back({static_cast<std::uint32_t>(i), pid, mib, sm, h, false});
  std::stable_sort(p.begin(), p.end(),
                   [](const GpuProcTick& a, const GpuProcTick& b) { return a.tick < b.tick; });
}

TEST(DiagD9Ghost, ExitedAndZombieHolders) {
  Synth x(1, 600);
  add_proc(x, 0, 4242, 0, 120, 2000, kNA, HostVisibility::exited);
  add_proc(x, 0, 4343, 200, 300, 1500, kNA, HostVisibility::zombie);
  const auto f = detect_ghost_processes(x.s, kTh);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].pids, std::vector<std::uint32_t>{4242});
  EXPECT_EQ(f[0].numbers.at("zombie"), 0);
  EXPECT_DOUBLE_EQ(f[0].numbers.at("used_mib"), 2000);
  EXPECT_NE(f[0].evidence.find("gone (exited"), std::string::npos) << f[0].evidence;
  EXPECT_EQ(f[0].advice.find("kill -TERM 4242"), std::string::npos);  // it has exited: nothing to end
  EXPECT_NE(f[0].advice.find("fuser -v /dev/nvidia*"), std::string::npos);
  EXPECT_EQ(f[1].pids, std::vector<std::uint32_t>{4343});
  EXPECT_EQ(f[1].numbers.at("zombie"), 1);
  EXPECT_EQ(f[1].advice.find("nvidia-smi -r"), std::string::npos);  // never a reset
}

TEST(DiagD9Ghost, NotVisibleFromThisNamespaceIsNoGhost) {
  // Inside a container every GPU process, the job's own included, is listed under a host pid this
  // /proc cannot see: holding memory for the whole run is no ghost and gets no advice to end it.
  Synth x(1, 600);
  add_proc(x, 0, 4242, 0, 600, 2000, kNA, HostVisibility::not_visible);
  add_proc(x, 0, 4343, 0, 600, 2000, 0, HostVisibility::not_visible);
  EXPECT_TRUE(detect_ghost_processes(x.s, kTh).empty());
}

TEST(DiagD9Ghost, IdleForeignHolder) {
  Synth x(1, 1200);
  add_proc(x, 0, 777, 0, 1000, 1000, 0, HostVisibility::visible);
  const auto f = detect_ghost_processes(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].pids, std::vector<std::uint32_t>{777});
  EXPECT_EQ(f[0].numbers.at("idle_holder"), 1);
}

TEST(DiagD9Ghost, NearMisses) {
  Synth brief(1, 600);
  add_proc(brief, 0, 4242, 0, 20, 2000, kNA, HostVisibility::exited);
  EXPECT_TRUE(detect_ghost_processes(brief.s, kTh).empty());
  Synth working(1, 1200);
  add_proc(working, 0, 777, 0, 1000, 1000, 5, HostVisibility::visible);
  EXPECT_TRUE(detect_ghost_processes(working.s, kTh).empty());
  Synth short_idle(1, 1200);
  add_proc(short_idle, 0, 777, 0, 400, 1000, 0, HostVisibility::visible);
  EXPECT_TRUE(detect_ghost_processes(short_idle.s, kTh).empty());
  Synth healthy(2, 1200);  // the job's own processes are never ghosts
  EXPECT_TRUE(detect_ghost_processes(healthy.s, kTh).empty());
}

TEST(DiagD10Ecc, UncorrectedAboveZeroAndRising) {
  Synth x(2, 600);
  x.set(x.gpu(1).ecc_uncorrected_volatile, 300, 600, 2);
  x.set(x.gpu(1).ecc_uncorrected_volatile, 500, 600, 3);
  const auto f = detect_ecc(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::critical);
  EXPECT_EQ(f[0].gpus, std::vector<unsigned>{1});
  EXPECT_DOUBLE_EQ(f[0].start_s, 300);
  EXPECT_EQ(f[0].numbers.at("uncorrected_last"), 3);
  EXPECT_EQ(f[0].numbers.at("rising"), 1);
}

TEST(DiagD10Ecc, ADriverReloadResetIsNotErrorsGoingAway) {
  // 4 errors from before the run, then the driver is reloaded (the volatile count restarts at 0).
  Synth x(1, 600);
  auto& c = x.gpu(0).ecc_uncorrected_volatile;
  x.set(c, 0, 600, 4);
  x.set(c, 300, 600, 0);
  x.set(x.gpu(0).ecc_corrected_volatile, 0, 600, 9);
  x.set(x.gpu(0).ecc_corrected_volatile, 300, 600, 0);
  auto f = detect_ecc(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].numbers.at("uncorrected_highest"), 4);
  EXPECT_EQ(f[0].numbers.at("uncorrected_last"), 0);
  EXPECT_EQ(f[0].numbers.at("corrected_highest"), 9);
  EXPECT_EQ(f[0].numbers.at("counter_resets"), 2);
  EXPECT_EQ(f[0].numbers.at("rising"), 0);  // 4 -> 0 is no rise, and no repair (it said "errors 0")
  EXPECT_NE(f[0].evidence.find("errors 4"), std::string::npos) << f[0].evidence;
  EXPECT_NE(f[0].evidence.find("reset at 300 s"), std::string::npos) << f[0].evidence;
  EXPECT_NE(f[0].evidence.find("corrected 9"), std::string::npos) << f[0].evidence;

  x.set(c, 500, 600, 1);  // one more after the reset: rising by 1, still 4 at most
  f = detect_ecc(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].numbers.at("uncorrected_increase"), 1);
  EXPECT_EQ(f[0].numbers.at("rising"), 1);
  EXPECT_EQ(f[0].numbers.at("uncorrected_highest"), 4);
  EXPECT_NE(f[0].evidence.find("1 more during the run"), std::string::npos) << f[0].evidence;

  Synth y(1, 600);  // errors during the run, then a reset: 4 new errors, kept
  y.set(y.gpu(0).ecc_uncorrected_volatile, 100, 600, 4);
  y.set(y.gpu(0).ecc_uncorrected_volatile, 300, 600, 0);
  f = detect_ecc(y.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].numbers.at("uncorrected_increase"), 4);
  EXPECT_DOUBLE_EQ(f[0].start_s, 100);
  EXPECT_NE(f[0].evidence.find("errors 4"), std::string::npos) << f[0].evidence;
}

TEST(DiagD12Throttle, AViolationCounterResetIsNoNegativeTime) {
  Synth x(1, 600);
  auto& g = x.gpu(0);
  for (std::size_t i = 100; i <= 300; ++i) g.clock_reasons[i] = clock_event::sw_thermal_slowdown;
  // 0 -> 100 s of violation, a reset at 200 s, then 0 -> 100 s again: 200 s in all
  x.apply(g.viol_thermal_s, 100, 600,
          [](double t, float) { return static_cast<float>(t < 200 ? t - 100 : std::min(t, 300.0) - 200); });
  const auto f = detect_throttle(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NEAR(f[0].numbers.at("violation_s"), 199, 1.5);
  EXPECT_NE(f[0].evidence.find("violation counter +"), std::string::npos);
}

TEST(DiagD10Ecc, ZeroOrUnsupportedIsSilent) {
  Synth zero(1, 600);
  EXPECT_TRUE(detect_ecc(zero.s, kTh).empty());
  Synth na(1, 600);
  na.set(na.gpu(0).ecc_uncorrected_volatile, 0, 600, kNA);
  EXPECT_TRUE(detect_ecc(na.s, kTh).empty());
}

TEST(DiagD12Throttle, ThermalUnderLoadIsAWarningPowerCapInfo) {
  Synth x(1, 600);
  auto& g = x.gpu(0);
  for (std::size_t i = 100; i <= 200; ++i) g.clock_reasons[i] = clock_event::sw_thermal_slowdown;
  for (std::size_t i = 300; i <= 400; ++i) g.clock_reasons[i] = clock_event::sw_power_cap;
  x.set(g.sm_clock_mhz, 100, 200, 1100);
  x.set(g.sm_clock_mhz, 300, 400, 1150);  // the cap costs: 1150 of 1410 MHz
  x.set(g.temp_c, 100, 200, 88);
  x.apply(g.viol_thermal_s, 100, 600,
          [](double t, float) { return static_cast<float>(std::min(t, 200.0) - 100); });
  const auto f = detect_throttle(x.s, kTh);
  ASSERT_EQ(f.size(), 2u);
  const auto& th = f[0].numbers.at("reason_mask") == clock_event::sw_power_cap ? f[1] : f[0];
  const auto& pw = f[0].numbers.at("reason_mask") == clock_event::sw_power_cap ? f[0] : f[1];
  EXPECT_EQ(th.severity, Severity::warning);
  EXPECT_DOUBLE_EQ(th.start_s, 100);
  EXPECT_DOUBLE_EQ(th.end_s, 200);
  EXPECT_NEAR(th.numbers.at("sm_clock_mhz"), 1100, 1e-3);
  EXPECT_NEAR(th.numbers.at("violation_s"), 100, 1e-3);
  EXPECT_NEAR(th.numbers.at("temp_slowdown_c"), 87, 1e-6);
  EXPECT_EQ(pw.severity, Severity::info);
  ASSERT_TRUE(pw.cost);
  EXPECT_NEAR(pw.cost->share, 1 - 1150.0 / 1410, 0.01);
  // at the cap with the clock at its maximum: a busy GPU doing its job, nothing to do, no finding
  Synth full(1, 600);
  for (std::size_t i = 300; i <= 400; ++i) full.gpu(0).clock_reasons[i] = clock_event::sw_power_cap;
  EXPECT_TRUE(detect_throttle(full.s, kTh).empty());
}

TEST(DiagD12Throttle, NearMisses) {
  Synth idle(1, 600);  // reason set but the GPU is idle
  for (std::size_t i = 100; i <= 200; ++i) idle.gpu(0).clock_reasons[i] = clock_event::sw_thermal_slowdown;
  idle.set(idle.gpu(0).util_gpu_pct, 100, 200, 5);
  EXPECT_TRUE(detect_throttle(idle.s, kTh).empty());
  Synth idle_bit(1, 600);
  for (std::size_t i = 100; i <= 200; ++i)
    idle_bit.gpu(0).clock_reasons[i] = clock_event::gpu_idle | clock_event::sw_power_cap;
  EXPECT_TRUE(detect_throttle(idle_bit.s, kTh).empty());
  Synth brief(1, 600);
  for (std::size_t i = 100; i <= 120; ++i) brief.gpu(0).clock_reasons[i] = clock_event::hw_slowdown;
  EXPECT_TRUE(detect_throttle(brief.s, kTh).empty());
}

TEST(DiagD13Xid, MeaningsSeverityAndGrouping) {
  Synth x(2, 600);
  x.s.gpu_events = {
      {100, 1, 0x8, 79}, {200, 0, 0x8, 13}, {210, 0, 0x8, 13}, {400, 0, 0x8, 999}, {50, 0, 0x4, 0}};
  const auto f = detect_xid(x.s, kTh);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].numbers.at("xid"), 13);
  EXPECT_EQ(f[0].numbers.at("count"), 2);
  EXPECT_EQ(f[0].severity, Severity::warning);
  EXPECT_EQ(f[1].numbers.at("xid"), 999);
  EXPECT_EQ(f[2].numbers.at("xid"), 79);
  EXPECT_EQ(f[2].severity, Severity::critical);
  EXPECT_NE(f[2].evidence.find("fallen off the bus"), std::string::npos);
  for (unsigned code : {13u, 31u, 43u, 48u, 63u, 64u, 74u, 79u, 92u, 94u, 95u})
    EXPECT_EQ(xid_info(code).xid, code);
  EXPECT_EQ(xid_info(48).severity, Severity::critical);
  EXPECT_EQ(xid_info(94).severity, Severity::warning);
  EXPECT_EQ(xid_info(12345).xid, 0u);
}

TEST(DiagD14GpuLost, LostUntilTheEndAndATimeoutThatRecovers) {
  Synth x(2, 600);
  for (std::size_t i = 300; i < x.rows(); ++i) x.gpu(1).state[i] = GpuState::lost;
  for (std::size_t i = 100; i <= 110; ++i) x.gpu(0).state[i] = GpuState::timeout;
  const auto f = detect_gpu_lost(x.s, kTh);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].gpus, std::vector<unsigned>{0});
  EXPECT_EQ(f[0].numbers.at("recovered"), 1);
  EXPECT_EQ(f[0].numbers.at("timeout_rows"), 11);
  EXPECT_EQ(f[1].gpus, std::vector<unsigned>{1});
  EXPECT_EQ(f[1].severity, Severity::critical);
  EXPECT_DOUBLE_EQ(f[1].start_s, 300);
  EXPECT_EQ(f[1].numbers.at("recovered"), 0);
}

TEST(DiagD14GpuLost, AbsentBeforeFirstSeenIsNotLost) {
  Synth x(1, 600);
  for (std::size_t i = 0; i < 100; ++i) x.gpu(0).state[i] = GpuState::absent;
  EXPECT_TRUE(detect_gpu_lost(x.s, kTh).empty());
}

TEST(DiagD14GpuLost, NeverAnsweredIsNotRespondingToo) {
  // GPU 1 hangs from the first call: its first rows are "not collected yet" (state ok, no value:
  // slower than the tick), then timeouts. GPU 2 appears at 100 s and never answers. Both are D14,
  // from their first row; GPU 0 answers throughout.
  Synth x(3, 600);
  const float na = std::numeric_limits<float>::quiet_NaN();
  for (std::size_t i = 0; i < x.rows(); ++i) {
    x.gpu(1).util_gpu_pct[i] = x.gpu(1).mem_used_mib[i] = na;
    x.gpu(1).state[i] = i < 2 ? GpuState::ok : GpuState::timeout;
    x.gpu(2).util_gpu_pct[i] = x.gpu(2).mem_used_mib[i] = na;
    x.gpu(2).state[i] = i < 100 ? GpuState::absent : GpuState::failed;
  }
  const auto f = detect_gpu_lost(x.s, kTh);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].gpus, std::vector<unsigned>{1});
  EXPECT_EQ(f[0].severity, Severity::critical);
  EXPECT_DOUBLE_EQ(f[0].start_s, 0);
  EXPECT_EQ(f[0].numbers.at("never_answered"), 1);
  EXPECT_EQ(f[0].numbers.at("timeout_rows"), static_cast<double>(x.rows() - 2));
  EXPECT_NE(f[0].evidence.find("GPU1 has not responded since the start (0 s): NVML calls hang"),
            std::string::npos)
      << f[0].evidence;
  EXPECT_EQ(f[1].gpus, std::vector<unsigned>{2});
  EXPECT_DOUBLE_EQ(f[1].start_s, 100);
  EXPECT_NE(f[1].evidence.find("GPU2 has not responded since it appeared (100 s)"), std::string::npos)
      << f[1].evidence;
  // One that answered first: "stopped responding", from its first bad row.
  Synth y(1, 600);
  for (std::size_t i = 200; i < y.rows(); ++i) y.gpu(0).state[i] = GpuState::timeout;
  const auto g = detect_gpu_lost(y.s, kTh);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_DOUBLE_EQ(g[0].start_s, 200);
  EXPECT_EQ(g[0].numbers.at("never_answered"), 0);
  EXPECT_NE(g[0].evidence.find("GPU0 stopped responding at 200 s"), std::string::npos) << g[0].evidence;
}

TEST(DiagD15Retirement, PendingFailureAndPages) {
  Synth pending(1, 600);
  pending.set(pending.gpu(0).remapped_pending, 100, 600, 1);
  auto f = detect_memory_retirement(pending.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::warning);
  EXPECT_DOUBLE_EQ(f[0].start_s, 100);
  Synth failure(1, 600);
  failure.set(failure.gpu(0).remapped_failure, 400, 600, 1);
  f = detect_memory_retirement(failure.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::critical);
  Synth pages(1, 600);
  pages.set(pages.gpu(0).retired_pages, 250, 600, 2);
  f = detect_memory_retirement(pages.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].numbers.at("retired_pages_last"), 2);
  Synth clean(1, 600);
  clean.set(clean.gpu(0).remapped_cor, 0, 600, 3);  // correctable remaps alone are routine
  EXPECT_TRUE(detect_memory_retirement(clean.s, kTh).empty());
}

TEST(DiagD16Pcie, BelowMaxUnderLoad) {
  Synth x(1, 600);
  x.set(x.gpu(0).pcie_gen, 100, 300, 3);
  const auto f = detect_pcie_link(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].numbers.at("gen"), 3);
  EXPECT_EQ(f[0].numbers.at("gen_max"), 4);
  EXPECT_DOUBLE_EQ(f[0].end_s - f[0].start_s, 200);
}

TEST(DiagD16Pcie, IdleDownclockAndShortDipsAreFine) {
  Synth idle(1, 600);
  idle.set(idle.gpu(0).pcie_gen, 100, 300, 1);
  idle.set(idle.gpu(0).util_gpu_pct, 100, 300, 0);
  EXPECT_TRUE(detect_pcie_link(idle.s, kTh).empty());
  Synth brief(1, 600);
  brief.set(brief.gpu(0).pcie_width, 100, 130, 8);
  EXPECT_TRUE(detect_pcie_link(brief.s, kTh).empty());
}

}  // namespace
}  // namespace trainmon::diagnose
