// SPDX-License-Identifier: Apache-2.0
// `trainmon top` process rows: GPU first, filters, sort, tree, not-visible and ghost processes.
#include <gtest/gtest.h>

#include <tuple>

#include "trainmon/tui/process_table.h"
#include "unit/tui/tui_fixtures.h"

namespace trainmon::tui {
namespace {

std::vector<std::uint32_t> pids(const std::vector<ProcessRow>& rows) {
  std::vector<std::uint32_t> out;
  for (const auto& r : rows) out.push_back(r.pid);
  return out;
}

TEST(TuiProcessTable, GpuViewJoinsAndMarksNotVisible) {
  const Snapshot s = testing::top_snapshot(2);
  UiState ui;
  auto rows = build_process_rows(s, ui, true);
  ASSERT_EQ(pids(rows), (std::vector<std::uint32_t>{4242, 1002, 1001}));
  EXPECT_TRUE(rows[0].not_visible);
  EXPECT_EQ(rows[0].user, "?");
  EXPECT_EQ(rows[1].gpus, "1");
  EXPECT_DOUBLE_EQ(rows[1].gpu_memory_bytes, 1500.0 * testing::kMiB + 4096);
  EXPECT_DOUBLE_EQ(rows[1].sm_pct, 81);
  EXPECT_DOUBLE_EQ(rows[1].cpu_pct, 101);
  EXPECT_DOUBLE_EQ(rows[1].elapsed_s, 10000 - 5001);
  EXPECT_EQ(rows[1].command, "python train.py --rank 1");
}

TEST(TuiProcessTable, AllViewPutsGpuFirstThenSorts) {
  const Snapshot s = testing::top_snapshot(2);
  UiState ui;
  ui.view = ProcessView::all;
  ui.sort = SortKey::pid;
  ui.descending = false;
  EXPECT_EQ(pids(build_process_rows(s, ui, true)),
            (std::vector<std::uint32_t>{1001, 1002, 4242, 900, 950, 1000}));
  ui.descending = true;
  EXPECT_EQ(pids(build_process_rows(s, ui, true)),
            (std::vector<std::uint32_t>{4242, 1002, 1001, 1000, 950, 900}));
  ui.sort = SortKey::rss;
  EXPECT_EQ(pids(build_process_rows(s, ui, true)).back(), 950u);  // 1 MiB, smallest
}

TEST(TuiProcessTable, Filters) {
  const Snapshot s = testing::top_snapshot(2);
  UiState ui;
  ui.view = ProcessView::all;
  ui.filter_text = "SLEEP 1000";  // case-insensitive
  EXPECT_EQ(pids(build_process_rows(s, ui, true)), (std::vector<std::uint32_t>{950}));
  ui.filter_text = "900";  // exact pid
  EXPECT_EQ(pids(build_process_rows(s, ui, true)), (std::vector<std::uint32_t>{900}));
  ui.filter_text.clear();
  ui.filter_user = "bob";
  EXPECT_EQ(pids(build_process_rows(s, ui, true)), (std::vector<std::uint32_t>{950}));
}

TEST(TuiProcessTable, TreeNestsChildrenUnderParents) {
  const Snapshot s = testing::top_snapshot(2);
  UiState ui;
  ui.view = ProcessView::all;
  ui.tree = true;
  ui.sort = SortKey::pid;
  ui.descending = false;
  auto rows = build_process_rows(s, ui, false);
  // Roots: the GPU ranks' parent is listed, so they nest under 1000 under 900.
  EXPECT_EQ(pids(rows), (std::vector<std::uint32_t>{4242, 900, 950, 1000, 1001, 1002}));
  EXPECT_EQ(rows[1].depth, 0);
  EXPECT_EQ(rows[2].tree_prefix, "|- ");
  EXPECT_EQ(rows[3].tree_prefix, "`- ");
  EXPECT_EQ(rows[4].tree_prefix, "   |- ");
  EXPECT_EQ(rows[5].tree_prefix, "   `- ");
  EXPECT_EQ(rows[5].depth, 2);
}

TEST(TuiProcessTable, ZombieOnGpuIsGhost) {
  Snapshot s = testing::top_snapshot(1);
  for (auto& p : s.processes)
    if (p.pid == 1001) p.state = 'Z';
  UiState ui;
  auto rows = build_process_rows(s, ui, true);
  bool ghost = false;
  for (const auto& r : rows)
    if (r.pid == 1001) ghost = r.ghost;
  EXPECT_TRUE(ghost);
}

TEST(TuiProcessTable, DrawsHeaderWithSortMarkerAndDropsColumnsWhenNarrow) {
  const Snapshot s = testing::top_snapshot(2);
  UiState ui;
  auto rows = build_process_rows(s, ui, true);
  Canvas wide(120, 6, true);
  draw_process_table(wide, 0, 6, rows, ui);
  EXPECT_NE(wide.row_text(0).find("GPU-MEM▼"), std::string::npos) << wide.text();
  EXPECT_NE(wide.row_text(0).find("ELAPSED"), std::string::npos);
  EXPECT_NE(wide.row_text(1).find("[not visible] python"), std::string::npos) << wide.text();
  Canvas narrow(40, 6, false);
  draw_process_table(narrow, 0, 6, rows, ui);
  EXPECT_NE(narrow.row_text(0).find("GPU-MEMv"), std::string::npos) << narrow.text();
  EXPECT_EQ(narrow.row_text(0).find("ELAPSED"), std::string::npos) << narrow.text();
}

TEST(TuiProcessTable, GpuListsAreRangesAndCutCellsCarryAMark) {
  EXPECT_EQ(compact_gpu_list(std::vector<unsigned>{}), "");
  EXPECT_EQ(compact_gpu_list(std::vector<unsigned>{3}), "3");
  EXPECT_EQ(compact_gpu_list(std::vector<unsigned>{0, 1}), "0,1");
  EXPECT_EQ(compact_gpu_list(std::vector<unsigned>{0, 1, 2, 3}), "0-3");
  EXPECT_EQ(compact_gpu_list(std::vector<unsigned>{0, 1, 2, 3, 5, 7, 8, 9}), "0-3,5,7-9");
  EXPECT_EQ(compact_gpu_list(std::vector<unsigned>{0, 2, 4, 6}), "0,2,4,6");

  // One process on GPUs 0-3 (the whole node): "0-3" fits the 3-column cell; one on 0,2,4,6 does not and
  // ends with the mark, never reads as "0,2".
  for (const auto& [gpus, want_utf8, want_ascii] :
       {std::tuple{std::vector<unsigned>{0, 1, 2, 3}, "0-3", "0-3"},
        std::tuple{std::vector<unsigned>{0, 2, 4, 6}, "0,…", "0,~"}}) {
    Snapshot s = testing::top_snapshot(8);
    s.gpu_processes.clear();
    for (unsigned g : gpus) {
      GpuProcessSample gp = testing::gpu_process(1001, "python", 1000, g);
      gp.host = HostVisibility::visible;
      s.gpu_processes.push_back(gp);
    }
    UiState ui;
    auto rows = build_process_rows(s, ui, true);
    ASSERT_EQ(rows.size(), 1u);
    for (bool utf8 : {true, false}) {
      Canvas c(120, 4, utf8);
      draw_process_table(c, 0, 4, rows, ui);
      const std::string want = utf8 ? want_utf8 : want_ascii;
      EXPECT_NE(c.row_text(1).find(" " + want + " "), std::string::npos) << c.text();
    }
  }
}

TEST(TuiProcessTable, JobColumnOnlyWhenSomeProcessHasAJobAndTheFilterMatchesIt) {
  Snapshot s = testing::top_snapshot(2);
  UiState ui;
  {
    Canvas c(120, 6, true);
    auto rows = build_process_rows(s, ui, true);
    draw_process_table(c, 0, 6, rows, ui);
    EXPECT_EQ(c.row_text(0).find("JOB"), std::string::npos) << c.text();  // nobody has one
  }
  for (auto& p : s.processes) {
    if (p.pid == 1001) p.attribution.slurm_job_id = "4242";
    if (p.pid == 1002) {
      p.attribution.pod_uid = "8a1b2c3d-1111-2222-3333-444455556666";
      p.attribution.pod_namespace = "team\nx";
      p.attribution.pod_name = "trainer-0";
    }
  }
  auto rows = build_process_rows(s, ui, true);
  Canvas c(120, 6, true);
  draw_process_table(c, 0, 6, rows, ui);
  EXPECT_NE(c.row_text(0).find("JOB"), std::string::npos) << c.text();
  const std::string all = c.text();
  EXPECT_NE(all.find("slurm:4242"), std::string::npos) << all;
  // A control character in a name is shown escaped, never sent to the terminal.
  EXPECT_NE(all.find("pod:team?x/trainer-0"), std::string::npos) << all;
  EXPECT_NE(c.row_text(1).find(" - "), std::string::npos) << all;  // 4242 (not visible): no job
  ui.filter_text = "SLURM:4242";
  EXPECT_EQ(pids(build_process_rows(s, ui, true)), (std::vector<std::uint32_t>{1001}));
  ui.filter_text = "trainer-0";
  EXPECT_EQ(pids(build_process_rows(s, ui, true)), (std::vector<std::uint32_t>{1002}));
}

}  // namespace
}  // namespace trainmon::tui
