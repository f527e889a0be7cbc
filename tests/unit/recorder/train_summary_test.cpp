// SPDX-License-Identifier: Apache-2.0
// The training figures of a run in its stored summary, the end-of-run summary, `show` and the `runs`
// table (include/trainmon/diagnose/train_summary.h, run_stats.h, run_report.h).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <optional>

#include <unistd.h>
#include <set>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "trainmon/core/i18n.h"
#include "trainmon/core/units.h"
#include "trainmon/diagnose/train_summary.h"
#include "trainmon/recorder/run_report.h"
#include "trainmon/recorder/run_stats.h"
#include "unit/recorder/train_synth.h"

namespace trainmon::recorder {
namespace {

using namespace trainmon::diagnose;  // the summary figures (diagnose/train_summary.h)
using trainmon::testing::two_rank_series;

TEST(TrainSummary, FiguresOfTheTwoRanksAndTheJob) {
  const auto s = summarize_train(two_rank_series());
  ASSERT_TRUE(s);
  EXPECT_EQ(s->steps, 100u);
  EXPECT_NEAR(*s->samples, 1200, 1e-6);
  EXPECT_NEAR(*s->samples_per_s, 120, 1e-3);
  EXPECT_NEAR(*s->step_median_s, 0.2, 1e-6);
  EXPECT_NEAR(*s->data_share, 0.35, 1e-6);
  ASSERT_EQ(s->ranks.size(), 2u);
  const auto& r0 = s->ranks[0];
  const auto& r1 = s->ranks[1];
  EXPECT_EQ(r0.rank, 0);
  EXPECT_EQ(r0.host, "node-a");
  EXPECT_EQ(r0.gpu, 0);
  EXPECT_EQ(r0.steps, 100u);
  EXPECT_NEAR(*r0.samples_per_s, 80, 1e-3);
  EXPECT_NEAR(*r0.step_median_s, 0.1, 1e-6);
  EXPECT_NEAR(*r0.data_share, 0.2, 1e-6);
  EXPECT_EQ(r1.steps, 50u);
  EXPECT_NEAR(*r1.samples_per_s, 40, 1e-3);
  EXPECT_NEAR(*r1.step_median_s, 0.2, 1e-6);
  EXPECT_NEAR(*r1.data_share, 0.5, 1e-6);
  // A span: the last 5 rows of each rank.
  const auto half = summarize_train(two_rank_series(), 5.5, 11);
  ASSERT_TRUE(half);
  EXPECT_EQ(half->steps, 50u);
  EXPECT_NEAR(*half->samples, 600, 1e-6);
}

TEST(TrainSummary, NoStepTimingMeansNoSummaryNotZeros) {
  EXPECT_FALSE(summarize_train(diagnose::TrainSeries{}));
  // heartbeats only (a rank that never finished a step)
  diagnose::TrainSeries hb;
  diagnose::TrainWindow w;
  w.t = 1;
  diagnose::append_train_window(hb, testing::train_rank_id(0, 1), w);
  EXPECT_FALSE(summarize_train(hb));

  RunSummary old;
  old.duration_ms = 5000;
  const auto j = nlohmann::json::parse(summary_to_json(old));
  EXPECT_FALSE(j.contains("train"));
  EXPECT_FALSE(summary_from_json(summary_to_json(old)).train);
  EXPECT_EQ(format_summary(old, "command exited 0", 3, 0).find("training"), std::string::npos);
  // summaries stored before training data existed read back without one
  EXPECT_FALSE(summary_from_json(R"({"duration_s": 2.5, "ticks": 3, "gpus": []})").train);
  // garbage in the train object: no summary, the rest stays
  const auto bad = summary_from_json(R"({"duration_s": 2.5, "train": {"steps": "many"}})");
  EXPECT_FALSE(bad.train);
  EXPECT_EQ(bad.duration_ms, 2500);
}

TEST(TrainSummary, StoredJsonRoundTripsAndPrints) {
  RunSummary s;
  s.duration_ms = 10'000;
  s.train = summarize_train(two_rank_series());
  const std::string text = summary_to_json(s);
  const auto j = nlohmann::json::parse(text);
  ASSERT_TRUE(j.contains("train"));
  EXPECT_EQ(j["train"]["steps"], 100);
  EXPECT_NEAR(j["train"]["samples_per_s"].get<double>(), 120, 1e-3);
  EXPECT_EQ(j["train"]["ranks"][1]["rank"], 1);
  EXPECT_EQ(j["train"]["ranks"][1]["host"], "node-a");
  EXPECT_NEAR(j["train"]["ranks"][1]["step_median_s"].get<double>(), 0.2, 1e-6);
  const auto back = summary_from_json(text);
  ASSERT_TRUE(back.train);
  EXPECT_EQ(*back.train, *s.train);

  const std::string out = format_summary(s, "command exited 0", 7, 0);
  EXPECT_NE(out.find("  training: 120.0 samples/s, step 0.200s median, data wait 35.0%, 100 steps\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("    rank 0 (node-a, GPU 0): 80.0 samples/s, step 0.100s median (p90 0.100s), data wait "
                     "20.0%, 100 steps\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("    rank 1 (node-a, GPU 1): 40.0 samples/s, step 0.200s median"), std::string::npos)
      << out;
  // one rank: no per-rank line
  s.train->ranks.resize(1);
  EXPECT_EQ(format_summary(s, "command exited 0", 7, 0).find("rank 0"), std::string::npos);
}

TEST(TrainSummary, NumberFormats) {
  EXPECT_EQ(format_samples_per_s(1234.56), "1234.6");
  EXPECT_EQ(format_samples_per_s(123456.7), "123457");
  EXPECT_EQ(format_samples_per_s(NAN), "");
  EXPECT_EQ(format_step_s(0.0042), "4.2ms");
  EXPECT_EQ(format_step_s(0.0000317), "32us");
  EXPECT_EQ(format_step_s(0.00094), "940us");
  EXPECT_EQ(format_step_s(0.00096), "1.0ms");
  EXPECT_EQ(format_step_s(0.412), "0.412s");
  EXPECT_EQ(format_step_s(12.345), "12.35s");
  EXPECT_EQ(format_step_s(123.45), "123.5s");
  EXPECT_EQ(format_step_s(4321.0), "4321s");
  EXPECT_EQ(format_step_s(-1), "");
  EXPECT_EQ(format_share_pct(0.123), "12.3%");
  EXPECT_EQ(format_share_pct(NAN), "");
  TrainRankSummary r;
  r.key = -1 - 4242;
  EXPECT_EQ(describe_rank(r), "pid 4242");
  r.host = "evil\x1b[31m";
  EXPECT_EQ(describe_rank(r), "pid 4242 (evil?[31m)");  // no escape sequence reaches the terminal
}

store::RunInfo run_info(std::int64_t id, std::string name, const RunSummary* summary) {
  store::RunInfo r;
  r.id = id;
  r.name = std::move(name);
  r.kind = "run";
  r.command = {"python", "train.py", "--epochs", "90"};
  r.start_unix_ns = 1'718'000'000'000'000'000;
  r.end_unix_ns = r.start_unix_ns + 754'000'000'000;
  r.status = "exited";
  r.exit_code = 0;
  if (summary) r.summary_json = summary_to_json(*summary);
  return r;
}

TEST(RunsTable, TrainingColumnsWithBlanksForOldRunsAndNoneWithoutTraining) {
  RunSummary trained;
  trained.train = summarize_train(two_rank_series());
  RunSummary plain;
  const std::vector<store::RunInfo> runs = {run_info(12, "train.py", &trained), run_info(11, "old", &plain),
                                            run_info(10, "older", nullptr)};
  const std::string table = format_runs_table(runs);
  std::istringstream in(table);
  std::string header, first, second, third;
  std::getline(in, header);
  std::getline(in, first);
  std::getline(in, second);
  std::getline(in, third);
  const auto col = header.find("SAMPLES/S");
  ASSERT_NE(col, std::string::npos) << table;
  EXPECT_NE(header.find("STEP"), std::string::npos);
  EXPECT_NE(header.find("DATA"), std::string::npos);
  // right-aligned under their headers
  EXPECT_NE(first.find("    120.0 0.200s 35.0%"), std::string::npos) << table;
  // runs without training data: blanks, not zeros
  EXPECT_EQ(second.substr(col, 9), std::string(9, ' ')) << table;
  EXPECT_EQ(second.find("0.0"), std::string::npos) << table;
  EXPECT_EQ(third.substr(col, 9), std::string(9, ' ')) << table;
  EXPECT_NE(first.find("python train.py --epochs 90"), std::string::npos);

  const std::string without = format_runs_table({runs[1], runs[2]});
  EXPECT_EQ(without.find("SAMPLES/S"), std::string::npos) << without;
  EXPECT_NE(without.find("FINDINGS  COMMAND"), std::string::npos) << without;
}

TEST(RunsTable, EightyColumnsKeepTheTrainingFiguresAndNeverWrap) {
  RunSummary trained;
  trained.train = summarize_train(two_rank_series());
  std::vector<store::RunInfo> runs = {run_info(12345, "a-rather-long-run-name", &trained),
                                      run_info(7, "train.py", &trained)};
  runs[1].status = "signaled";
  runs[1].exit_code = 139;
  for (std::size_t cols : {80u, 62u}) {
    const std::string table = format_runs_table(runs, cols);
    std::istringstream in(table);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      EXPECT_LE(display_width(line), cols) << table;
      if (n == 1) {
        EXPECT_NE(line.find("SAMPLES/S"), std::string::npos) << table;
        EXPECT_NE(line.find("DATA"), std::string::npos) << table;
      } else {
        EXPECT_NE(line.find("120.0 0.200s 35.0%"), std::string::npos) << table;
      }
    }
    EXPECT_EQ(n, 3);
  }
  // a wide terminal gets the full start time and every column
  const std::string wide = format_runs_table(runs, 200);
  EXPECT_NE(wide.find("GPUS"), std::string::npos);
  EXPECT_NE(wide.find("a-rather-long-ru"), std::string::npos);
}

TEST(RunDetails, ShowPrintsTheTrainingFigures) {
  RunSummary trained;
  trained.train = summarize_train(two_rank_series());
  const std::string text = format_run_details(run_info(12, "train.py", &trained));
  EXPECT_NE(text.find("  training: 120.0 samples/s, step 0.200s median, data wait 35.0%, 100 steps\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    rank 1 (node-a, GPU 1): 40.0 samples/s"), std::string::npos) << text;
  RunSummary plain;
  EXPECT_EQ(format_run_details(run_info(11, "old", &plain)).find("training"), std::string::npos);
}

// ---- in Chinese (docs/language.md): the catalogue of the tree, compiled by the real msgfmt ----------

/// Loads po/zh_CN.po compiled by msgfmt; false when msgfmt is missing. English again at scope exit.
class Chinese {
 public:
  Chinese() {
    const std::string mo =
        (std::filesystem::temp_directory_path() / ("trainmon-views-" + std::to_string(::getpid()) + ".mo"))
            .string();
    const std::string cmd = "msgfmt -o '" + mo + "' '" TRAINMON_SOURCE_DIR "/po/zh_CN.po' 2>/dev/null";
    ok_ = std::system(cmd.c_str()) == 0 && i18n::load_catalogue(mo, "zh_CN");
    std::filesystem::remove(mo);
  }
  ~Chinese() { i18n::load_catalogue({}, {}); }
  bool ok() const { return ok_; }

 private:
  bool ok_ = false;
};

/// The text of `line` in display columns [from, to) (CJK characters two), trimmed.
std::string cell(const std::string& line, std::size_t from, std::size_t to) {
  const std::string head = truncate_display(line, from), upto = truncate_display(line, to);
  std::string c = upto.substr(head.size());
  while (!c.empty() && c.back() == ' ') c.pop_back();
  while (!c.empty() && c.front() == ' ') c.erase(0, 1);
  return c;
}

TEST(RunsTable, InChineseTheHeadersAndStatusAreTranslatedAndTheColumnsAlignInTerminalColumns) {
  Chinese zh;
  if (!zh.ok()) GTEST_SKIP() << "msgfmt is not installed";
  RunSummary trained;
  trained.train = summarize_train(two_rank_series());
  std::vector<store::RunInfo> runs = {run_info(12, "train.py", &trained), run_info(7, "训练任务", &trained)};
  // run 7 still records: its recorder is this process on this host
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  runs[1].status = "running";
  runs[1].end_unix_ns.reset();
  runs[1].exit_code.reset();
  runs[1].recorder_pid = ::getpid();
  runs[1].host = host;
  runs[1].finding_count = 3;       // every live finding stored so far
  runs[1].open_finding_count = 1;  // of which one is still open
  runs[0].finding_count = runs[0].open_finding_count = 2;
  for (std::size_t cols : {0u, 80u, 62u}) {
    const std::string table = format_runs_table(runs, cols);
    std::istringstream in(table);
    std::string header, first, second;
    std::getline(in, header);
    std::getline(in, first);
    std::getline(in, second);
    for (const auto& l : {header, first, second}) {
      if (cols) {
        EXPECT_LE(display_width(l), cols) << table;
      }
    }
    ASSERT_NE(header.find("名称"), std::string::npos) << table;
    ASSERT_NE(header.find("状态"), std::string::npos) << table;
    EXPECT_EQ(header.find("NAME"), std::string::npos) << table;
    // FINDINGS (right-aligned): the count under its header, in terminal columns; the running run's
    // is the open findings only
    const auto at = header.find("诊断结果");
    ASSERT_NE(at, std::string::npos) << table;
    const std::size_t from = display_width(header.substr(0, at)), to = from + 8;
    EXPECT_EQ(cell(first, from, to), "2") << table;
    EXPECT_EQ(cell(second, from, to), "1") << table;
    EXPECT_NE(second.find("运行中"), std::string::npos) << table;
    EXPECT_NE(first.find("已退出(0)"), std::string::npos) << table;
    // the training figures right-aligned under their headers in both rows
    const auto sps = header.find("samples/s");
    ASSERT_NE(sps, std::string::npos) << table;
    const std::size_t s0 = display_width(header.substr(0, sps));
    EXPECT_EQ(cell(first, s0, s0 + 9), "120.0") << table;
    EXPECT_EQ(cell(second, s0, s0 + 9), "120.0") << table;
  }
}

TEST(RunDetails, InChineseTheTrainingLinesKeepTheirNumbersAndLineUpWithTheOtherRows) {
  Chinese zh;
  if (!zh.ok()) GTEST_SKIP() << "msgfmt is not installed";
  RunSummary trained;
  trained.train = summarize_train(two_rank_series());
  const std::string text = format_run_details(run_info(12, "train.py", &trained));
  const std::string figures = "120.0 samples/s，step 中位数 0.200s，等数据 35.0%，100 step\n";
  const auto at = text.find(figures);
  ASSERT_NE(at, std::string::npos) << text;
  const auto cmd = text.find("python train.py");
  ASSERT_NE(cmd, std::string::npos) << text;
  // the value starts at the same terminal column as the command's
  const auto line_of = [&](std::size_t pos) {
    return text.substr(text.rfind('\n', pos) + 1, pos - text.rfind('\n', pos) - 1);
  };
  EXPECT_EQ(display_width(line_of(at)), display_width(line_of(cmd))) << text;
  EXPECT_NE(line_of(at).find("训练："), std::string::npos) << text;
  EXPECT_NE(text.find("    rank 1（node-a，GPU 1）：40.0 samples/s"), std::string::npos) << text;
  EXPECT_EQ(text.find("median"), std::string::npos) << text;

  RunSummary::TrainEvents ev;
  ev.received = 12;
  ev.accepted = 9;
  ev.rejected = {{"bad_json", 2}, {"too_large", 1}};
  EXPECT_EQ(format_train_events(ev), "训练事件：收到 12 条，接受 9 条，拒收 3 条（bad_json 2, too_large 1）");
  trained.train_events = ev;
  trained.duration_ms = 754'000;
  const std::string summary = format_summary(trained, i18n::trf("command exit status {}", 0), 12, 2);
  EXPECT_NE(summary.find("trainmon: 命令退出状态 0，历时 "), std::string::npos) << summary;
  EXPECT_NE(summary.find("  训练：" + figures), std::string::npos) << summary;
  EXPECT_NE(summary.find("  训练事件：收到 12 条"), std::string::npos) << summary;
  EXPECT_NE(summary.find("  诊断结果：2\n"), std::string::npos) << summary;
  EXPECT_NE(summary.find("  运行 ID：12（trainmon show 12）\n"), std::string::npos) << summary;
}

TEST(RunsTable, EveryShownHeaderIsWholeAndOverItsColumnAt70And80ColumnsInBothLanguages) {
  // Issue 33: in Chinese (double-width headers) the table at 70 columns cut the COMM header.
  RunSummary trained;
  trained.train = summarize_train(two_rank_series());
  trained.train->comm_share = 0.125;
  std::vector<store::RunInfo> runs = {run_info(12345, "a-rather-long-run-name", &trained),
                                      run_info(7, "训练任务", &trained)};
  runs[1].status = "signaled";
  runs[1].exit_code = 139;
  for (const bool zh_on : {false, true}) {
    std::optional<Chinese> zh;
    if (zh_on) {
      zh.emplace();
      if (!zh->ok()) GTEST_SKIP() << "msgfmt is not installed";
    }
    const std::string comm(i18n::tr("COMM")), data(i18n::tr("DATA")), sps(i18n::tr("SAMPLES/S"));
    for (std::size_t cols : {70u, 80u}) {
      SCOPED_TRACE(fmt::format("{} at {} columns", zh_on ? "zh" : "en", cols));
      const std::string table = format_runs_table(runs, cols);
      std::istringstream in(table);
      std::string header, first, second;
      std::getline(in, header);
      std::getline(in, first);
      std::getline(in, second);
      for (const auto& l : {header, first, second}) EXPECT_LE(display_width(l), cols) << table;
      // The training columns are what a reader came for: whole headers, figures right-aligned under them.
      for (const auto& [h, value] : {std::pair{sps, std::string("120.0")},
                                     {data, std::string("35.0%")},
                                     {comm, std::string("12.5%")}}) {
        const auto at = header.find(h);
        ASSERT_NE(at, std::string::npos) << h << "\n" << table;
        const std::size_t to = display_width(header.substr(0, at)) + display_width(h);
        EXPECT_EQ(cell(first, to - value.size(), to), value) << h << "\n" << table;
        EXPECT_EQ(cell(second, to - value.size(), to), value) << h << "\n" << table;
      }
      // No header is cut: each shown one is one of the table's own headers.
      std::istringstream words(header);
      std::string w;
      const std::set<std::string> known = {std::string(i18n::tr("ID")),
                                           std::string(i18n::tr("NAME")),
                                           std::string(i18n::tr("STATUS")),
                                           std::string(i18n::tr("START")),
                                           std::string(i18n::tr("DURATION")),
                                           std::string(i18n::tr("GPUS")),
                                           std::string(i18n::tr("FINDINGS")),
                                           sps,
                                           std::string(i18n::tr("STEP")),
                                           data,
                                           comm,
                                           std::string(i18n::tr("COMMAND"))};
      std::vector<std::string> shown;
      while (words >> w) {
        if (!shown.empty() && !known.contains(shown.back()) && !known.contains(w)) {
          shown.back() += " " + w;  // a header with a blank inside ("GPU 数")
          continue;
        }
        shown.push_back(w);
      }
      for (const auto& h : shown) EXPECT_TRUE(known.contains(h)) << "cut header '" << h << "'\n" << table;
      // The command: whole, or cut with a mark under its whole header, or not shown at all.
      const std::string command(i18n::tr("COMMAND"));
      if (header.find(command) != std::string::npos) {
        EXPECT_TRUE(first.find("python train.py --epochs 90") != std::string::npos || first.ends_with("…"))
            << table;
      } else {
        EXPECT_EQ(first.find("python"), std::string::npos) << table;
      }
    }
  }
}

}  // namespace
}  // namespace trainmon::recorder
