// SPDX-License-Identifier: Apache-2.0
// A rank's GPU energy over its steps (include/trainmon/diagnose/train_energy.h) and where the views
// take it from (diagnose::summarize_train of a RunSeries, its JSON, its text, the Markdown report).
#include <gtest/gtest.h>

#include <cmath>

#include "report/writers.h"
#include "trainmon/diagnose/train_energy.h"
#include "trainmon/diagnose/train_summary.h"
#include "unit/recorder/train_synth.h"

namespace trainmon::diagnose {
namespace {

// Ticks every second over [0, 12]; GPU 0's counter grows 300 W from 1000 J; GPU 1's 200 W from 0 and
// resets at 5.75 s (reads 50 J at 6 s). The ranks of testing::two_rank_series: rank 0 (pid 4100) on
// GPU 0, steps over [0, 10] (100 steps, 800 samples); rank 1 (pid 4101) on GPU 1, over [0.01, 10.01]
// (50 steps, 400 samples). Two epochs end (each reported by both ranks).
RunSeries two_gpu_run() {
  RunSeries s;
  ensure_gpu(s, 0);
  ensure_gpu(s, 1);
  std::vector<double> t;
  for (int i = 0; i <= 12; ++i) t.push_back(i);
  append_empty_rows(s, t);
  for (std::size_t i = 0; i < t.size(); ++i) {
    s.gpus[0].energy_j[i] = 1000 + 300 * t[i];
    s.gpus[1].energy_j[i] = t[i] < 5.75 ? 200 * t[i] : 200 * (t[i] - 5.75);
  }
  s.train = testing::two_rank_series();
  for (const auto& [epoch, at] : {std::pair{0, 5.0}, {0, 5.01}, {1, 10.0}, {1, 10.01}}) {
    TrainEvent e;
    e.t = at;
    e.kind = "epoch_end";
    e.epoch = epoch;
    append_train_event(s, e);
  }
  return s;
}

TEST(TrainEnergy, TheCounterGrowthOverEachRanksStepsPerStepSampleAndEpoch) {
  const RunSeries s = two_gpu_run();
  const auto e0 = rank_energy(s, s.train.ranks[0]);
  ASSERT_TRUE(e0);
  EXPECT_EQ(e0->gpu, 0u);
  EXPECT_DOUBLE_EQ(e0->t0, 0.0);  // the first row's end minus its span: the first step's start
  EXPECT_DOUBLE_EQ(e0->t1, 10.0);
  EXPECT_NEAR(e0->energy_j, 3000, 1e-6);
  EXPECT_EQ(e0->steps, 100);
  EXPECT_EQ(e0->samples, 800);
  EXPECT_EQ(e0->epochs, 2u);
  EXPECT_FALSE(e0->shared);
  EXPECT_NEAR(e0->j_per_step(), 30, 1e-9);
  EXPECT_NEAR(e0->j_per_sample(), 3.75, 1e-9);
  EXPECT_NEAR(e0->wh(), 3000 / 3600.0, 1e-9);
  EXPECT_NEAR(e0->wh_per_epoch(), 1500 / 3600.0, 1e-9);

  // GPU 1 reset between 5 s and 6 s: the 50 J read after it count from 0; interpolated at 0.01 and
  // 10.01 s: 200 x 0.01 = 2 J .. 1000 + 50 + 200 x 4.01 = 1852 J.
  const auto e1 = rank_energy(s, s.train.ranks[1]);
  ASSERT_TRUE(e1);
  EXPECT_NEAR(e1->energy_j, 1850, 1e-6);
  EXPECT_EQ(e1->steps, 50);
  EXPECT_NEAR(e1->j_per_step(), 37, 1e-9);
}

TEST(TrainEnergy, OnlyTheStepsWithinTheCountersReadingsCount) {
  RunSeries s = two_gpu_run();
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s.t[i] < 3 || s.t[i] > 8) s.gpus[0].energy_j[i] = NAN;
  const auto e = rank_energy(s, s.train.ranks[0]);
  ASSERT_TRUE(e);
  EXPECT_DOUBLE_EQ(e->t0, 3.0);
  EXPECT_DOUBLE_EQ(e->t1, 8.0);
  EXPECT_EQ(e->steps, 50);  // rows at 4..8 s
  EXPECT_NEAR(e->energy_j, 1500, 1e-6);
  // heartbeats after the last step (a rank waiting at the end) add no time
  RunSeries idle = two_gpu_run();
  TrainWindow hb;
  hb.t = 11.5;
  append_train_window(idle.train, idle.train.ranks[0].id, hb);
  EXPECT_DOUBLE_EQ(rank_energy(idle, idle.train.ranks[0])->t1, 10.0);
}

TEST(TrainEnergy, UnknownMeansNothingNotZero) {
  RunSeries s = two_gpu_run();
  std::fill(s.gpus[0].energy_j.begin(), s.gpus[0].energy_j.end(), NAN);  // unsupported (MIG, pre-Volta)
  EXPECT_FALSE(rank_energy(s, s.train.ranks[0]));
  EXPECT_TRUE(rank_energy(s, s.train.ranks[1]));
  RankSeries no_gpu = s.train.ranks[1];
  no_gpu.id.gpu = -1;
  EXPECT_FALSE(rank_energy(s, no_gpu));
  no_gpu.id.gpu = 7;  // a GPU the run never saw
  EXPECT_FALSE(rank_energy(s, no_gpu));
  // the summary: no energy figure for rank 0 and none for the job; rank 1's stays
  const auto sum = diagnose::summarize_train(s);
  ASSERT_TRUE(sum);
  EXPECT_FALSE(sum->ranks[0].energy_j);
  EXPECT_TRUE(sum->ranks[1].energy_j);
  EXPECT_FALSE(sum->energy_j);
  EXPECT_TRUE(diagnose::train_summary_to_json(*sum)["ranks"][0]["energy_j"].is_null());
  EXPECT_EQ(diagnose::format_train_figures(sum->ranks[0]).find("energy"), std::string::npos);
}

TEST(TrainEnergy, AGpuSharedWithAnotherProcessOrRankIsSaidSo) {
  RunSeries s = two_gpu_run();
  // rank 1's small context on GPU 0 (DDP touching device 0): not a sharer
  s.gpus[0].procs.push_back({5, 4101, 500.f, kNA, HostVisibility::visible, true});
  s.gpus[0].procs.push_back({5, 4100, 60000.f, kNA, HostVisibility::visible, true});
  EXPECT_FALSE(rank_energy(s, s.train.ranks[0])->shared);
  // another program on GPU 1 during rank 1's steps
  s.gpus[1].procs.push_back({4, 777, 2000.f, kNA, HostVisibility::visible, false});
  const auto e1 = rank_energy(s, s.train.ranks[1]);
  ASSERT_TRUE(e1);
  EXPECT_TRUE(e1->shared);
  EXPECT_TRUE(std::isnan(e1->j_per_step()));
  EXPECT_TRUE(std::isnan(e1->j_per_sample()));
  EXPECT_TRUE(std::isnan(e1->wh_per_epoch()));
  EXPECT_NEAR(e1->energy_j, 1850, 1e-6);  // the whole GPU's, said as such
  // two ranks on one GPU
  RunSeries both = two_gpu_run();
  both.train.ranks[1].id.gpu = 0;
  EXPECT_TRUE(rank_energy(both, both.train.ranks[0])->shared);
}

TEST(TrainEnergy, TheSummaryJsonTextAndReportCarryIt) {
  const RunSeries s = two_gpu_run();
  const auto sum = diagnose::summarize_train(s);
  ASSERT_TRUE(sum);
  ASSERT_TRUE(sum->ranks[0].j_per_step);
  EXPECT_NEAR(*sum->ranks[0].j_per_step, 30, 1e-9);
  EXPECT_NEAR(*sum->ranks[1].j_per_step, 37, 1e-9);
  // the job: both GPUs' energy; a job step costs every rank's step
  EXPECT_NEAR(*sum->energy_j, 4850, 1e-6);
  EXPECT_NEAR(*sum->j_per_step, 67, 1e-9);
  EXPECT_NEAR(*sum->j_per_sample, 4850.0 / 1200, 1e-9);
  EXPECT_NEAR(*sum->wh_per_epoch, 4850 / 3600.0 / 2, 1e-9);
  const auto j = diagnose::train_summary_to_json(*sum);
  EXPECT_NEAR(j["ranks"][0]["energy_wh"].get<double>(), 3000 / 3600.0, 1e-9);
  EXPECT_EQ(*diagnose::train_summary_from_json(j), *sum);
  EXPECT_NE(diagnose::format_train_figures(sum->ranks[0])
                .find("100 steps, energy 30.0 J/step, 3.8 J/sample, 0.833 Wh (0.417 Wh/epoch)"),
            std::string::npos)
      << diagnose::format_train_figures(sum->ranks[0]);

  nlohmann::json m;
  m["run"] = {{"id", 3}, {"name", "train.py"}};
  for (const char* k : {"findings", "gpu_stats", "processes", "batch_advice", "epochs", "notes"})
    m[k] = nlohmann::json::array();
  m["train"] = j;
  const std::string md = report::write_markdown(m);
  EXPECT_NE(md.find("### Energy"), std::string::npos) << md;
  EXPECT_NE(md.find("| job | — | 1.35 Wh | 67.0 J | 4.0 J | 0.674 Wh |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 0 | 0 | 0.833 Wh | 30.0 J | 3.8 J | 0.417 Wh |"), std::string::npos) << md;

  RunSeries shared = two_gpu_run();
  shared.gpus[1].procs.push_back({4, 777, 2000.f, kNA, HostVisibility::visible, false});
  const auto ss = diagnose::summarize_train(shared);
  EXPECT_TRUE(ss->energy_shared);
  EXPECT_FALSE(ss->energy_j);
  EXPECT_NE(diagnose::format_train_figures(ss->ranks[1]).find("energy GPU shared (1850 J for the whole GPU)"),
            std::string::npos)
      << diagnose::format_train_figures(ss->ranks[1]);
}

}  // namespace
}  // namespace trainmon::diagnose
