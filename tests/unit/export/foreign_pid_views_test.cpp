// SPDX-License-Identifier: Apache-2.0
// A GPU process the join did not match to the local process with its pid (another PID namespace,
// or exited) is never shown with that local process's user, command line or memory, never counted
// in a job, never offered for signalling: every view of one snapshot, checked together. The
// snapshot is what the sampler's join (gpu_process_join.h) leaves: pid 1 is a host pid NVML lists
// while our pid 1 is a shell; 4242 is a GPU process of another namespace; 888 has exited; 777 is
// the only GPU process that is ours.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "trainmon/diagnose/cuda_devices.h"
#include "trainmon/diagnose/series.h"
#include "trainmon/export/monitor_format.h"
#include "trainmon/export/query_fields.h"
#include "trainmon/export/status.h"
#include "trainmon/recorder/session.h"
#include "trainmon/serve/metrics_text.h"
#include "trainmon/tui/keys.h"
#include "trainmon/tui/process_table.h"
#include "unit/export/export_fixtures.h"

using namespace trainmon;
using trainmon::testing::gpu_process;
using trainmon::testing::h200_snapshot;

namespace {

const std::vector<std::size_t> kFirst{0};

ProcessSample local(std::uint32_t pid, std::string user, std::string comm, std::string cmdline,
                    std::uint64_t rss) {
  ProcessSample p;
  p.pid = pid;
  p.user = std::move(user);
  p.comm = std::move(comm);
  p.cmdline = std::move(cmdline);
  p.start_time_ticks = 100 + pid;
  p.state = 'S';
  p.rss_bytes = Reading<std::uint64_t>::of(rss);
  p.cpu_pct = Reading<double>::of(3.0);
  return p;
}

Snapshot namespace_snapshot() {
  Snapshot s = h200_snapshot();
  auto add = [&](std::uint32_t pid, const char* name, std::uint64_t mib, HostVisibility h) {
    auto g = gpu_process(pid, name, mib);
    g.host = h;
    s.gpu_processes.push_back(g);
  };
  add(1, "python", 5000, HostVisibility::not_visible);
  add(777, "python", 3000, HostVisibility::visible);
  add(888, "python", 2000, HostVisibility::exited);
  add(4242, "python", 1000, HostVisibility::not_visible);
  s.processes.push_back(local(1, "root", "sh", "/bin/sh -c sleep", 4 << 20));
  s.processes.push_back(local(777, "alice", "python", "python train.py", 1ull << 30));
  return s;
}

}  // namespace

TEST(ForeignPidViews, StatusTextNamesNoLocalProcess) {
  exp::StatusOptions o;
  o.show_header = false;
  o.show_cmd = o.show_user = o.show_pid = true;
  const std::string line = exp::status_text(namespace_snapshot(), kFirst, o);
  EXPECT_NE(line.find("alice:python/777("), std::string::npos) << line;
  EXPECT_NE(line.find("--:python/1("), std::string::npos) << line;  // not root:sh
  EXPECT_NE(line.find("--:python/888("), std::string::npos) << line;
  EXPECT_EQ(line.find("root"), std::string::npos) << line;
  EXPECT_EQ(line.find(":sh/"), std::string::npos) << line;
}

TEST(ForeignPidViews, StatusJsonHasNoLocalFieldsAndSaysWhy) {
  const auto doc = nlohmann::json::parse(exp::status_json(namespace_snapshot(), kFirst, false));
  std::map<int, nlohmann::json> by_pid;
  for (const auto& p : doc["gpus"][0]["processes"]) by_pid[p["pid"].get<int>()] = p;
  ASSERT_EQ(by_pid.size(), 4u);
  for (int pid : {1, 4242}) {
    const auto& p = by_pid[pid];
    EXPECT_TRUE(p["username"].is_null()) << p;
    EXPECT_EQ(p["na_reasons"]["username"], "not_visible");
    EXPECT_EQ(p["host_visibility"], "not_visible");
    EXPECT_TRUE(p["cpu_memory_usage"].is_null());
    EXPECT_FALSE(p.contains("host_rss_bytes"));
    EXPECT_FALSE(p.contains("host_state"));
    EXPECT_EQ(p["command"], "python");  // the driver's name, not the local "sh"
    EXPECT_EQ(p["full_command"], nlohmann::json::array({"python"}));
  }
  EXPECT_EQ(by_pid[888]["host_visibility"], "exited");
  EXPECT_EQ(by_pid[888]["na_reasons"]["username"], "exited");
  EXPECT_EQ(by_pid[777]["username"], "alice");
  EXPECT_EQ(by_pid[777]["host_rss_bytes"], 1ull << 30);
  EXPECT_EQ(by_pid[777]["host_visibility"], "visible");
}

TEST(ForeignPidViews, QueryComputeAppsAndPmonUseTheDriversNameOnly) {
  const Snapshot s = namespace_snapshot();
  const auto q = exp::parse_app_query("pid,process_name,used_memory");
  ASSERT_TRUE(q.has_value());
  const auto csv = exp::parse_csv_format("csv,noheader");
  ASSERT_TRUE(csv.has_value());
  const std::string apps = exp::csv_query_apps(*q, *csv, s, kFirst, false);
  EXPECT_NE(apps.find("1, python, 5000 MiB"), std::string::npos) << apps;
  EXPECT_EQ(apps.find("sh"), std::string::npos) << apps;
  exp::MonitorOptions mo;
  mo.groups = "um";
  const std::string pmon = exp::pmon_rows(mo, s, kFirst);
  EXPECT_EQ(pmon.find(" sh "), std::string::npos) << pmon;
  EXPECT_NE(pmon.find("python"), std::string::npos) << pmon;
}

TEST(ForeignPidViews, MetricsCarryTheDriversName) {
  const std::string text = serve::render_metrics(namespace_snapshot(), {}, serve::ExporterState{});
  EXPECT_NE(text.find(R"(trainmon_process_gpu_memory_bytes{gpu="0",pid="1",comm="python")"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find(R"(comm="sh")"), std::string::npos);
}

TEST(ForeignPidViews, TopKeepsTheTwoProcessesApartAndOffersNoSignal) {
  const Snapshot s = namespace_snapshot();
  tui::UiState ui;
  ui.view = tui::ProcessView::all;
  const auto rows = tui::build_process_rows(s, ui, true);
  const tui::ProcessRow* gpu1 = nullptr;
  const tui::ProcessRow* sh1 = nullptr;
  const tui::ProcessRow* gone = nullptr;
  for (const auto& r : rows) {
    if (r.pid == 1 && r.on_gpu) gpu1 = &r;
    if (r.pid == 1 && !r.on_gpu) sh1 = &r;
    if (r.pid == 888) gone = &r;
  }
  ASSERT_NE(gpu1, nullptr);
  ASSERT_NE(sh1, nullptr);
  ASSERT_NE(gone, nullptr);
  EXPECT_TRUE(gpu1->not_visible);
  EXPECT_EQ(gpu1->user, "?");
  EXPECT_EQ(gpu1->command, "python");
  EXPECT_LT(gpu1->rss_bytes, 0);
  EXPECT_FALSE(gpu1->start_time_ticks.has_value());
  EXPECT_FALSE(gpu1->ghost);
  EXPECT_EQ(sh1->user, "root");  // the local shell keeps its own row, without the GPU's memory
  EXPECT_LT(sh1->gpu_memory_bytes, 0);
  EXPECT_TRUE(sh1->gpus.empty());
  EXPECT_TRUE(gone->exited);
  EXPECT_FALSE(gone->not_visible);

  // The keys: select the GPU row of pid 1, press k: no dialog. Then the shell's row: a dialog.
  tui::KeyContext ctx;
  for (const auto& r : rows) {
    ctx.pids.push_back(r.pid);
    ctx.commands.push_back(r.command);
    ctx.start_times_ticks.push_back(r.start_time_ticks);
  }
  const auto at = [&](const tui::ProcessRow* r) { return static_cast<std::size_t>(r - rows.data()); };
  ui.selected_pid = 1;
  ui.selected_no_local = true;
  EXPECT_EQ(tui::selected_row(rows, ui), static_cast<int>(at(gpu1)));
  tui::handle_key(ui, 'k', ctx);
  EXPECT_EQ(ui.dialog.stage, tui::DialogStage::none);
  EXPECT_NE(ui.message.find("nothing to signal"), std::string::npos) << ui.message;
  ui.selected_no_local = false;
  EXPECT_EQ(tui::selected_row(rows, ui), static_cast<int>(at(sh1)));
  tui::handle_key(ui, 'k', ctx);
  EXPECT_EQ(ui.dialog.stage, tui::DialogStage::confirm_term);
  EXPECT_EQ(ui.dialog.start_time_ticks, sh1->start_time_ticks);

  // The GPU view lists the four GPU processes, the local shell not at all.
  ui = {};
  const auto gpu_rows = tui::build_process_rows(s, ui, true);
  EXPECT_EQ(gpu_rows.size(), 4u);
  for (const auto& r : gpu_rows) EXPECT_NE(r.user, "root");
}

TEST(ForeignPidViews, RecorderAndDiagnosisCountOnlyTheJobsOwnGpuProcess) {
  const Snapshot s = namespace_snapshot();
  const std::vector<std::uint32_t> job{1, 777};  // the job's local pids (sorted)
  const auto batch = recorder::make_tick_batch(s, job, job);
  int gpu_rows = 0;
  for (const auto& r : batch.rows) {
    if (r.series.kind != store::SeriesKind::gpu_process) continue;
    ++gpu_rows;
    EXPECT_EQ(r.series.in_job, *r.series.pid == 777) << *r.series.pid;
  }
  EXPECT_EQ(gpu_rows, 4);

  diagnose::RunSeries series;
  diagnose::append_snapshot(series, s, diagnose::JobContext{s.time_unix_ns, 777, job, std::nullopt});
  ASSERT_EQ(series.gpus.size(), 1u);
  for (const auto& p : series.gpus[0].procs) EXPECT_EQ(p.in_job, p.pid == 777) << p.pid;

  const auto refs = diagnose::nvml_gpu_refs(s);
  ASSERT_EQ(refs.size(), 1u);
  ASSERT_EQ(refs[0].procs.size(), 1u);  // what resolve_rank_gpu matches a rank's pid against
  EXPECT_EQ(refs[0].procs[0].first, 777u);
  EXPECT_EQ(refs[0].procs[0].second, 3000ull * trainmon::testing::kMiB + 4096);
}
