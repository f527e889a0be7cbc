// SPDX-License-Identifier: Apache-2.0
// D17-D20: host-side detectors, each with a trigger and near misses.
#include <gtest/gtest.h>

#include "trainmon/diagnose/detectors.h"
#include "unit/diagnose/synth.h"

namespace trainmon::diagnose {
namespace {
using testing::Synth;
const Thresholds kTh;

TEST(DiagD17HostPressure, PsiAndSwapping) {
  Synth psi(1, 600);
  psi.set(psi.s.host.psi_mem_some_avg10, 100, 200, 25);
  auto f = detect_host_pressure(psi.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_DOUBLE_EQ(f[0].start_s, 100);
  EXPECT_DOUBLE_EQ(f[0].numbers.at("psi_mem_some_avg10_max"), 25);
  Synth swap(1, 600);
  swap.set(swap.s.host.mem_available_mib, 100, 300, 12800);  // 5 % of 256000
  swap.apply(swap.s.host.swap_used_mib, 100, 600,
             [](double t, float) { return static_cast<float>(5 * std::min(t - 100, 200.0)); });
  f = detect_host_pressure(swap.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NEAR(f[0].numbers.at("swap_growth_mib"), 1000, 1e-3);
}

TEST(DiagD17HostPressure, NearMisses) {
  Synth low_psi(1, 600);
  low_psi.set(low_psi.s.host.psi_mem_some_avg10, 100, 200, 9);
  EXPECT_TRUE(detect_host_pressure(low_psi.s, kTh).empty());
  Synth no_swap(1, 600);  // little available memory but nothing swapped and no stalls
  no_swap.set(no_swap.s.host.mem_available_mib, 100, 300, 12800);
  EXPECT_TRUE(detect_host_pressure(no_swap.s, kTh).empty());
  Synth brief(1, 600);
  brief.set(brief.s.host.psi_mem_some_avg10, 100, 120, 40);
  EXPECT_TRUE(detect_host_pressure(brief.s, kTh).empty());
}

void gpus_wait(Synth& x, double t0, double t1) {
  for (auto& g : x.s.gpus) x.set(g.util_gpu_pct, t0, t1, 20, 3);
}

TEST(DiagD18IoBound, GpuWaitsWhileDiskBusy) {
  Synth x(2, 600);
  gpus_wait(x, 100, 400);
  x.set(x.s.host.cpu_iowait_pct, 100, 400, 35);
  x.set(x.s.host.disk_read_bps, 100, 400, 200 * 1048576.f);
  const auto f = detect_io_bound(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].gpus, (std::vector<unsigned>{0, 1}));
  EXPECT_NEAR(f[0].numbers.at("iowait_pct"), 35, 3);
  EXPECT_NE(f[0].evidence.find("MiB/s"), std::string::npos);
}

TEST(DiagD18IoBound, NearMisses) {
  Synth no_reads(1, 600);  // iowait without reads: something else
  gpus_wait(no_reads, 100, 400);
  no_reads.set(no_reads.s.host.cpu_iowait_pct, 100, 400, 35);
  EXPECT_TRUE(detect_io_bound(no_reads.s, kTh).empty());
  Synth gpu_fine(1, 600);
  gpu_fine.set(gpu_fine.s.host.cpu_iowait_pct, 100, 400, 35);
  gpu_fine.set(gpu_fine.s.host.disk_read_bps, 100, 400, 200 * 1048576.f);
  EXPECT_TRUE(detect_io_bound(gpu_fine.s, kTh).empty());
}

TEST(DiagD19CpuBound, MainProcessPinnedWithFewWorkers) {
  Synth x(1, 600);
  gpus_wait(x, 100, 400);
  x.set(x.s.job.main_cpu_pct, 100, 400, 99, 1);
  x.set(x.s.job.workers, 0, 600, 2);
  auto f = detect_cpu_bound(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NEAR(f[0].numbers.at("main_cpu_pct"), 97, 4);
  EXPECT_EQ(f[0].numbers.at("workers"), 2);
  EXPECT_NE(f[0].advice.find("num_workers"), std::string::npos);
  Synth sat(1, 600);
  gpus_wait(sat, 100, 400);
  sat.set(sat.s.job.cpu_pct, 100, 400, 31 * 100);  // the job's own processes on 31 of 32 cores
  f = detect_cpu_bound(sat.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].advice.find("augmentation"), std::string::npos);
}

TEST(DiagD19CpuBound, NearMisses) {
  Synth relaxed(1, 600);
  gpus_wait(relaxed, 100, 400);
  relaxed.set(relaxed.s.job.main_cpu_pct, 100, 400, 70);
  EXPECT_TRUE(detect_cpu_bound(relaxed.s, kTh).empty());
  Synth busy_gpu(1, 600);  // a busy main process is fine when the GPU is busy too
  busy_gpu.set(busy_gpu.s.job.main_cpu_pct, 100, 400, 99);
  EXPECT_TRUE(detect_cpu_bound(busy_gpu.s, kTh).empty());
}

TEST(DiagD20OomKilled, FactsCounterAndSigkillWithLowMemory) {
  Synth facts(1, 600);
  facts.s.facts.oom_killed = true;
  auto f = detect_oom_killed(facts.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::critical);
  EXPECT_DOUBLE_EQ(f[0].start_s, 600);
  Synth counter(1, 600);
  counter.set(counter.s.job.oom_kills, 500, 600, 1);
  f = detect_oom_killed(counter.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_DOUBLE_EQ(f[0].start_s, 500);
  Synth sig(1, 600);
  sig.s.facts.signal = 9;
  sig.set(sig.s.host.mem_available_mib, 580, 600, 1000);
  f = detect_oom_killed(sig.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].numbers.at("signal"), 9);
}

TEST(DiagD20OomKilled, AtTheCgroupLimitTheAdviceIsTheLimitNotHostRam) {
  Synth x(1, 600);  // the host keeps ~200 GiB available: its RAM did not run out
  x.s.facts.oom_killed = true;
  x.s.facts.oom_at_cgroup_limit = true;
  x.s.facts.cgroup_memory_limit_mib = 64;
  auto f = detect_oom_killed(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_DOUBLE_EQ(f[0].numbers.at("cgroup_memory_limit_mib"), 64);
  EXPECT_NE(f[0].evidence.find("at its memory cgroup's limit of 64 MiB"), std::string::npos) << f[0].evidence;
  EXPECT_NE(f[0].evidence.find("the host still had"), std::string::npos) << f[0].evidence;
  EXPECT_EQ(f[0].advice.find("Host RAM ran out"), std::string::npos) << f[0].advice;
  EXPECT_NE(f[0].advice.find("memory cgroup limit was reached"), std::string::npos) << f[0].advice;
  // A limit that was not where the kill happened: the host's advice, the limit as a number.
  x.s.facts.oom_at_cgroup_limit = false;
  f = detect_oom_killed(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].advice.find("Host RAM ran out"), std::string::npos);
  EXPECT_DOUBLE_EQ(f[0].numbers.at("cgroup_memory_limit_mib"), 64);
}

TEST(DiagD20OomKilled, NearMisses) {
  Synth sig(1, 600);  // SIGKILL with plenty of memory: someone else killed it
  sig.s.facts.signal = 9;
  EXPECT_TRUE(detect_oom_killed(sig.s, kTh).empty());
  Synth ok(1, 600);
  ok.s.facts.exit_status = 0;
  EXPECT_TRUE(detect_oom_killed(ok.s, kTh).empty());
}

}  // namespace
}  // namespace trainmon::diagnose
