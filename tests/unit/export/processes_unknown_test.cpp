// SPDX-License-Identifier: Apache-2.0
// A GPU whose process lists failed (GpuSample::process_count) is "processes unknown: <reason>" in
// every view that lists processes, never an empty list next to the memory they hold: status text
// and JSON, query --query-compute-apps, pmon (text, CSV, JSON), top, serve's JSON. And the per-process
// additions (util_age_s, mig_instances) in the JSON. (The same through the fake driver, the store
// and the report: tests/e2e/test_driver_faults.py.)
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "trainmon/export/monitor_format.h"
#include "trainmon/export/processes_unknown.h"
#include "trainmon/export/query_fields.h"
#include "trainmon/export/status.h"
#include "trainmon/serve/serve_state.h"
#include "trainmon/tui/history.h"
#include "trainmon/tui/screen.h"
#include "unit/export/export_fixtures.h"

namespace trainmon {
namespace {

using testing::gpu_process;
using testing::h200_snapshot;
using testing::kMiB;
const std::vector<std::size_t> kFirst{0};
const std::string kWhy =
    "processes unknown: NVML_ERROR_NO_PERMISSION: the query needs more privileges (root)";

/// 40 GiB used, the process lists refused (NO_PERMISSION), nothing listed.
Snapshot unknown_snapshot() {
  Snapshot s = h200_snapshot();
  s.gpus[0].memory_used_bytes = Reading<std::uint64_t>::of(40960 * kMiB);
  s.gpus[0].process_count = Reading<unsigned>::fail(ReadStatus::no_permission, 4);
  return s;
}

TEST(ProcessesUnknown, Reasons) {
  EXPECT_EQ(exp::processes_unknown_text(Reading<unsigned>::of(0)), "");
  EXPECT_EQ(exp::processes_unknown_text(Reading<unsigned>{}), "");  // not asked for
  EXPECT_EQ(exp::processes_unknown_text(Reading<unsigned>::fail(ReadStatus::no_permission, 4)), kWhy);
  EXPECT_EQ(exp::processes_unknown_reason(Reading<unsigned>::fail(ReadStatus::failed, 7)),
            "the list kept changing size while it was read (NVML_ERROR_INSUFFICIENT_SIZE on every retry)");
  EXPECT_EQ(exp::processes_unknown_reason(Reading<unsigned>::fail(ReadStatus::timeout, 0)),
            "the GPU is not responding (its NVML calls hang)");
  EXPECT_EQ(exp::processes_unknown_reason(Reading<unsigned>::fail(ReadStatus::failed, 999)),
            "NVML_ERROR_UNKNOWN: the driver reported an unknown error");
}

TEST(ProcessesUnknown, StatusTextSaysSoNextToTheMemory) {
  exp::StatusOptions o;
  o.show_header = false;
  const std::string t = exp::status_text(unknown_snapshot(), kFirst, o);
  EXPECT_NE(t.find("40960 / 143771 MB | " + kWhy), std::string::npos) << t;
  // Known processes are listed before it (one list answered, the other did not).
  Snapshot s = unknown_snapshot();
  s.gpu_processes.push_back(gpu_process(4242, "python", 1024));
  const std::string u = exp::status_text(s, kFirst, o);
  EXPECT_NE(u.find("(1024M) " + kWhy), std::string::npos) << u;
  // A GPU whose lists were read has no such words, with or without processes.
  Snapshot ok = h200_snapshot();
  ok.gpus[0].process_count = Reading<unsigned>::of(0);
  EXPECT_EQ(exp::status_text(ok, kFirst, o).find("unknown"), std::string::npos);
}

TEST(ProcessesUnknown, StatusJsonProcessesNullWithTheReason) {
  Snapshot s = unknown_snapshot();
  auto j = nlohmann::json::parse(exp::status_json(s, kFirst, false));
  const auto& g = j["gpus"][0];
  EXPECT_TRUE(g["processes"].is_null());
  EXPECT_EQ(g["na_reasons"]["processes"], "no_permission");
  EXPECT_EQ(g["processes_unknown"], "NVML_ERROR_NO_PERMISSION: the query needs more privileges (root)");
  EXPECT_FALSE(g.contains("processes_listed"));
  s.gpu_processes.push_back(gpu_process(4242, "python", 1024));
  j = nlohmann::json::parse(exp::status_json(s, kFirst, false));
  ASSERT_EQ(j["gpus"][0]["processes_listed"].size(), 1u);
  EXPECT_EQ(j["gpus"][0]["processes_listed"][0]["pid"], 4242);
  Snapshot ok = h200_snapshot();
  ok.gpus[0].process_count = Reading<unsigned>::of(0);
  j = nlohmann::json::parse(exp::status_json(ok, kFirst, false));
  EXPECT_TRUE(j["gpus"][0]["processes"].is_array());
  EXPECT_TRUE(j["gpus"][0]["processes"].empty());
  EXPECT_FALSE(j["gpus"][0].contains("processes_unknown"));
}

TEST(ProcessesUnknown, StatusJsonUtilisationAgeAndMigInstances) {
  Snapshot s = h200_snapshot();
  auto p = gpu_process(3300, "python", 3072);
  p.sm_util_pct = Reading<unsigned>::of(50);
  p.util_age_s = Reading<double>::of(0.4567);
  p.gpu_instance_id = Reading<unsigned>::of(1);
  p.compute_instance_id = Reading<unsigned>::of(0);
  p.mig_instances = {{1, 0}, {2, 0}};
  s.gpu_processes.push_back(p);
  auto j = nlohmann::json::parse(exp::status_json(s, kFirst, false));
  const auto& o = j["gpus"][0]["processes"][0];
  EXPECT_EQ(o["sm_util"], 50);
  EXPECT_DOUBLE_EQ(o["util_age_s"].get<double>(), 0.457);
  EXPECT_EQ(o["gpu_memory_usage"], 3072);
  EXPECT_EQ(o["mig_instances"], nlohmann::json::parse(R"([{"gpu_instance_id": 1, "compute_instance_id": 0},
                                                         {"gpu_instance_id": 2, "compute_instance_id": 0}])"));
}

TEST(ProcessesUnknown, QueryComputeAppsRowInNvidiaSmiWords) {
  auto q = exp::parse_app_query("gpu_uuid,pid,process_name,used_memory");
  ASSERT_TRUE(q);
  auto fmt = exp::parse_csv_format("csv,noheader");
  ASSERT_TRUE(fmt);
  EXPECT_EQ(
      exp::csv_query_apps(*q, *fmt, unknown_snapshot(), kFirst, false),
      "GPU-00000000-0000-0000-0000-000000000000, [Insufficient Permissions], [Insufficient Permissions], "
      "[Insufficient Permissions]\n");
}

TEST(ProcessesUnknown, PmonRowOfQuestionMarksNeverTheIdleDashes) {
  exp::MonitorOptions mo;
  mo.groups = "um";
  const Snapshot s = unknown_snapshot();
  const std::string text = exp::pmon_rows(mo, s, kFirst);
  EXPECT_EQ(text.find('-'), std::string::npos) << text;
  EXPECT_NE(text.find("unknown"), std::string::npos) << text;
  mo.format = exp::MonitorFormat::csv;
  EXPECT_NE(exp::pmon_rows(mo, s, kFirst).find("0, ?, ?, ?, ?"), std::string::npos);
  mo.format = exp::MonitorFormat::json;
  auto j = nlohmann::json::parse(exp::pmon_rows(mo, s, kFirst));
  EXPECT_EQ(j["gpu"], 0);
  EXPECT_EQ(j["processes_unknown"], "NVML_ERROR_NO_PERMISSION: the query needs more privileges (root)");
  EXPECT_EQ(exp::pmon_warnings(s, kFirst), std::vector<std::string>{"GPU 0: " + kWhy});
  EXPECT_TRUE(exp::pmon_warnings(h200_snapshot(), kFirst).empty());
}

TEST(ProcessesUnknown, TopSaysSoAboveTheTable) {
  Snapshot s = unknown_snapshot();
  tui::History hist;
  hist.add(s);
  tui::UiState ui;
  tui::ScreenInput in{&s, &hist, nullptr};
  const std::string t = tui::render(in, ui, 160, 40, true).canvas.text();
  EXPECT_NE(t.find("GPU 0: " + kWhy), std::string::npos) << t;
  EXPECT_EQ(t.find("no GPU processes (a: all processes)"), std::string::npos) << t;
  EXPECT_NE(t.find("no other GPU processes listed"), std::string::npos) << t;
}

TEST(ProcessesUnknown, ServeSnapshotJson) {
  serve::ServeState st({});
  Snapshot s = unknown_snapshot();
  std::vector<diagnose::Finding> none;
  st.on_tick(diagnose::TickContext{s, none, 1, 1.0});
  auto j = nlohmann::json::parse(st.snapshot_json());
  const auto& g = j["status"]["gpus"][0];
  EXPECT_TRUE(g["processes"].is_null());
  EXPECT_EQ(g["processes_unknown"], "NVML_ERROR_NO_PERMISSION: the query needs more privileges (root)");
}

}  // namespace
}  // namespace trainmon
