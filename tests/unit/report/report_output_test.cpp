// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "report/report_model.h"
#include "report/writers.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/report/report.h"
#include "trainmon/report/report_file.h"
#include "unit/store/store_test_util.h"

namespace trainmon::report {
namespace {

using nlohmann::json;

/// Two GPUs, 20 ticks at 0.5 s; GPU 1 idles (the imbalance), an epoch ends at 5 s and 9.5 s.
diagnose::RunSeries two_gpu_series() {
  diagnose::RunSeries rs;
  std::vector<double> t;
  for (int i = 0; i < 20; ++i) t.push_back(i * 0.5);
  diagnose::append_empty_rows(rs, t);
  for (unsigned g = 0; g < 2; ++g) {
    auto& gs = diagnose::ensure_gpu(rs, g);
    gs.name = "NVIDIA H200";
    for (std::size_t i = 0; i < t.size(); ++i) {
      gs.util_gpu_pct[i] = g == 0 ? 95.0f : 8.0f;
      gs.mem_used_mib[i] = 1000.0f + static_cast<float>(i);
      gs.mem_total_mib[i] = 143771.0f;
      gs.power_w[i] = 400.0f;
      gs.power_limit_w[i] = 700.0f;
      gs.temp_c[i] = 60.0f;
      gs.temp_slowdown_c[i] = 87.0f;
      gs.sm_clock_mhz[i] = 1980.0f;
      gs.clock_reasons[i] = i > 10 ? 0x4 : 0;  // SW power cap in the second half
    }
    gs.util_gpu_pct[3] = diagnose::kNA;  // a gap
  }
  for (std::size_t i = 0; i < t.size(); ++i) {
    rs.host.cpu_busy_pct[i] = 30;
    rs.host.mem_total_mib[i] = 64000;
    rs.host.mem_available_mib[i] = 40000;
  }
  diagnose::TrainEvent e;
  e.kind = "epoch_end";
  e.t = 5;
  e.epoch = 0;
  diagnose::append_train_event(rs, e);
  e.t = 9.5;
  e.epoch = 1;
  diagnose::append_train_event(rs, e);
  return rs;
}

json model_with(const diagnose::RunSeries& rs) {
  json m;
  m["version"] = kModelVersion;
  m["run"] = {{"id", 7},
              {"name", "ddp | test"},
              {"command", {"python3", "train.py"}},
              {"user", "ann"},
              {"host", "node1"},
              {"gpus", json::array()},
              {"status", "exited"},
              {"exit_code", 0},
              {"duration_s", 10.0},
              {"start", "2026-11-30T12:00:00Z"}};
  add_charts(m, rs, 2000);
  m["ticks"] = rs.size();
  m["train_events"] = rs.train_events.size();
  m["gpu_stats"] = json::array();
  m["processes"] = json::array({{{"pid", 42},
                                 {"comm", "python3"},
                                 {"cmdline", "python3 train.py"},
                                 {"in_job", true},
                                 {"peak_rss_mib", 2048.0},
                                 {"cpu_time_s", 12.5},
                                 {"peak_gpu_mem_mib", 1019.0},
                                 {"gpus", {0}}}});
  m["notes"] = json::array();
  auto f = diagnose::make_finding("D2", diagnose::Severity::warning, 2.0, 8.0);
  f.gpus = {1};
  f.evidence = "GPU 1 at 8 % while GPU 0 at 95 %";
  f.advice = "balance the ranks";
  auto d22 = diagnose::make_finding("D22", diagnose::Severity::info, 9.0, 9.0);
  d22.evidence = "peak = 900 MiB + 10 MiB x batch";
  d22.advice = "batch 512 fits";
  add_findings(m, {f, d22});
  return m;
}

const json& chart(const json& m, const std::string& id) {
  for (const auto& c : m["charts"])
    if (c["id"] == id) return c;
  static const json none;
  ADD_FAILURE() << "no chart " << id;
  return none;
}

TEST(ReportModel, ChartsShareOneGridAndCarryGapsEpochsAndThrottleReasons) {
  const json m = model_with(two_gpu_series());
  EXPECT_FALSE(m["reduced"].get<bool>());
  ASSERT_EQ(m["x"].size(), 20u);
  EXPECT_EQ(m["epochs"], json::parse(R"([{"epoch":1,"t":5.0},{"epoch":2,"t":9.5}])"));
  const auto& util = chart(m, "gpu1-util");
  EXPECT_EQ(util["series"][0]["label"], "utilization.gpu");
  EXPECT_TRUE(util["series"][0]["mean"][3].is_null());
  EXPECT_EQ(util["series"][0]["mean"][4], 8.0);
  const auto& clock = chart(m, "gpu0-clock");
  bool throttle = false;
  for (const auto& s : clock["series"]) throttle = throttle || s["label"] == "throttle: SW power cap";
  EXPECT_TRUE(throttle);
  // comparison charts for two GPUs; no chart without data (disk read was never measured)
  chart(m, "cmp-util");
  for (const auto& c : m["charts"]) EXPECT_NE(c["id"], "host-disk");
  // D2 on GPU 1: shaded on GPU 1's charts and the comparison, not GPU 0's
  const auto& f = m["findings"][0];
  std::vector<std::string> ids = f["charts"];
  EXPECT_NE(std::find(ids.begin(), ids.end(), "gpu1-util"), ids.end());
  EXPECT_NE(std::find(ids.begin(), ids.end(), "cmp-util"), ids.end());
  EXPECT_EQ(std::find(ids.begin(), ids.end(), "gpu0-util"), ids.end());
  ASSERT_EQ(m["batch_advice"].size(), 1u);
  EXPECT_EQ(m["batch_advice"][0]["advice"], "batch 512 fits");
}

TEST(ReportWriters, MarkdownListsCodesFindingsProcessesAndEpochs) {
  const std::string md = write_markdown(model_with(two_gpu_series()));
  // A heading is no table row: its code span keeps the '|' as it is (a "\\|" would show).
  EXPECT_NE(md.find("# trainmon report: run 7 `ddp | test`"), std::string::npos) << md;
  EXPECT_NE(md.find("| Command | `python3 train.py` |"), std::string::npos) << md;
  EXPECT_NE(md.find("Codes: D2, D22"), std::string::npos) << md;
  EXPECT_NE(md.find("**[warning] D2 ddp-imbalance**"), std::string::npos) << md;
  EXPECT_NE(md.find("2.0–8.0 s GPU 1: GPU 1 at 8 % while GPU 0 at 95 %"), std::string::npos) << md;
  EXPECT_NE(md.find("| 42 | `python3 train.py` | yes | 2.0 GiB | 12.5 s | 1019 MiB | 0 |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("- peak = 900 MiB + 10 MiB x batch\n  → batch 512 fits"), std::string::npos) << md;
  EXPECT_NE(md.find("2 epoch ends: 1@5.0s 2@9.5s"), std::string::npos) << md;
}

TEST(ReportWriters, JsonParsesBackToTheModel) {
  const json m = model_with(two_gpu_series());
  const std::string text = write_json(m);
  ASSERT_EQ(text.back(), '\n');
  EXPECT_EQ(json::parse(text), m);
}

TEST(ReportWriters, ScriptAndHtmlEscaping) {
  EXPECT_EQ(text::html_script("a</script>b</SCRIPT >c<!--d</div>"),
            "a<\\/script>b<\\/SCRIPT >c<\\!--d</div>");
  EXPECT_EQ(text::html("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
  json m = model_with(two_gpu_series());
  m["run"]["name"] = "</script><script>alert(1)</script>";
  const std::string html = write_html(m);
  ASSERT_FALSE(html.empty()) << "report assets missing";
  EXPECT_EQ(html.find("</script><script>alert"), std::string::npos);
  EXPECT_NE(html.find("\\u003c/script>\\u003cscript>alert(1)"), std::string::npos);
  EXPECT_NE(html.find("id=\"trainmon-data\""), std::string::npos);
  EXPECT_NE(html.find("uPlot"), std::string::npos);
}

TEST(RenderReport, RunWithoutSamplesStillGetsAReportAndUnknownRunIsAnError) {
  store::testing::TempDir dir;
  auto st = store::Store::open(dir.file("r.db"), store::OpenMode::read_write);
  ASSERT_TRUE(st) << st.error().message;
  store::RunInfo run;
  run.name = "lost";
  run.command = {"sleep", "1"};
  run.start_unix_ns = 1'700'000'000'000'000'000;
  auto id = st->create_run(run);
  ASSERT_TRUE(id);
  auto f = diagnose::make_finding("D20", diagnose::Severity::critical, 1, 1);
  f.evidence = "killed";
  f.advice = "less memory";
  ASSERT_TRUE(st->insert_findings(*id, {f}));

  auto md = render_report(*st, *id, {Format::markdown, 2000});
  ASSERT_TRUE(md) << md.error().message;
  EXPECT_NE(md->find("Codes: D20"), std::string::npos) << *md;
  auto js = render_report(*st, *id, {Format::json, 2000});
  ASSERT_TRUE(js);
  const json j = json::parse(*js);
  EXPECT_EQ(j["ticks"], 0);
  EXPECT_EQ(j["charts"].size(), 0u);
  EXPECT_EQ(j["run"]["name"], "lost");
  auto html = render_report(*st, *id);
  ASSERT_TRUE(html) << html.error().message;
  EXPECT_NE(html->find("<!DOCTYPE html>"), std::string::npos);

  const std::string path = default_report_path(dir.file("r.db"), *id);
  EXPECT_EQ(path, dir.path() + "/reports/r-run-" + std::to_string(*id) + ".html");
  ASSERT_TRUE(write_report_file(*st, *id, path));
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_FALSE(write_report_file(*st, *id, "/proc/nonexistent/x.html"));

  EXPECT_FALSE(render_report(*st, *id + 100));
}

}  // namespace
}  // namespace trainmon::report
