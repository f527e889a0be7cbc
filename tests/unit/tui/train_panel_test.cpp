// SPDX-License-Identifier: Apache-2.0
// `trainmon top`'s training panel: the job line and the rank lines of live runs, at 120, 80 and 40
// columns (src/tui/train_panel.cpp, the layout in screen.cpp).
#include <gtest/gtest.h>

#include <sstream>

#include "trainmon/ipc/run_state_file.h"
#include "trainmon/tui/screen.h"
#include "unit/recorder/train_synth.h"
#include "unit/tui/tui_fixtures.h"

namespace trainmon::tui {
namespace {

constexpr double kStart = 1'718'000'000.0;

ipc::LiveRunState live_run() {
  ipc::RunStateHeader h;
  h.run_id = 12;
  h.name = "train.py";
  h.pid = 99;
  h.host = "node-a";
  h.start_unix_s = kStart;
  h.interval_ms = 1000;
  auto s = ipc::parse_run_state(ipc::run_state_json(h, testing::two_rank_series(), 10.5, {}));
  EXPECT_TRUE(s);
  return *s;
}

struct Screen {
  Snapshot snap = testing::top_snapshot(1);
  History hist;
  UiState ui;
  LiveInfo live;
  Screen() {
    snap.time_unix_ns = static_cast<std::int64_t>((kStart + 11) * 1e9);  // 1 s after the last steps
    live.runs = {live_run()};
  }
  std::vector<std::string> lines(int w, int h) {
    ScreenInput in{&snap, &hist, &live};
    const auto r = render(in, ui, w, h, true);
    std::vector<std::string> out;
    std::istringstream text(r.canvas.text());
    for (std::string l; std::getline(text, l);) out.push_back(l);
    return out;
  }
};

const std::string* find_line(const std::vector<std::string>& lines, const std::string& part) {
  for (const auto& l : lines)
    if (l.find(part) != std::string::npos) return &l;
  return nullptr;
}

TEST(TuiTrainPanel, JobAndRankLinesAt80Columns) {
  Screen s;
  const auto lines = s.lines(80, 24);
  const auto* job = find_line(lines, "train  ");
  ASSERT_TRUE(job) << ::testing::PrintToString(lines);
  EXPECT_NE(job->find("train.py"), std::string::npos) << *job;
  EXPECT_NE(job->find("120.0 samples/s"), std::string::npos) << *job;
  EXPECT_NE(job->find("step 0.200s"), std::string::npos) << *job;
  EXPECT_NE(job->find("data 35.0%"), std::string::npos) << *job;
  EXPECT_NE(job->find("last 1.0s ago"), std::string::npos) << *job;
  const auto* r0 = find_line(lines, "  rank 0");
  const auto* r1 = find_line(lines, "  rank 1");
  ASSERT_TRUE(r0 && r1) << ::testing::PrintToString(lines);
  for (const char* part : {"node-a", "GPU 0", "step 0.100s", "data 20.0%", "last 1.0s ago"})
    EXPECT_NE(r0->find(part), std::string::npos) << part << " in " << *r0;
  for (const char* part : {"GPU 1", "step 0.200s", "data 50.0%", "last 1.0s ago"})
    EXPECT_NE(r1->find(part), std::string::npos) << part << " in " << *r1;
  // columns line up
  EXPECT_EQ(r0->find("step "), r1->find("step "));
  EXPECT_EQ(r0->find("last "), r1->find("last "));
  // wider: the run id, the rank count and the job's total steps too
  const auto wide = s.lines(140, 30);
  const auto* full = find_line(wide, "train  ");
  ASSERT_TRUE(full);
  for (const char* part : {"run 12", "2 ranks", "100 steps"})
    EXPECT_NE(full->find(part), std::string::npos) << *full;
  EXPECT_NE(find_line(wide, "  rank 1")->find("p90 0.200s"), std::string::npos);
}

TEST(TuiTrainPanel, CollectiveWaitColumnWhenMeasured) {
  Screen s;
  auto& run = s.live.runs[0];
  run.comm_share = 0.275;  // protocol v3 senders
  run.ranks[0].comm_share = 0.3;
  run.ranks[1].comm_share = 0.25;
  const auto lines = s.lines(140, 30);
  const auto* job = find_line(lines, "train  ");
  ASSERT_TRUE(job) << ::testing::PrintToString(lines);
  EXPECT_NE(job->find("comm 27.5%"), std::string::npos) << *job;
  const auto* r0 = find_line(lines, "  rank 0");
  const auto* r1 = find_line(lines, "  rank 1");
  ASSERT_TRUE(r0 && r1) << ::testing::PrintToString(lines);
  EXPECT_NE(r0->find("comm 30.0%"), std::string::npos) << *r0;
  EXPECT_EQ(r0->find("comm "), r1->find("comm "));
  // an older sender: no comm column at all
  Screen old;
  for (const auto& l : old.lines(140, 30)) EXPECT_EQ(l.find("comm "), std::string::npos) << l;
}

TEST(TuiTrainPanel, NarrowTerminalsKeepWhatMatters) {
  Screen s;
  const auto lines = s.lines(40, 16);
  const auto* job = find_line(lines, "train  ");
  ASSERT_TRUE(job) << ::testing::PrintToString(lines);
  EXPECT_NE(job->find("120.0 samples/s"), std::string::npos) << *job;
  EXPECT_NE(job->find("step 0.200s"), std::string::npos) << *job;
  EXPECT_EQ(job->find("train.py"), std::string::npos) << *job;  // the name went first
  const auto* r1 = find_line(lines, "  rank 1");
  ASSERT_TRUE(r1) << ::testing::PrintToString(lines);
  EXPECT_NE(r1->find("step 0.200s"), std::string::npos) << *r1;
  EXPECT_NE(r1->find("last 1.0s ago"), std::string::npos) << *r1;
  EXPECT_EQ(r1->find("node-a"), std::string::npos) << *r1;
  // too few rows for every rank: the rest is counted
  const auto small = s.lines(40, 12);
  EXPECT_TRUE(find_line(small, "train  ")) << ::testing::PrintToString(small);
  EXPECT_TRUE(find_line(small, "more rank")) << ::testing::PrintToString(small);
}

TEST(TuiTrainPanel, OneRankOneLineAndNoRunsNoPanel) {
  Screen s;
  s.live.runs[0].ranks.resize(1);
  auto lines = s.lines(80, 24);
  EXPECT_TRUE(find_line(lines, "train  "));
  EXPECT_FALSE(find_line(lines, "  rank 0"));
  EXPECT_FALSE(find_line(lines, "ranks"));
  // a live run without step timing, and no run at all: no panel
  s.live.runs[0].train = false;
  EXPECT_FALSE(find_line(s.lines(80, 24), "samples/s"));
  s.live.runs.clear();
  EXPECT_FALSE(find_line(s.lines(80, 24), "samples/s"));
  // a state file not rewritten for a while says so
  s.live.runs = {live_run()};
  s.live.runs[0].time_unix_s = kStart + 1;
  EXPECT_TRUE(find_line(s.lines(120, 30), "(state 10s old)"));
}

/// A run's open hang (D23, its two ranks' stacks) through the state document, and top's own D4 and
/// a D12 that the run gives too.
void add_hang(Screen& s) {
  auto hang = diagnose::make_finding("D23", diagnose::Severity::critical, 5, 40);
  hang.evidence = "no step completed on rank 0, rank 1 for 35 s";
  hang.pids = {4242, 4243};
  diagnose::RankStack r0, r1;
  r0.rank = 0;
  r0.pid = 4242;
  r0.where = "torch/distributed/distributed_c10d.py:1536 in all_reduce";
  r0.caller = "hang.py:64 in run";
  r1.rank = 1;
  r1.pid = 4243;
  r1.where = "hang.py:62 in run";
  hang.stacks = {r0, r1};
  auto throttle = diagnose::make_finding("D12", diagnose::Severity::warning, 5, 40);
  throttle.gpus = {0};
  throttle.evidence = "GPU0 thermal slowdown (the run's)";
  ipc::RunStateHeader h;
  h.run_id = 12;
  h.name = "hang.py";
  h.pid = 99;
  h.start_unix_s = kStart;
  const std::vector<diagnose::Finding> fs = {hang, throttle};
  auto run = ipc::parse_run_state(ipc::run_state_json(h, testing::two_rank_series(), 10.5, fs));
  ASSERT_TRUE(run);
  s.live.runs = {*run};
  auto d4 = diagnose::make_finding("D4", diagnose::Severity::warning, 10, 70);
  d4.evidence = "GPU0 util 12 % (top's own)";
  auto own_throttle = throttle;
  own_throttle.evidence = "GPU0 thermal slowdown (top's own)";
  s.live.findings = {d4, own_throttle};
}

TEST(TuiFindingsPanel, RunsFindingsAndEachRanksStuckLineMergedWithTopsOwn) {
  Screen s;
  add_hang(s);
  const auto lines = s.lines(120, 40);
  const auto* hang = find_line(lines, "D23 critical");
  ASSERT_TRUE(hang) << ::testing::PrintToString(lines);
  EXPECT_NE(hang->find("no step completed on rank 0, rank 1"), std::string::npos) << *hang;
  const auto* r0 = find_line(lines, "  rank 0 (pid 4242) at ");
  const auto* r1 = find_line(lines, "  rank 1 (pid 4243) at hang.py:62 in run");
  ASSERT_TRUE(r0 && r1) << ::testing::PrintToString(lines);
  EXPECT_NE(r0->find("all_reduce (called from hang.py:64 in run)"), std::string::npos) << *r0;
  // the stuck lines follow their finding; critical first
  EXPECT_LT(hang, r0);
  EXPECT_LT(r0, r1);
  EXPECT_TRUE(find_line(lines, "GPU0 util 12 % (top's own)")) << ::testing::PrintToString(lines);
  // one fault, one line: the run's D12, not top's copy of it
  EXPECT_TRUE(find_line(lines, "thermal slowdown (the run's)")) << ::testing::PrintToString(lines);
  EXPECT_FALSE(find_line(lines, "thermal slowdown (top's own)")) << ::testing::PrintToString(lines);
}

TEST(TuiFindingsPanel, NarrowAndShortTerminalsKeepTheHangFirst) {
  Screen s;
  add_hang(s);
  for (auto [w, h] : {std::pair{40, 12}, std::pair{60, 16}, std::pair{80, 24}}) {
    const auto lines = s.lines(w, h);
    ASSERT_EQ(lines.size(), static_cast<std::size_t>(h));
    for (const auto& l : lines) EXPECT_LE(l.size(), static_cast<std::size_t>(4 * w)) << l;
    EXPECT_TRUE(find_line(lines, "D23 critical")) << w << "x" << h << ::testing::PrintToString(lines);
  }
  // room for it: the stuck lines too, cut to the width
  const auto lines = s.lines(60, 30);
  const auto* r1 = find_line(lines, "  rank 1 (pid 4243) at hang.py:62");
  ASSERT_TRUE(r1) << ::testing::PrintToString(lines);
}

}  // namespace
}  // namespace trainmon::tui
