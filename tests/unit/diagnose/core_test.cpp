// SPDX-License-Identifier: Apache-2.0
// RunSeries building (append_snapshot, slice), Finding JSON/text, Thresholds parsing.
#include <gtest/gtest.h>

#include <memory>
#include <set>

#include "trainmon/diagnose/finding.h"
#include "trainmon/diagnose/series.h"
#include "trainmon/diagnose/thresholds.h"

namespace trainmon::diagnose {
namespace {

constexpr std::int64_t kStart = 1'700'000'000'000'000'000;

Snapshot make_snapshot(double t) {
  Snapshot s;
  s.time_unix_ns = kStart + static_cast<std::int64_t>(t * 1e9);
  auto info = std::make_shared<GpuStaticInfo>();
  info->name = Reading<std::string>::of("NVIDIA H200");
  info->memory_total_bytes = Reading<std::uint64_t>::of(144ull << 30);
  info->temperature_slowdown_c = Reading<unsigned>::of(87);
  info->clocks_max_sm_mhz = Reading<unsigned>::of(1980);
  info->pcie_link_gen_max = Reading<unsigned>::of(5);
  info->pcie_link_width_max = Reading<unsigned>::of(16);
  GpuSample g;
  g.index = 0;
  g.info = info;
  g.responsive = Reading<bool>::of(true);
  g.utilization_gpu_pct = Reading<unsigned>::of(93);
  g.memory_used_bytes = Reading<std::uint64_t>::of(10ull << 30);
  g.power_draw_mw = Reading<unsigned>::of(512000);
  g.enforced_power_limit_mw = Reading<unsigned>::of(700000);
  g.clocks_event_reasons_active = Reading<std::uint64_t>::of(clock_event::sw_power_cap);
  g.violation_power_ns = Reading<std::uint64_t>::of(2'500'000'000ull);
  g.gpu_utilization_samples = {
      {static_cast<std::uint64_t>((kStart / 1000) + static_cast<std::int64_t>(t * 1e6)), 91}};
  s.gpus.push_back(g);
  GpuSample lost;
  lost.index = 1;
  lost.info = info;
  lost.responsive = Reading<bool>::fail(ReadStatus::gpu_lost, 15);
  s.gpus.push_back(lost);
  GpuProcessSample p;
  p.gpu_index = 0;
  p.pid = 1001;
  p.used_memory_bytes = Reading<std::uint64_t>::of(512ull << 20);
  p.sm_util_pct = Reading<unsigned>::of(80);
  p.host = HostVisibility::visible;
  s.gpu_processes.push_back(p);
  p.pid = 5555;
  p.host = HostVisibility::not_visible;
  s.gpu_processes.push_back(p);
  s.events.push_back({s.time_unix_ns, 0, 0x8, 79});
  s.host.cpu_total.busy_pct = 40;
  s.host.cpu_total.iowait_pct = 3;
  s.host.cpus = {{0, true, {.busy_pct = 20}, {}}, {1, true, {.busy_pct = 99}, {}}};
  s.host.cpu_count_online = 2;
  s.host.memory.total_bytes = Reading<std::uint64_t>::of(64ull << 30);
  s.host.memory.available_bytes = Reading<std::uint64_t>::of(32ull << 30);
  s.host.pressure_memory.some_avg10_pct = Reading<double>::of(1.5);
  s.host.disks = {{"nvme0n1", 1048576.0, 0, 0, 0}, {"sda", 1048576.0, 0, 0, 0}};
  auto proc = [](std::uint32_t pid, std::uint32_t ppid, std::uint64_t rss_mib, double cpu) {
    ProcessSample ps;
    ps.pid = pid;
    ps.ppid = ppid;
    ps.rss_bytes = Reading<std::uint64_t>::of(rss_mib << 20);
    ps.cpu_pct = Reading<double>::of(cpu);
    return ps;
  };
  s.processes = {proc(1000, 1, 1000, 99), proc(1001, 1000, 500, 50), proc(1002, 1001, 250, 10),
                 proc(2000, 1, 9000, 5)};
  return s;
}

TEST(DiagSeries, AppendSnapshotFillsColumnsJobTreeAndEvents) {
  RunSeries s;
  JobContext ctx{kStart, 1000, {}, 3.0};
  append_snapshot(s, make_snapshot(0), ctx);
  append_snapshot(s, make_snapshot(1.5), ctx);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_DOUBLE_EQ(s.t[1], 1.5);
  ASSERT_EQ(s.gpus.size(), 2u);
  const auto& g = s.gpus[0];
  EXPECT_EQ(g.name, "NVIDIA H200");
  EXPECT_FLOAT_EQ(g.util_gpu_pct[1], 93.f);
  EXPECT_FLOAT_EQ(g.mem_used_mib[0], 10240.f);
  EXPECT_FLOAT_EQ(g.mem_total_mib[0], 147456.f);
  EXPECT_FLOAT_EQ(g.power_w[0], 512.f);
  EXPECT_FLOAT_EQ(g.power_limit_w[0], 700.f);
  EXPECT_FLOAT_EQ(g.viol_power_s[0], 2.5f);
  EXPECT_EQ(g.clock_reasons[0], clock_event::sw_power_cap);
  EXPECT_FLOAT_EQ(g.pcie_gen_max[0], 5.f);
  EXPECT_TRUE(std::isnan(g.temp_c[0]));
  ASSERT_EQ(g.hires_util.t.size(), 2u);
  EXPECT_NEAR(g.hires_util.t[1], 1.5, 1e-6);
  EXPECT_EQ(s.gpus[1].state[0], GpuState::lost);
  ASSERT_EQ(g.procs.size(), 4u);
  EXPECT_TRUE(g.procs[0].in_job);   // 1001 is the root's child
  EXPECT_FALSE(g.procs[1].in_job);  // 5555 is not in the tree
  EXPECT_FLOAT_EQ(g.procs[0].used_mib, 512.f);
  EXPECT_FLOAT_EQ(s.job.rss_mib[0], 1750.f);  // 1000 + 500 + 250 (grandchild counted), not 2000's
  EXPECT_FLOAT_EQ(s.job.cpu_pct[0], 159.f);
  EXPECT_FLOAT_EQ(s.job.main_cpu_pct[0], 99.f);
  EXPECT_FLOAT_EQ(s.job.workers[0], 2.f);
  EXPECT_FLOAT_EQ(s.job.oom_kills[0], 3.f);
  EXPECT_FLOAT_EQ(s.host.cpu_core_max_pct[0], 99.f);
  EXPECT_FLOAT_EQ(s.host.mem_available_mib[0], 32768.f);
  EXPECT_FLOAT_EQ(s.host.disk_read_bps[0], 2097152.f);
  EXPECT_FLOAT_EQ(s.host.psi_mem_some_avg10[0], 1.5f);
  ASSERT_EQ(s.gpu_events.size(), 2u);
  EXPECT_EQ(s.gpu_events[1].xid, 79u);
  EXPECT_DOUBLE_EQ(s.gpu_events[1].t, 1.5);
  EXPECT_EQ(s.facts.root_pid, 1000u);
}

TEST(DiagSeries, ZombiesOfTheJobHoldNoMemory) {
  // The last tick of a run often sees the command as a zombie (exited, not yet reaped): its 0 B
  // must not look like the job releasing everything (it broke D3's trend at every run's end).
  RunSeries s;
  JobContext ctx{kStart, 1000, {}, std::nullopt};
  Snapshot snap = make_snapshot(0);
  for (auto& p : snap.processes)
    if (p.pid == 1001) {
      p.state = 'Z';
      p.rss_bytes = Reading<std::uint64_t>::of(0);
    }
  append_snapshot(s, snap, ctx);
  EXPECT_FLOAT_EQ(s.job.rss_mib[0], 1250.f);  // 1000 + 250: the zombie 1001 left out
  EXPECT_FLOAT_EQ(s.job.workers[0], 1.f);
  for (auto& p : snap.processes)
    if (p.pid == 1000 || p.pid == 1002) p.state = 'Z';
  append_snapshot(s, snap, ctx);
  EXPECT_TRUE(std::isnan(s.job.rss_mib[1]));  // nothing alive: N/A, not 0
  // The main process exited (zombie) while a helper it started lives on: the job has ended.
  Snapshot after = make_snapshot(2);
  for (auto& p : after.processes)
    if (p.pid == 1000) p.state = 'Z';
  append_snapshot(s, after, ctx);
  EXPECT_TRUE(std::isnan(s.job.rss_mib[2]));
  EXPECT_TRUE(std::isnan(s.job.cpu_pct[2]));
}

TEST(DiagSeries, GpuAppearingLaterGetsNaNHistoryAndSliceCutsRows) {
  RunSeries s;
  append_empty_rows(s, {0, 1, 2, 3});
  auto& g = ensure_gpu(s, 3);
  ASSERT_EQ(g.util_gpu_pct.size(), 4u);
  EXPECT_TRUE(std::isnan(g.util_gpu_pct[0]));
  EXPECT_EQ(g.state[0], GpuState::absent);
  g.util_gpu_pct = {1, 2, 3, 4};
  g.procs.push_back({2, 77, 100.f, 0.f, HostVisibility::visible, true});
  s.train_events.push_back({2.5, "epoch_end"});
  const auto w = slice(s, 1.5, 3);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_FLOAT_EQ(w.gpus[0].util_gpu_pct[0], 3.f);
  ASSERT_EQ(w.gpus[0].procs.size(), 1u);
  EXPECT_EQ(w.gpus[0].procs[0].tick, 0u);
  EXPECT_EQ(w.train_events.size(), 1u);
  EXPECT_EQ(w.host.cpu_busy_pct.size(), 2u);
}

TEST(DiagFinding, JsonRoundTripAndText) {
  Finding f = make_finding("D2", Severity::warning, 60, 120);
  EXPECT_EQ(f.slug, "ddp-imbalance");
  f.gpus = {0, 1};
  f.pids = {1000};
  f.evidence = "GPU1 mean 8 % over 60 s while GPU0 94 %; spread 86 points > 15";
  f.numbers = {{"spread_pct", 86}, {"gpu1_mean_util_pct", 8}};
  f.advice = "balance";
  f.thresholds = {{"imbalance_spread_pct", 15}};
  const nlohmann::json j = f;
  EXPECT_EQ(j.at("severity"), "warning");
  EXPECT_EQ(j.at("numbers").at("spread_pct"), 86);
  const auto back = j.get<Finding>();
  EXPECT_EQ(back, f);
  EXPECT_EQ(to_text(f),
            "[warning] D2 ddp-imbalance 60-120s GPU0,GPU1,pid 1000: " + f.evidence + " -> balance");
  nlohmann::json bad = j;
  bad["severity"] = "fatal";
  EXPECT_THROW(bad.get<Finding>(), nlohmann::json::exception);
}

TEST(DiagFinding, CodeTableIsStableAndUnique) {
  const auto kinds = finding_kinds();
  ASSERT_EQ(kinds.size(), 28u);
  std::set<std::string_view> codes, slugs;
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    std::string code = "D";
    code += std::to_string(i + 1);
    EXPECT_EQ(kinds[i].code, code);
    codes.insert(kinds[i].code);
    slugs.insert(kinds[i].slug);
  }
  EXPECT_EQ(slugs.size(), kinds.size());
  EXPECT_EQ(find_kind("D4")->slug, "dataloader-starved");
  EXPECT_EQ(find_kind("D99"), nullptr);
}

TEST(DiagThresholds, DefaultsFlagsAndToml) {
  Thresholds th;
  EXPECT_DOUBLE_EQ(th.imbalance_spread_pct, 15);
  EXPECT_DOUBLE_EQ(th.growth_per_epoch_mib, 200);
  EXPECT_DOUBLE_EQ(th.power_cap_frac, 0.95);
  ASSERT_TRUE(set_threshold(th, "starved_util_pct = 35").has_value());
  EXPECT_DOUBLE_EQ(th.starved_util_pct, 35);
  EXPECT_FALSE(set_threshold(th, "nope=1").has_value());
  EXPECT_FALSE(set_threshold(th, "starved_util_pct=abc").has_value());
  EXPECT_FALSE(set_threshold(th, "starved_util_pct").has_value());
  const auto t =
      thresholds_from_toml("[other]\nx = 1\n[diagnose]\nimbalance_spread_pct = 10\nwindow_s = 30.5\n", th);
  ASSERT_TRUE(t.has_value()) << t.error();
  EXPECT_DOUBLE_EQ(t->imbalance_spread_pct, 10);
  EXPECT_DOUBLE_EQ(t->window_s, 30.5);
  EXPECT_DOUBLE_EQ(t->starved_util_pct, 35);  // base kept
  EXPECT_FALSE(thresholds_from_toml("[diagnose]\nbogus = 1\n").has_value());
  EXPECT_FALSE(thresholds_from_toml("[diagnose]\nwindow_s = \"x\"\n").has_value());
  EXPECT_FALSE(thresholds_from_toml("[diagnose\n").has_value());
  EXPECT_EQ(*thresholds_from_toml(""), Thresholds{});
  for (const auto& row : threshold_table()) EXPECT_FALSE(row.source.empty()) << row.name;
}

}  // namespace
}  // namespace trainmon::diagnose
