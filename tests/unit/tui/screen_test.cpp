// SPDX-License-Identifier: Apache-2.0
// `trainmon top` screen model at 40x12, 80x24, 300x80, in UTF-8 and ASCII.
#include <gtest/gtest.h>

#include "trainmon/tui/screen.h"
#include "unit/tui/tui_fixtures.h"

namespace trainmon::tui {
namespace {

using testing::top_snapshot;

bool all_ascii(const std::string& s) {
  for (unsigned char c : s)
    if (c > 0x7E || (c < 0x20 && c != '\n')) return false;
  return true;
}

// Every row takes exactly the width in code points (line() text).
void expect_shape(const Canvas& cv, int w, int h) {
  ASSERT_EQ(cv.width(), w);
  ASSERT_EQ(cv.height(), h);
  for (int r = 0; r < h; ++r) {
    const Line l = cv.line(r);
    int cols = 0;
    for (unsigned char c : l.text)
      if ((c & 0xC0) != 0x80) ++cols;
    EXPECT_EQ(cols, w) << "row " << r;
    int covered = 0;
    for (const auto& s : l.spans) {
      EXPECT_EQ(s.col, covered);
      covered += s.len;
    }
    EXPECT_EQ(covered, w);
  }
}

struct Fixture {
  Snapshot snap;
  History hist;
  UiState ui;
  explicit Fixture(unsigned gpus, unsigned cores = 8) : snap(top_snapshot(gpus, cores)) {
    for (int i = 0; i < 5; ++i) hist.add(snap);
  }
  RenderResult draw(int w, int h, bool utf8) {
    ScreenInput in{&snap, &hist, nullptr};
    return render(in, ui, w, h, utf8);
  }
};

TEST(TuiScreen, Renders80x24WithGpuHostAndProcesses) {
  Fixture f(2);
  auto r = f.draw(80, 24, true);
  expect_shape(r.canvas, 80, 24);
  const std::string t = r.canvas.text();
  EXPECT_NE(t.find("trainmon top  gpu-node-01"), std::string::npos) << t;
  EXPECT_NE(t.find("[0] NVIDIA H200"), std::string::npos) << t;
  EXPECT_NE(t.find("[1] NVIDIA H200"), std::string::npos) << t;
  EXPECT_NE(t.find("60°C"), std::string::npos) << t;
  EXPECT_NE(t.find("throttle: power cap"), std::string::npos) << t;
  EXPECT_NE(t.find("650/700W"), std::string::npos) << t;
  EXPECT_NE(t.find("PCIe rx 2.0M/s tx 1.0M/s"), std::string::npos) << t;
  EXPECT_NE(t.find("Mem"), std::string::npos) << t;
  EXPECT_NE(t.find("avail 48G"), std::string::npos) << t;
  EXPECT_NE(t.find("load 3.50 2.50 1.50"), std::string::npos) << t;
  EXPECT_NE(t.find("1002 alice    1"), std::string::npos) << t;
  EXPECT_NE(t.find("[not visible] python"), std::string::npos) << t;
  EXPECT_EQ(t.find("sleep 1000"), std::string::npos) << "GPU view lists only GPU processes";
  // GPU processes by GPU memory, largest first: 4242 (3000 MiB), then rank 1 (1500), rank 0 (1000).
  ASSERT_EQ(r.keys.pids.size(), 3u);
  EXPECT_EQ(r.keys.pids[0], 4242u);
  EXPECT_EQ(r.keys.pids[1], 1002u);
  EXPECT_EQ(r.keys.pids[2], 1001u);
}

TEST(TuiScreen, Renders40x12CompactWithoutCrash) {
  Fixture f(8);
  auto r = f.draw(40, 12, true);
  expect_shape(r.canvas, 40, 12);
  const std::string t = r.canvas.text();
  EXPECT_NE(t.find("trainmon top"), std::string::npos) << t;
  EXPECT_NE(t.find("more GPUs"), std::string::npos) << t;
  EXPECT_NE(t.find("PID"), std::string::npos) << t;
  EXPECT_NE(t.find("q quit"), std::string::npos) << t;
}

TEST(TuiScreen, Renders300x80FullForm) {
  Fixture f(8, 64);
  auto r = f.draw(300, 80, true);
  expect_shape(r.canvas, 300, 80);
  const std::string t = r.canvas.text();
  for (int g = 0; g < 8; ++g) EXPECT_NE(t.find("[" + std::to_string(g) + "] NVIDIA H200"), std::string::npos);
  EXPECT_NE(t.find("▄▄▄▄▄"), std::string::npos) << "memory history sparkline";
  EXPECT_NE(t.find(" 63["), std::string::npos) << "per-core bars for 64 cores";
  EXPECT_NE(t.find("ELAPSED"), std::string::npos);
}

TEST(TuiScreen, AsciiCanvasIsPureAscii) {
  for (auto [w, h] : {std::pair{40, 12}, {80, 24}, {300, 80}}) {
    Fixture f(8, 16);
    f.ui.tree = true;
    f.ui.view = ProcessView::all;
    auto r = f.draw(w, h, false);
    expect_shape(r.canvas, w, h);
    EXPECT_TRUE(all_ascii(r.canvas.text())) << w << "x" << h << "\n" << r.canvas.text();
  }
  Fixture f(1);
  f.snap.processes[0].cmdline = "python caf\xc3\xa9.py";
  f.ui.view = ProcessView::all;
  auto r = f.draw(80, 24, false);
  EXPECT_NE(r.canvas.text().find("python caf?.py"), std::string::npos);
  EXPECT_NE(r.canvas.text().find("60C"), std::string::npos);
}

TEST(TuiScreen, TinyAndZeroSizesNeverCrash) {
  Fixture f(8);
  for (auto [w, h] : {std::pair{0, 0}, {1, 1}, {10, 3}, {19, 5}, {20, 6}, {25, 7}, {500, 2}, {2, 200}}) {
    auto r = f.draw(w, h, true);
    expect_shape(r.canvas, w, h);
  }
  EXPECT_NE(f.draw(10, 3, true).canvas.text().find("too small"), std::string::npos);
}

TEST(TuiScreen, NoGpuShowsHostOnly) {
  Fixture f(0);
  f.snap.driver.loaded = false;
  f.snap.driver.error = "libnvidia-ml.so.1: cannot open shared object file";
  auto r = f.draw(80, 24, true);
  const std::string t = r.canvas.text();
  EXPECT_NE(t.find("libnvidia-ml.so.1: cannot open"), std::string::npos) << t;
  EXPECT_NE(t.find("GPU: none, host only: libnvidia"), std::string::npos) << t;
  EXPECT_NE(t.find("Mem"), std::string::npos) << t;
}

TEST(TuiScreen, LostGpuSaysSo) {
  Fixture f(2);
  f.snap.gpus[1].responsive = Reading<bool>::fail(ReadStatus::gpu_lost);
  f.snap.gpus[1].utilization_gpu_pct = Reading<unsigned>::fail(ReadStatus::gpu_lost);
  auto t = f.draw(100, 30, true).canvas.text();
  EXPECT_NE(t.find("GPU lost"), std::string::npos) << t;
  t = f.draw(40, 12, true).canvas.text();
  EXPECT_NE(t.find("GPU lost"), std::string::npos) << t;
}

TEST(TuiScreen, FindingsAndActiveRunShown) {
  Fixture f(1);
  LiveInfo live;
  ScreenInput in{&f.snap, &f.hist, &live};
  diagnose::Finding d4 = diagnose::make_finding("D4", diagnose::Severity::warning, 10, 70);
  d4.evidence = "GPU0 util 12 % for 60 s";
  live.findings.push_back(d4);
  live.active_run = "run 7 'yolo' since 11:02 (python)";
  auto t = render(in, f.ui, 100, 30, true).canvas.text();
  EXPECT_NE(t.find("D4 warning"), std::string::npos) << t;
  EXPECT_NE(t.find("GPU0 util 12 % for 60 s"), std::string::npos) << t;
  EXPECT_NE(t.find("recording run 7 'yolo'"), std::string::npos) << t;
}

TEST(TuiScreen, SignalDialogAndHelpOverlay) {
  Fixture f(1);
  f.ui.dialog.stage = DialogStage::confirm_term;
  f.ui.dialog.pid = 1001;
  f.ui.dialog.command = "python train.py --rank 0";
  auto t = f.draw(80, 24, true).canvas.text();
  EXPECT_NE(t.find("Send SIGTERM?"), std::string::npos) << t;
  EXPECT_NE(t.find("pid 1001: python train.py"), std::string::npos) << t;
  f.ui.dialog = {};
  f.ui.help = true;
  t = f.draw(80, 24, false).canvas.text();
  EXPECT_NE(t.find("trainmon top: keys"), std::string::npos) << t;
  EXPECT_TRUE(all_ascii(t));
}

TEST(TuiScreen, SelectedRowStyledAndScrolledIntoView) {
  Fixture f(8);
  f.ui.view = ProcessView::all;
  f.ui.sort = SortKey::pid;
  f.ui.descending = false;
  f.ui.selected_pid = 1008;  // the last rank: GPU rows come first, by pid
  auto r = f.draw(80, 14, true);
  int found = -1;
  for (int row = 0; row < 14; ++row)
    if (r.canvas.row_text(row).find("   1008 ") != std::string::npos) found = row;
  ASSERT_GE(found, 0) << r.canvas.text();
  EXPECT_EQ(r.canvas.style_at(found, 0), Style::selected);
}

}  // namespace
}  // namespace trainmon::tui

namespace trainmon::tui {
namespace {

// Keys work before the first sample (a driver slow to start): the help overlay shows over
// "sampling...", so the next key is not spent closing a help nobody saw.
TEST(TuiScreen, HelpShowsBeforeTheFirstSample) {
  UiState ui;
  ui.help = true;
  const auto t = render(ScreenInput{}, ui, 100, 30, true).canvas.text();
  EXPECT_NE(t.find("sampling..."), std::string::npos) << t;
  EXPECT_NE(t.find("trainmon top: keys"), std::string::npos) << t;
  ui.help = false;
  EXPECT_EQ(render(ScreenInput{}, ui, 100, 30, true).canvas.text().find("trainmon top: keys"),
            std::string::npos);
}

}  // namespace
}  // namespace trainmon::tui
