// SPDX-License-Identifier: Apache-2.0
// Issue 34, on series: D3's evidence scaled by danger (a fast leak at once, naming the process that
// grows; a slow one keeps the long window), D20 per OOM kill with the killed process's own RSS, a late
// driver answer under host pressure (D14), and findings that explain each other (cause, the chain
// first in rank_findings, JSON).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "trainmon/diagnose/detectors.h"
#include "trainmon/diagnose/engine.h"
#include "unit/diagnose/synth.h"

namespace trainmon::diagnose {
namespace {
using testing::Synth;
using testing::with_code;
const Thresholds kTh;

/// Adds a process of the job with an RSS column `rss(t)` for rows with t0 <= t <= t1 (gone after).
JobProcess& add_proc(Synth& x, std::uint32_t pid, std::uint32_t ppid, std::string comm, double t0, double t1,
                     const std::function<double(double)>& rss) {
  JobProcess p;
  p.pid = pid;
  p.ppid = ppid;
  p.comm = std::move(comm);
  p.first_t = 1e300;
  p.last_t = -1e300;
  for (std::size_t i = 0; i < x.s.size(); ++i) {
    const double t = x.s.t[i];
    if (t < t0 || t > t1) continue;
    p.first_t = std::min(p.first_t, t);
    p.last_t = std::max(p.last_t, t);
    p.rss_rows.push_back(static_cast<std::uint32_t>(i));
    p.rss_mib.push_back(static_cast<float>(rss(t)));
  }
  auto it = std::lower_bound(x.s.job.procs.begin(), x.s.job.procs.end(), pid,
                             [](const JobProcess& a, std::uint32_t v) { return a.pid < v; });
  return *x.s.job.procs.insert(it, std::move(p));
}

/// The job's RSS column as the sum of its processes' (NaN where none).
void sum_rss(Synth& x) {
  for (std::size_t i = 0; i < x.s.size(); ++i) {
    double sum = 0;
    bool any = false;
    for (const auto& p : x.s.job.procs) {
      auto it = std::find(p.rss_rows.begin(), p.rss_rows.end(), static_cast<std::uint32_t>(i));
      if (it == p.rss_rows.end()) continue;
      sum += p.rss_mib[static_cast<std::size_t>(it - p.rss_rows.begin())];
      any = true;
    }
    x.s.job.rss_mib[i] = any ? static_cast<float>(sum) : kNA;
  }
}

/// A job with a main process (pid 1000, 900 MiB flat) and two DataLoader workers (fork()ed: same
/// program name); worker 1002 grows `rate` MiB/s from t = 20 s, inside a memory cgroup of `limit` MiB.
Synth worker_leak(double seconds, double rate, double limit) {
  Synth x(1, seconds, 1);
  add_proc(x, 1000, 1, "python3", 0, 1e9, [](double) { return 900.0; });
  add_proc(x, 1001, 1000, "python3", 2, 1e9, [](double) { return 300.0; });
  add_proc(x, 1002, 1000, "python3", 2, 1e9,
           [rate](double t) { return 300.0 + rate * std::max(0.0, t - 20); });
  sum_rss(x);
  x.set(x.s.job.memory_limit_mib, 0, 1e9, static_cast<float>(limit));
  return x;
}

TEST(MemoryTruthD3, AFastWorkerLeakIsCriticalAtOnceWithTheTimeLeftAndTheWorker) {
  // 75 MiB/s into an 8 GiB cgroup: 40 s of growth (3000 MiB) leave 8192 - 4500 = 3692 MiB, 49 s.
  Synth x = worker_leak(60, 75, 8192);
  const auto f = detect_host_leak(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::critical);
  EXPECT_EQ(f[0].numbers.at("fast"), 1);
  EXPECT_EQ(f[0].pids, std::vector<std::uint32_t>{1002});
  EXPECT_EQ(f[0].numbers.at("grower_pid"), 1002);
  EXPECT_EQ(f[0].numbers.at("grower_kind"), static_cast<double>(JobProcessKind::worker));
  EXPECT_NEAR(f[0].numbers.at("grower_share"), 1.0, 1e-9);
  EXPECT_NEAR(f[0].numbers.at("slope_mib_per_s"), 75, 0.5);
  EXPECT_DOUBLE_EQ(f[0].numbers.at("cgroup_memory_limit_mib"), 8192);
  EXPECT_NEAR(f[0].numbers.at("headroom_mib"), 8192 - (900 + 300 + 300 + 75 * 40), 1);
  EXPECT_NEAR(f[0].numbers.at("eta_s"), (8192 - 4500) / 75.0, 1);
  EXPECT_DOUBLE_EQ(f[0].end_s, 60);
  EXPECT_NE(f[0].evidence.find("100 % of it in the DataLoader worker pid 1002"), std::string::npos)
      << f[0].evidence;
  EXPECT_NE(f[0].evidence.find("OOM in about 49 s at 75.0 MiB/s"), std::string::npos) << f[0].evidence;
  EXPECT_NE(f[0].advice.find("persistent_workers"), std::string::npos) << f[0].advice;
  EXPECT_NE(f[0].advice.find("numpy arrays"), std::string::npos) << f[0].advice;

  // Too little evidence for that danger: 8 s of growth is under leak_fast_min_span_s.
  Synth early = worker_leak(28, 75, 8192);
  EXPECT_TRUE(detect_host_leak(early.s, kTh).empty());
  // The same rate with a limit it would take ten times the span to reach: not yet (it waits).
  Synth roomy = worker_leak(60, 75, 40000);
  EXPECT_TRUE(detect_host_leak(roomy.s, kTh).empty());
}

TEST(MemoryTruthD3, AFastMainProcessLeakAgainstTheHostsAvailableMemory) {
  Synth x(1, 120, 1);
  add_proc(x, 1000, 1, "python3", 0, 1e9, [](double t) { return 2000.0 + 40 * t; });
  add_proc(x, 1001, 1000, "python3", 0, 1e9, [](double) { return 500.0; });
  sum_rss(x);
  x.apply(x.s.host.mem_available_mib, 0, 1e9,
          [](double t, float) { return static_cast<float>(9000 - 40 * t); });
  const auto f = detect_host_leak(x.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::critical);
  EXPECT_EQ(f[0].pids, std::vector<std::uint32_t>{1000});
  EXPECT_EQ(f[0].numbers.at("grower_kind"), static_cast<double>(JobProcessKind::main));
  EXPECT_FALSE(f[0].numbers.contains("cgroup_memory_limit_mib"));
  EXPECT_NEAR(f[0].numbers.at("eta_s"), (9000 - 40 * 120) / 40.0, 1);  // 105 s, within 3 x 120 s
  EXPECT_NE(f[0].evidence.find("in the main process pid 1000"), std::string::npos) << f[0].evidence;
  EXPECT_NE(f[0].advice.find(".item()"), std::string::npos) << f[0].advice;
}

TEST(MemoryTruthD3, ASlowLeakKeepsTheLongWindow) {
  // 2000 MiB/h with 190 GiB available: 20 min say nothing; four hours are a warning with its forecast.
  for (double seconds : {1200.0, 4 * 3600.0}) {
    Synth x(1, seconds, 10);
    add_proc(x, 1000, 1, "python3", 0, 1e9, [](double t) { return 8000 + 2000 * t / 3600; });
    sum_rss(x);
    const auto f = detect_host_leak(x.s, kTh);
    if (seconds < kTh.leak_min_span_s) {
      EXPECT_TRUE(f.empty()) << f[0].evidence;
      continue;
    }
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].severity, Severity::warning);
    EXPECT_EQ(f[0].numbers.at("fast"), 0);
    EXPECT_NEAR(f[0].numbers.at("slope_mib_per_h"), 2000, 5);
    EXPECT_NE(f[0].evidence.find("(2000 MiB/h"), std::string::npos) << f[0].evidence;
  }
}

TEST(MemoryTruthD20, EachKillNamesTheKilledProcessWithItsOwnRssAndTheLeakIsItsCause) {
  // The worker grows 75 MiB/s until the cgroup's OOM killer ends it at 60 s; the job goes on.
  Synth x(1, 90, 1);
  add_proc(x, 1000, 1, "python3", 0, 1e9, [](double) { return 900.0; });
  add_proc(x, 1002, 1000, "python3", 2, 59, [](double t) { return 300.0 + 75 * std::max(0.0, t - 20); });
  add_proc(x, 1003, 1000, "python3", 61, 1e9, [](double) { return 300.0; });  // its replacement
  sum_rss(x);
  x.set(x.s.job.memory_limit_mib, 0, 1e9, 4400);
  x.set(x.s.job.oom_kills, 60, 1e9, 1);
  const auto d20 = detect_oom_killed(x.s, kTh);
  ASSERT_EQ(d20.size(), 1u);
  EXPECT_DOUBLE_EQ(d20[0].start_s, 60);
  EXPECT_EQ(d20[0].pids, std::vector<std::uint32_t>{1002});
  EXPECT_DOUBLE_EQ(d20[0].numbers.at("killed_rss_mib"), 300 + 75 * 39);  // its own, not the job's after
  EXPECT_EQ(d20[0].numbers.at("killed_kind"), static_cast<double>(JobProcessKind::worker));
  EXPECT_EQ(d20[0].numbers.at("at_cgroup_limit"), 1);
  EXPECT_NE(
      d20[0].evidence.find("ended the DataLoader worker pid 1002 at its memory cgroup's limit of 4400 MiB"),
      std::string::npos)
      << d20[0].evidence;
  // The whole diagnosis: the leak (up to the kill) is the kill's cause and comes first.
  auto all = DiagnosisEngine{}.run_all(x.s, kTh);
  rank_findings(all, 90);
  ASSERT_GE(all.size(), 2u);
  EXPECT_EQ(all[0].code, "D3");
  EXPECT_EQ(all[0].pids, std::vector<std::uint32_t>{1002});
  EXPECT_DOUBLE_EQ(all[0].end_s, 59);
  EXPECT_EQ(all[1].code, "D20");
  EXPECT_EQ(all[1].cause, "D3");
  EXPECT_NE(to_text(all[1]).find("caused by D3 host-memory-leak: "), std::string::npos) << to_text(all[1]);

  // A kill after the last tick (the job failed at once): counted at the end, the largest worker named.
  Synth end(1, 59, 1);
  add_proc(end, 1000, 1, "python3", 0, 1e9, [](double) { return 900.0; });
  add_proc(end, 1002, 1000, "python3", 2, 1e9, [](double t) { return 300.0 + 75 * std::max(0.0, t - 20); });
  sum_rss(end);
  end.s.facts.exit_status = 1;
  end.s.facts.oom_kills_at_end = 1;
  const auto e = detect_oom_killed(end.s, kTh);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].pids, std::vector<std::uint32_t>{1002});
  EXPECT_DOUBLE_EQ(e[0].numbers.at("killed_rss_mib"), 300 + 75 * 39);
}

TEST(MemoryTruthD14, ALateAnswerUnderHostPressureIsNotALostGpu) {
  auto late = [](bool pressure, double hung_s) {
    Synth x(1, 300, 1);
    x.set(x.s.host.psi_mem_some_avg10, 60, 200, pressure ? 60.f : 0.f);
    for (std::size_t i = 0; i < x.s.size(); ++i)
      if (x.s.t[i] >= 100 && x.s.t[i] < 100 + hung_s) {
        x.gpu(0).state[i] = GpuState::timeout;
        x.gpu(0).util_gpu_pct[i] = kNA;
      }
    return x;
  };
  Synth under = late(true, 2);
  auto f = with_code(DiagnosisEngine{}.run_all(under.s, kTh), "D14");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::warning);
  EXPECT_EQ(f[0].numbers.at("host_pressure"), 1);
  EXPECT_EQ(f[0].cause, "D17");  // the pressure (D17 found it: PSI 60 % for 140 s)
  EXPECT_NE(f[0].evidence.find("GPU0 answered late at 100 s"), std::string::npos) << f[0].evidence;
  EXPECT_NE(f[0].advice.find("Not a lost GPU"), std::string::npos);
  // Without pressure the same late answer is the GPU's (as before: critical).
  Synth calm = late(false, 2);
  f = detect_gpu_lost(calm.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::critical);
  EXPECT_FALSE(f[0].numbers.contains("host_pressure"));
  // Under pressure, a GPU that keeps failing (60 s of hung calls) is still lost.
  Synth keeps = late(true, 60);
  f = detect_gpu_lost(keeps.s, kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::critical);
}

// Found by the real test (e2e test_memory_truth: a 5 s NVML hang while the host's CPUs were saturated):
// the live diagnosis, evaluating while the calls still hung, announced "[critical] D14 gpu-lost" for what
// then answered 3 s late. A still-failing episode under pressure is late until gpu_late_max_s; past it
// the GPU is lost, and the live diagnosis says so again, critical.
TEST(MemoryTruthD14, StillHungUnderPressureIsLateUntilItKeepsFailing) {
  Synth x(1, 300, 1);
  x.set(x.s.host.psi_mem_some_avg10, 60, 300, 60.f);
  for (std::size_t i = 0; i < x.s.size(); ++i)
    if (x.s.t[i] >= 100) {
      x.gpu(0).state[i] = GpuState::timeout;
      x.gpu(0).util_gpu_pct[i] = kNA;
    }
  // 5 s into the hang, the last row still failing: late so far, not lost
  auto f = detect_gpu_lost(slice(x.s, 0, 105), kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::warning);
  EXPECT_EQ(f[0].numbers.at("host_pressure"), 1);
  EXPECT_EQ(f[0].numbers.at("answered_again"), 0);
  EXPECT_DOUBLE_EQ(f[0].numbers.at("late_s"), 5);
  EXPECT_NE(f[0].evidence.find("GPU0 has been answering late since 100 s"), std::string::npos)
      << f[0].evidence;
  // past gpu_late_max_s (30 s) it is lost, whatever the pressure
  f = detect_gpu_lost(slice(x.s, 0, 100 + kTh.gpu_late_max_s + 1), kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::critical);
  // without pressure, a call still hanging is critical at once (as before)
  Synth calm(1, 300, 1);
  for (std::size_t i = 0; i < calm.s.size(); ++i)
    if (calm.s.t[i] >= 100) calm.gpu(0).state[i] = GpuState::timeout;
  f = detect_gpu_lost(slice(calm.s, 0, 105), kTh);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::critical);

  // Live: the warning first, then the critical as a new announcement (the warning closed).
  LiveDiagnosis live(kTh, LiveOptions{.every_s = 1, .window_s = 3600, .close_after_s = 60});
  live.mutable_series() = slice(x.s, 0, 105);
  live.evaluate();
  live.mutable_series() = slice(x.s, 0, 140);
  live.evaluate();
  std::vector<std::pair<Severity, bool>> d14;
  for (const auto& l : live.history())
    if (l.finding.code == "D14") d14.emplace_back(l.finding.severity, l.open);
  const std::vector<std::pair<Severity, bool>> want{{Severity::warning, false}, {Severity::critical, true}};
  EXPECT_EQ(d14, want);
}

Finding at(std::string code, Severity sev, double t0, double t1) {
  Finding f = make_finding(code, sev, t0, t1);
  f.evidence = code + " evidence";
  f.advice = code + " advice";
  return f;
}

TEST(MemoryTruthCauses, AStallDuringPressureNamesItAndTheChainComesCauseFirst) {
  std::vector<Finding> v;
  v.push_back(at("D23", Severity::critical, 300, 480));
  set_cost(v.back(), 1.0, "measured");
  v.back().advice = "fix that line";
  v.push_back(at("D17", Severity::warning, 250, 500));
  v.push_back(at("D3", Severity::critical, 0, 240));
  v.back().numbers["grower_kind"] = static_cast<double>(JobProcessKind::worker);
  v.push_back(at("D25", Severity::warning, 100, 230));
  v.push_back(at("D12", Severity::warning, 0, 10));  // unrelated
  link_causes(v, 60);
  EXPECT_EQ(v[0].cause, "D17");
  EXPECT_EQ(v[0].advice.find("fix that line"), std::string::npos);
  EXPECT_NE(v[0].advice.find("host memory pressure"), std::string::npos);
  EXPECT_NE(v[0].evidence.find("during host memory pressure (D17)"), std::string::npos);
  EXPECT_EQ(v[1].cause, "D3");  // the leak ran into the pressure
  EXPECT_EQ(v[2].cause, "");
  EXPECT_EQ(v[3].cause, "D3");  // the data wait during the worker's leak
  EXPECT_NE(v[3].evidence.find("a DataLoader worker leaks memory meanwhile (D3)"), std::string::npos);
  EXPECT_EQ(v[4].cause, "");
  rank_findings(v, 600);
  std::vector<std::string> order;
  for (const auto& f : v) order.push_back(f.code);
  // the leak, then what it caused in rank order (the data wait; the pressure, then the stall it caused)
  EXPECT_EQ(order, (std::vector<std::string>{"D3", "D25", "D17", "D23", "D12"}));

  // A stall without pressure keeps its own advice.
  std::vector<Finding> alone{at("D23", Severity::critical, 300, 480), at("D17", Severity::warning, 700, 800)};
  link_causes(alone, 60);
  EXPECT_EQ(alone[0].cause, "");
  EXPECT_EQ(alone[0].advice, "D23 advice");

  // The cause travels in JSON (store, export) and back.
  nlohmann::json j = v[3];
  EXPECT_EQ(j.at("cause"), "D17");
  EXPECT_EQ(j.get<Finding>().cause, "D17");
  EXPECT_FALSE(nlohmann::json(v[0]).contains("cause"));
}

}  // namespace
}  // namespace trainmon::diagnose
