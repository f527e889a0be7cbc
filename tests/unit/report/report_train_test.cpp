// SPDX-License-Identifier: Apache-2.0
// The report's training charts and training section from a synthetic two-rank TrainSeries
// (src/report/report_train.h, report_charts.cpp, markdown_writer.cpp).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "report/report_model.h"
#include "report/report_train.h"
#include "report/writers.h"
#include "trainmon/diagnose/train_summary.h"
#include "unit/recorder/train_synth.h"

namespace trainmon::report {
namespace {

using nlohmann::json;

/// Ticks at 0.5, 1.5, ... 10.5 s: each training row (t = 1 .. 10, rank 1 at + 0.01) falls in the
/// bucket of the tick after it; an epoch ends at 5.2 s.
diagnose::RunSeries series_with_training(bool with_data_wait = true) {
  diagnose::RunSeries rs;
  std::vector<double> t;
  for (int i = 0; i <= 10; ++i) t.push_back(i + 0.5);
  diagnose::append_empty_rows(rs, t);
  rs.train = testing::two_rank_series();
  if (!with_data_wait)
    for (auto& r : rs.train.ranks)
      for (auto& w : r.rows) w.data = {};
  diagnose::TrainEvent e;
  e.kind = "epoch_end";
  e.t = 5.2;
  e.epoch = 0;
  diagnose::append_train_event(rs, e);
  return rs;
}

const json& chart(const json& m, const std::string& id) {
  for (const auto& c : m["charts"])
    if (c["id"] == id) return c;
  static const json none;
  ADD_FAILURE() << "no chart " << id;
  return none;
}

TEST(ReportTrain, ChartDataPerBucket) {
  const auto rs = series_with_training();
  const Grid grid = make_grid(rs.t, 2000);
  const auto d = train_chart_data(grid, rs.train);
  ASSERT_EQ(d.samples_per_s.size(), 11u);
  EXPECT_TRUE(std::isnan(d.samples_per_s[0]));  // no step before the first row
  for (std::size_t b = 1; b <= 10; ++b) {
    EXPECT_NEAR(d.samples_per_s[b], 120, 1e-3) << b;  // 80 + 40
    // 15 steps, 2 s of steps, 0.7 s of data wait per bucket
    EXPECT_NEAR(d.step_s[b], 2.0 / 15, 1e-6) << b;
    EXPECT_NEAR(d.data_wait_s[b], 0.7 / 15, 1e-6) << b;
    EXPECT_NEAR(d.compute_s[b], 1.3 / 15, 1e-6) << b;
  }
  ASSERT_EQ(d.rank_step_s.size(), 2u);
  EXPECT_EQ(d.rank_step_s[0].first, "rank 0");
  EXPECT_EQ(d.rank_step_s[1].first, "rank 1");
  EXPECT_NEAR(d.rank_step_s[0].second[4], 0.1, 1e-6);
  EXPECT_NEAR(d.rank_step_s[1].second[4], 0.2, 1e-6);
  EXPECT_EQ(d.gpus, (std::vector<int>{0, 1}));
}

TEST(ReportTrain, SlowStepsDoNotMakeTheJobThroughputDip) {
  // Rank 0 ends a step only every other bucket: its rate is held between its steps.
  diagnose::RunSeries rs;
  std::vector<double> t;
  for (int i = 0; i <= 6; ++i) t.push_back(i + 0.5);
  diagnose::append_empty_rows(rs, t);
  for (int i = 1; i <= 6; ++i) {
    diagnose::append_train_window(rs.train, testing::train_rank_id(1, 2),
                                  testing::train_row(i, 5, 0.2, 0.1, 5.0 * (i - 1)));
    if (i % 2 == 1) {
      diagnose::append_train_window(rs.train, testing::train_rank_id(0, 1),
                                    testing::train_row(i, 1, 2.0, 0.5, i / 2));
    } else {
      diagnose::TrainWindow hb;  // a heartbeat: no step in this bucket
      hb.t = i;
      diagnose::append_train_window(rs.train, testing::train_rank_id(0, 1), hb);
    }
  }
  const auto d = train_chart_data(make_grid(rs.t, 2000), rs.train);
  for (std::size_t b = 1; b <= 5; ++b) EXPECT_NEAR(d.samples_per_s[b], 40 + 4, 1e-3) << b;  // 8/0.2*... + 8/2
  EXPECT_NEAR(d.samples_per_s[6], 40, 1e-3);  // after rank 0's last step only rank 1
}

TEST(ReportTrain, AStallIsDrawnAsItsOwnLengthNotARampToTheMean) {
  // One rank: 10 steps of 0.1 s per bucket up to 3 s, then no step until a window at 9 s that
  // holds the 5 s stall and two steps of 0.1 s. Buckets 4-8 lie inside the stall: 5 s long, at
  // 8 samples per 5 s; the bucket that ends it has its own mean. Nothing is left NaN in between.
  diagnose::RunSeries rs;
  std::vector<double> t;
  for (int i = 0; i <= 10; ++i) t.push_back(i + 0.5);
  diagnose::append_empty_rows(rs, t);
  const auto id = testing::train_rank_id(0, 1);
  for (int i = 1; i <= 3; ++i)
    diagnose::append_train_window(rs.train, id, testing::train_row(i, 10, 0.1, 0.02, 10.0 * (i - 1)));
  for (int i = 4; i <= 8; ++i) {
    diagnose::TrainWindow hb;
    hb.t = i;
    diagnose::append_train_window(rs.train, id, hb);
  }
  auto end = testing::train_row(9, 3, 0.1, 0.02, 30);
  end.step.sum = 5.2f;
  end.step.max = 5.0f;
  end.data.max = 0.02f;
  diagnose::append_train_window(rs.train, id, end);
  const auto d = train_chart_data(make_grid(rs.t, 2000), rs.train);
  for (std::size_t b = 4; b <= 8; ++b) {
    EXPECT_NEAR(d.rank_step_s[0].second[b], 5.0, 1e-6) << b;
    EXPECT_NEAR(d.step_s[b], 5.0, 1e-6) << b;
    EXPECT_NEAR(d.data_wait_s[b], 0.02, 1e-6) << b;
    EXPECT_NEAR(d.compute_s[b], 4.98, 1e-5) << b;
    EXPECT_NEAR(d.samples_per_s[b], 8.0 / 5.0, 1e-5) << b;
  }
  EXPECT_NEAR(d.step_s[9], 5.2 / 3, 1e-6);
  EXPECT_NEAR(d.step_s[3], 0.1, 1e-6);
  EXPECT_NEAR(d.samples_per_s[3], 80, 1e-3);
  EXPECT_TRUE(std::isnan(d.step_s[10]));  // after the last step: nothing
}

TEST(ReportTrain, ModelHasThroughputStackedStepTimeAndPerRankCharts) {
  json m;
  m["run"] = {{"id", 3}};
  add_charts(m, series_with_training(), 2000);
  const auto& tp = chart(m, "train-throughput");
  EXPECT_EQ(tp["group"], "Training");
  EXPECT_EQ(tp["kind"], "train");
  EXPECT_EQ(tp["unit"], "samples/s");
  EXPECT_TRUE(tp["series"][0]["mean"][0].is_null());
  EXPECT_EQ(tp["series"][0]["mean"][3], 120.0);
  const auto& step = chart(m, "train-step");
  EXPECT_TRUE(step.value("stacked", false));
  EXPECT_EQ(step["unit"], "s");
  ASSERT_EQ(step["series"].size(), 2u);
  EXPECT_EQ(step["series"][0]["label"], "data wait");
  EXPECT_EQ(step["series"][1]["label"], "compute + sync");
  EXPECT_NEAR(step["series"][0]["mean"][3].get<double>(), 0.7 / 15, 1e-4);
  EXPECT_NEAR(step["series"][1]["mean"][3].get<double>(), 1.3 / 15, 1e-4);
  const auto& ranks = chart(m, "train-ranks");
  ASSERT_EQ(ranks["series"].size(), 2u);
  EXPECT_EQ(ranks["series"][1]["label"], "rank 1");
  EXPECT_EQ(ranks["series"][1]["mean"][3], 0.2);
  EXPECT_EQ(m["charts"][0]["id"], "train-throughput");  // training first
  EXPECT_EQ(m["epochs"], json::parse(R"([{"epoch":1,"t":5.2}])"));
  // a finding on GPU 1 (a rank's GPU) is shaded on the training charts; one on GPU 5 is not
  auto f1 = diagnose::make_finding("D2", diagnose::Severity::warning, 2.0, 8.0);
  f1.gpus = {1};
  auto f5 = f1;
  f5.gpus = {5};
  add_findings(m, {f1, f5});
  const std::vector<std::string> on1 = m["findings"][0]["charts"], on5 = m["findings"][1]["charts"];
  EXPECT_NE(std::find(on1.begin(), on1.end(), "train-step"), on1.end());
  EXPECT_EQ(std::find(on5.begin(), on5.end(), "train-step"), on5.end());
}

TEST(ReportTrain, WithoutDataWaitOneStepTimeSeriesAndWithoutTrainingNoCharts) {
  json m;
  add_charts(m, series_with_training(false), 2000);
  const auto& step = chart(m, "train-step");
  EXPECT_FALSE(step.value("stacked", false));
  ASSERT_EQ(step["series"].size(), 1u);
  EXPECT_EQ(step["series"][0]["label"], "step time");
  EXPECT_NEAR(step["series"][0]["mean"][3].get<double>(), 2.0 / 15, 1e-4);

  diagnose::RunSeries plain;
  diagnose::append_empty_rows(plain, std::vector<double>{1, 2, 3});
  plain.host.cpu_busy_pct = {10, 20, 30};
  json p;
  add_charts(p, plain, 2000);
  for (const auto& c : p["charts"]) EXPECT_NE(c["kind"], "train");
}

TEST(ReportTrain, MarkdownHasTheTrainingTable) {
  json m;
  m["run"] = {{"id", 3}, {"name", "train.py"}};
  m["findings"] = json::array();
  m["gpu_stats"] = json::array();
  m["processes"] = json::array();
  m["batch_advice"] = json::array();
  m["epochs"] = json::array();
  m["notes"] = json::array();
  m["train"] = diagnose::train_summary_to_json(*diagnose::summarize_train(testing::two_rank_series()));
  const std::string md = write_markdown(m);
  EXPECT_NE(md.find("## Training"), std::string::npos) << md;
  EXPECT_NE(md.find("| job | — | — | 100 | 120.0 | 0.200s | — | 35.0% |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 0 | node-a | 0 | 100 | 80.0 | 0.100s | 0.100s | 20.0% |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1 | node-a | 1 | 50 | 40.0 | 0.200s | 0.200s | 50.0% |"), std::string::npos) << md;
  m["train"] = nullptr;
  EXPECT_EQ(write_markdown(m).find("## Training"), std::string::npos);
}

// Protocol v3 senders measure the collective wait: the report splits each rank's step time into data,
// collective and compute, and the summary lines say the collective share.
TEST(ReportTrain, WhereTheTimeWentPerRankWithCollectiveWait) {
  auto series = testing::two_rank_series();
  for (auto& r : series.ranks)
    for (auto& w : r.rows)  // rank 0: 30 ms of its 100-ms step, rank 1: 50 ms of its 200-ms step
      w.comm.sum = static_cast<float>(w.steps * (r.id.rank == 0 ? 0.03 : 0.05));
  const auto t = diagnose::summarize_train(series);
  ASSERT_TRUE(t);
  ASSERT_TRUE(t->comm_share);
  EXPECT_NEAR(*t->ranks[0].comm_share, 0.3, 1e-6);
  EXPECT_NEAR(*t->ranks[1].compute_mean_s, 0.05, 1e-6);
  EXPECT_EQ(*diagnose::train_summary_from_json(diagnose::train_summary_to_json(*t)), *t);
  EXPECT_NE(diagnose::format_train_summary(*t, "").find("data wait 20.0%, collective wait 30.0%, 100 steps"),
            std::string::npos)
      << diagnose::format_train_summary(*t, "");
  json m;
  m["run"] = {{"id", 3}, {"name", "train.py"}};
  for (const char* k : {"findings", "gpu_stats", "processes", "batch_advice", "epochs", "notes"})
    m[k] = json::array();
  m["train"] = diagnose::train_summary_to_json(*t);
  const std::string md = write_markdown(m);
  EXPECT_NE(md.find("### Where the time went"), std::string::npos) << md;
  EXPECT_NE(md.find("| 0 | 20.0% | 30.0% | 50.0% | 0.050s |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1 | 50.0% | 25.0% | 25.0% | 0.050s |"), std::string::npos) << md;
  // older senders: no split
  m["train"] = diagnose::train_summary_to_json(*diagnose::summarize_train(testing::two_rank_series()));
  EXPECT_EQ(write_markdown(m).find("Where the time went"), std::string::npos);
}

}  // namespace
}  // namespace trainmon::report
