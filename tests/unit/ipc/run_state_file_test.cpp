// SPDX-License-Identifier: Apache-2.0
// The live state file of a run (include/trainmon/ipc/run_state_file.h): the document's figures, the
// atomic writer, and the readers' rules (own files only, no links, stale files cleaned up).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "trainmon/ipc/run_state_file.h"
#include "unit/recorder/train_synth.h"

namespace trainmon::ipc {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

struct TempDir {
  std::string path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "trainmon-state-XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

RunStateHeader header() {
  RunStateHeader h;
  h.run_id = 12;
  h.name = "train.py";
  h.db = "/data/trainmon.db";
  h.pid = static_cast<std::uint32_t>(::getpid());
  h.pid_start_ticks = process_start_ticks(h.pid).value_or(0);
  h.host = "node-a";
  h.start_unix_s = 1'718'000'000.0;
  h.interval_ms = 1000;
  h.labels = {{"SLURM_JOB_ID", "77"}};
  return h;
}

TEST(RunStateFile, DocumentHasTheRunTheJobAndEveryRank) {
  const auto train = testing::two_rank_series();
  auto f = diagnose::make_finding("D4", diagnose::Severity::warning, 2, 9);
  f.evidence = "starved";
  const std::vector<diagnose::Finding> findings{f};
  const auto j = json::parse(run_state_json(header(), train, 10.5, findings));
  EXPECT_EQ(j["v"], 1);
  EXPECT_EQ(j["run_id"], 12);
  EXPECT_EQ(j["name"], "train.py");
  EXPECT_EQ(j["db"], "/data/trainmon.db");
  EXPECT_EQ(j["pid"], ::getpid());
  EXPECT_EQ(j["pid_ns"], 0);  // the header's; RunStateFile::create fills in its own
  EXPECT_EQ(j["host"], "node-a");
  EXPECT_EQ(j["time_unix_s"], 1'718'000'010.5);
  EXPECT_EQ(j["labels"]["SLURM_JOB_ID"], "77");
  const auto& t = j["train"];
  EXPECT_EQ(t["window_s"], kRunStateRecentS);
  EXPECT_EQ(t["steps"], 100);
  EXPECT_EQ(t["samples"], 1200);
  EXPECT_NEAR(t["samples_per_s"].get<double>(), 120, 1e-3);
  EXPECT_NEAR(t["step_median_s"].get<double>(), 0.2, 1e-6);
  EXPECT_NEAR(t["data_share"].get<double>(), 0.35, 1e-6);
  ASSERT_EQ(t["ranks"].size(), 2u);
  const auto& r1 = t["ranks"][1];
  EXPECT_EQ(r1["rank"], 1);
  EXPECT_EQ(r1["local_rank"], 1);
  EXPECT_EQ(r1["world_size"], 2);
  EXPECT_EQ(r1["host"], "node-a");
  EXPECT_EQ(r1["pid"], 4101);
  EXPECT_EQ(r1["gpu"], 1);
  EXPECT_EQ(r1["total"]["steps"], 50);
  EXPECT_EQ(r1["total"]["samples"], 400);
  EXPECT_NEAR(r1["total"]["step_s"].get<double>(), 10, 1e-9);
  EXPECT_NEAR(r1["total"]["data_s"].get<double>(), 5, 1e-9);
  EXPECT_NEAR(r1["last_step_unix_s"].get<double>(), 1'718'000'010.01, 1e-6);
  EXPECT_EQ(r1["recent"]["steps"], 50);
  EXPECT_NEAR(r1["recent"]["samples_per_s"].get<double>(), 40, 1e-3);
  EXPECT_NEAR(r1["recent"]["step_p50_s"].get<double>(), 0.2, 1e-6);
  EXPECT_NEAR(r1["recent"]["step_p99_s"].get<double>(), 0.2, 1e-6);
  EXPECT_NEAR(r1["recent"]["data_share"].get<double>(), 0.5, 1e-6);
  EXPECT_EQ(r1["phase"], "compute");
  EXPECT_NEAR(r1["phase_since_unix_s"].get<double>(), 1'718'000'009.96, 1e-6);
  ASSERT_EQ(j["findings"].size(), 1u);
  EXPECT_EQ(j["findings"][0]["code"], "D4");

  // The recent window is the last kRunStateRecentS: 35 s later only what ended after t = 15.5 counts
  // (nothing), the totals stay.
  const auto later = json::parse(run_state_json(header(), train, 45.5, {}));
  EXPECT_EQ(later["train"]["ranks"][0]["recent"]["steps"], 0);
  EXPECT_TRUE(later["train"]["samples_per_s"].is_null());
  EXPECT_EQ(later["train"]["ranks"][0]["total"]["steps"], 100);
  // No training process: "train" is null.
  EXPECT_TRUE(json::parse(run_state_json(header(), {}, 1, {}))["train"].is_null());
}

TEST(RunStateFile, ParsesBackWhatItWrites) {
  const auto train = testing::two_rank_series();
  auto s = parse_run_state(run_state_json(header(), train, 10.5, {}));
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->run_id, 12);
  EXPECT_EQ(s->name, "train.py");
  EXPECT_TRUE(s->train);
  EXPECT_EQ(s->steps, 100);
  EXPECT_NEAR(s->samples_per_s, 120, 1e-3);
  ASSERT_EQ(s->ranks.size(), 2u);
  EXPECT_EQ(s->ranks[0].rank, 0);
  EXPECT_EQ(s->ranks[0].gpu, 0);
  EXPECT_EQ(s->ranks[0].total_steps, 100);
  EXPECT_NEAR(s->ranks[0].total_data_s, 2, 1e-9);
  EXPECT_NEAR(s->ranks[1].step_p90_s, 0.2, 1e-6);
  EXPECT_EQ(s->ranks[1].phase, "compute");
  ASSERT_EQ(s->labels.size(), 1u);
  EXPECT_EQ(s->labels[0].second, "77");
  // errors name the field
  EXPECT_FALSE(parse_run_state("not json"));
  EXPECT_FALSE(parse_run_state("[1]"));
  EXPECT_NE(parse_run_state(R"({"v":2})").error().message.find("version"), std::string::npos);
  auto bad = parse_run_state(R"({"v":1,"train":{"ranks":[{"total":{"steps":"x"}}]}})");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("train.ranks[].total.steps"), std::string::npos) << bad.error().message;
  // unknown keys are ignored (room for later additions such as stacks)
  EXPECT_TRUE(parse_run_state(R"({"v":1,"stacks":{"rank 0":"..."},"train":null})"));
}

TEST(RunStateFile, OpenTrainingFindingsKeepTheirCostAndStacks) {
  // A hang (D23) with the line each rank is stuck on, and a straggler (D24) with its cost: what `run`
  // writes for top and serve, in the order given (run ranks them: critical first, then by cost).
  auto hang = diagnose::make_finding("D23", diagnose::Severity::critical, 40, 70);
  hang.evidence = "no step completed on rank 0, rank 1 for 30 s";
  diagnose::set_cost(hang, 1.0, "measured");
  diagnose::RankStack st;
  st.rank = 1;
  st.rank_key = 1;
  st.pid = 4243;
  st.where = "train.py:61 in run";
  hang.stacks = {st};
  auto slow = diagnose::make_finding("D24", diagnose::Severity::warning, 10, 70);
  slow.gpus = {1};
  diagnose::set_cost(slow, 1.0 - 0.6, "measured");
  const std::vector<diagnose::Finding> open{hang, slow};
  auto s = parse_run_state(run_state_json(header(), testing::two_rank_series(), 70, open));
  ASSERT_TRUE(s) << s.error().message;
  ASSERT_EQ(s->findings.size(), 2u);
  EXPECT_EQ(s->findings[0].code, "D23");
  ASSERT_EQ(s->findings[0].stacks.size(), 1u);
  EXPECT_EQ(s->findings[0].stacks[0].where, "train.py:61 in run");
  EXPECT_EQ(s->findings[0].stacks[0].pid, 4243u);
  EXPECT_EQ(s->findings[1].code, "D24");
  ASSERT_TRUE(s->findings[1].cost);
  EXPECT_NEAR(s->findings[1].cost->share, 0.4, 1e-9);
  EXPECT_NEAR(s->findings[1].cost->speedup, 1 / 0.6, 1e-9);
  EXPECT_EQ(s->findings[1].gpus, std::vector<unsigned>{1});
}

TEST(RunStateFile, TotalsFromOurOwnSumsWhenTheSenderGivesNone) {
  auto train = testing::two_rank_series();
  for (auto& r : train.ranks)
    for (auto& w : r.rows) w.total_steps = w.total_samples = w.total_step_s = w.total_data_s = NAN;
  TempDir dir;
  auto f = RunStateFile::create(header(), dir.path + "/trainmon/runs");
  ASSERT_TRUE(f) << f.error().message;
  // written in two ticks: the sums add only the rows that are new
  diagnose::TrainSeries first = diagnose::slice(train, 0, 5.5);
  ASSERT_TRUE(f->write(first, 5.5, {}));
  ASSERT_TRUE(f->write(train, 10.5, {}));
  std::ifstream in(f->path());
  const auto j = json::parse(in);
  EXPECT_EQ(j["train"]["ranks"][0]["total"]["steps"], 100);
  EXPECT_NEAR(j["train"]["ranks"][1]["total"]["data_s"].get<double>(), 5, 1e-6);
  EXPECT_EQ(j["train"]["samples"], 1200);
}

TEST(RunStateFile, CollectiveWaitTotalsSharesAndTheCollectiveARankIsIn) {
  // protocol v3: rank 0 waits 0.05 s of its 0.1 s steps in collectives, rank 1 none; rank 0's last row
  // says it is inside all_reduce #41 of the default group.
  auto train = testing::two_rank_series();
  for (auto& r : train.ranks) {
    const bool waits = r.id.rank == 0;
    double total = 0;
    for (auto& w : r.rows) {
      if (w.steps == 0) continue;
      const float per = waits ? 0.05f : 0.0f;
      w.comm = {per * static_cast<float>(w.steps), per, per, per, per, per};
      total += static_cast<double>(per) * w.steps;
      w.total_comm_s = total;
    }
  }
  auto& last = train.ranks[0].rows.back();
  last.phase = diagnose::TrainPhase::collective;
  last.coll = {"all_reduce", 41, "0", 4096};
  const auto j = json::parse(run_state_json(header(), train, 10.5, {}));
  const auto& r0 = j["train"]["ranks"][0];
  EXPECT_NEAR(r0["total"]["comm_s"].get<double>(), 5, 1e-3);
  EXPECT_NEAR(r0["recent"]["comm_share"].get<double>(), 0.5, 1e-3);
  EXPECT_EQ(r0["phase"], "collective");
  EXPECT_EQ(r0["coll"]["op"], "all_reduce");
  EXPECT_EQ(r0["coll"]["seq"], 41);
  EXPECT_NEAR(j["train"]["ranks"][1]["recent"]["comm_share"].get<double>(), 0, 1e-9);
  auto s = parse_run_state(j.dump());
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_NEAR(s->ranks[0].total_comm_s, 5, 1e-3);
  EXPECT_NEAR(s->ranks[0].comm_share, 0.5, 1e-3);
  EXPECT_EQ(s->ranks[0].phase, "collective");
  EXPECT_TRUE(std::isfinite(s->comm_share));
  // without v3 figures: null, as any figure not known
  const auto old = json::parse(run_state_json(header(), testing::two_rank_series(), 10.5, {}));
  EXPECT_TRUE(old["train"]["ranks"][0]["total"]["comm_s"].is_null());
  EXPECT_TRUE(old["train"]["ranks"][0]["recent"]["comm_share"].is_null());
}

TEST(RunStateFile, WriterIsPrivateAtomicAndRemovesItsFile) {
  TempDir base;
  const std::string dir = base.path + "/trainmon/runs";
  std::string path;
  {
    auto f = RunStateFile::create(header(), dir);
    ASSERT_TRUE(f) << f.error().message;
    path = f->path();
    EXPECT_EQ(path, dir + "/run-12-" + std::to_string(::getpid()) + ".json");
    EXPECT_FALSE(fs::exists(path));  // nothing before the first write
    ASSERT_TRUE(f->write(testing::two_rank_series(), 10.5, {}));
    struct stat st {};
    ASSERT_EQ(::stat(dir.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    ASSERT_EQ(::stat((base.path + "/trainmon").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    const auto runs = read_live_runs(dir);
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].path, path);
    EXPECT_EQ(runs[0].ranks.size(), 2u);
    EXPECT_EQ(json::parse(runs[0].document)["run_id"], 12);
    // the path is taken by a link meanwhile: the temporary file is created without following links,
    // the link itself is replaced by the rename, and its target is untouched
    const std::string target = base.path + "/target";
    std::ofstream(target) << "keep";
    fs::remove(path);
    fs::create_symlink(target, path);
    ASSERT_TRUE(f->write(testing::two_rank_series(), 11, {}));
    EXPECT_FALSE(fs::is_symlink(path));
    std::ifstream t(target);
    std::string kept;
    t >> kept;
    EXPECT_EQ(kept, "keep");
  }
  EXPECT_FALSE(fs::exists(path));  // removed with the writer
  EXPECT_TRUE(read_live_runs(dir).empty());
}

TEST(RunStateFile, DirectoriesOfOthersOrOpenToOthersAreRefused) {
  TempDir base;
  const std::string open_dir = base.path + "/open";
  ASSERT_EQ(::mkdir(open_dir.c_str(), 0700), 0);
  ::chmod(open_dir.c_str(), 0777);
  EXPECT_FALSE(ensure_private_dir(open_dir + "/runs"));
  EXPECT_FALSE(RunStateFile::create(header(), open_dir + "/runs"));
  // a link where the directory should be
  ASSERT_EQ(::mkdir((base.path + "/real").c_str(), 0700), 0);
  fs::create_symlink(base.path + "/real", base.path + "/link");
  EXPECT_FALSE(ensure_private_dir(base.path + "/link"));
  EXPECT_TRUE(read_live_runs(base.path + "/link").empty());
  EXPECT_TRUE(read_live_runs(base.path + "/missing").empty());
}

TEST(RunStateFile, ReadersSkipLinksAndJunkAndCleanUpStaleFiles) {
  TempDir base;
  const std::string dir = base.path + "/trainmon/runs";
  ASSERT_TRUE(ensure_private_dir(dir));
  auto h = header();
  // a live run (this process)
  std::ofstream(dir + "/run-1-1.json") << run_state_json(h, testing::two_rank_series(), 10.5, {});
  // a run whose trainmon is gone: a child that exited
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ::waitpid(child, nullptr, 0);
  auto dead = h;
  dead.pid = static_cast<std::uint32_t>(child);
  dead.pid_start_ticks = 0;
  std::ofstream(dir + "/run-2-2.json") << run_state_json(dead, {}, 1, {});
  // our pid, but another start time: the pid was reused
  auto reused = h;
  reused.pid_start_ticks = h.pid_start_ticks + 1;
  std::ofstream(dir + "/run-3-3.json") << run_state_json(reused, {}, 1, {});
  // a writer in another PID namespace: its pid means nothing here; it is stale only when old
  auto foreign = dead;
  foreign.pid_ns = own_pid_namespace() + 1;
  const double now = static_cast<double>(std::time(nullptr));
  foreign.start_unix_s = now - 5;
  std::ofstream(dir + "/run-6-6.json") << run_state_json(foreign, {}, 4, {});  // written a second ago
  foreign.start_unix_s = now - 2 * kRunStateForeignStaleS;
  std::ofstream(dir + "/run-7-7.json") << run_state_json(foreign, {}, 1, {});  // long ago
  // junk, a link to a live document, and a file of another name
  std::ofstream(dir + "/run-4-4.json") << "{broken";
  std::ofstream(base.path + "/elsewhere.json") << run_state_json(h, {}, 1, {});
  fs::create_symlink(base.path + "/elsewhere.json", dir + "/run-5-5.json");
  std::ofstream(dir + "/notes.json") << run_state_json(h, {}, 1, {});

  const auto runs = read_live_runs(dir);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].path, dir + "/run-1-1.json");  // oldest start first
  EXPECT_EQ(runs[1].path, dir + "/run-6-6.json");
  EXPECT_FALSE(fs::exists(dir + "/run-7-7.json"));
  EXPECT_FALSE(fs::exists(dir + "/run-2-2.json"));  // stale: removed
  EXPECT_FALSE(fs::exists(dir + "/run-3-3.json"));
  EXPECT_TRUE(fs::exists(dir + "/run-4-4.json"));  // malformed: skipped, left alone
  EXPECT_TRUE(fs::is_symlink(dir + "/run-5-5.json"));
}

TEST(RunStateFile, ReadersNeitherWaitOnAFifoNorReadWithoutBound) {
  TempDir base;
  const std::string dir = base.path + "/runs";
  ASSERT_TRUE(ensure_private_dir(dir));
  const auto doc = run_state_json(header(), {}, 1, {});
  std::ofstream(dir + "/run-1-1.json") << doc;
  // a FIFO where a document should be: opened without blocking and refused (no writer ever comes)
  ASSERT_EQ(::mkfifo((dir + "/run-2-2.json").c_str(), 0600), 0);
  // a file over the size limit: refused unread, left alone
  {
    std::ofstream big(dir + "/run-3-3.json");
    big << std::string(kRunStateMaxBytes + 1, ' ');
  }
  auto runs = read_live_runs(dir);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].path, dir + "/run-1-1.json");
  EXPECT_TRUE(fs::is_fifo(dir + "/run-2-2.json"));
  EXPECT_TRUE(fs::exists(dir + "/run-3-3.json"));
  // a directory filled with documents: at most kRunStateMaxFiles are read per call
  for (std::size_t i = 0; i < kRunStateMaxFiles + 40; ++i)
    std::ofstream(dir + "/run-" + std::to_string(100 + i) + "-1.json") << doc;
  runs = read_live_runs(dir);
  EXPECT_EQ(runs.size(), kRunStateMaxFiles);  // the FIFO and the large file are refused, not counted
}

TEST(RunStateFile, TheDocumentKeptIsWrittenByOurEscaperAndPhasesAreKnownNames) {
  auto j = json::parse(run_state_json(header(), testing::two_rank_series(), 10.5, {}));
  // what a hostile writer could put there: raw U+2028 / NEL / bidi override, a phase with escapes
  j["name"] = "a\u2028b\u0085c\u202e</script>";
  j["train"]["ranks"][0]["phase"] = "\x1b]0;owned\x07";
  const std::string raw = j.dump();  // nlohmann writes those code points raw
  ASSERT_NE(raw.find("\xE2\x80\xA8"), std::string::npos);
  const auto s = parse_run_state(raw);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->name, "a\u2028b\u0085c\u202e</script>");  // the value, escaped by each output
  EXPECT_EQ(s->document.find("\xE2\x80\xA8"), std::string::npos) << s->document;
  EXPECT_EQ(s->document.find("\xC2\x85"), std::string::npos);
  EXPECT_EQ(s->document.find("\xE2\x80\xAE"), std::string::npos);
  EXPECT_NE(s->document.find("\\u2028"), std::string::npos) << s->document;
  EXPECT_EQ(json::parse(s->document)["name"], j["name"]);  // the same value, safely written
  ASSERT_FALSE(s->ranks.empty());
  EXPECT_EQ(s->ranks[0].phase, "unknown");
  EXPECT_EQ(s->ranks[1].phase.find('\x1b'), std::string::npos);
  // and the writer itself never puts them raw in the file
  auto h = header();
  h.name = "x\u2028y";
  EXPECT_EQ(run_state_json(h, {}, 1, {}).find("\xE2\x80\xA8"), std::string::npos);
}

TEST(RunStateFile, DefaultDirectoryFollowsXdgRuntimeDir) {
  const char* old = std::getenv("XDG_RUNTIME_DIR");
  const std::string saved = old ? old : "";
  TempDir d;
  ::setenv("XDG_RUNTIME_DIR", d.path.c_str(), 1);
  EXPECT_EQ(run_state_dir(), d.path + "/trainmon/runs");
  ::setenv("XDG_RUNTIME_DIR", "relative/dir", 1);
  EXPECT_EQ(run_state_dir(), "/tmp/trainmon-" + std::to_string(::geteuid()) + "/runs");
  if (old) {
    ::setenv("XDG_RUNTIME_DIR", saved.c_str(), 1);
  } else {
    ::unsetenv("XDG_RUNTIME_DIR");
  }
}

}  // namespace
}  // namespace trainmon::ipc
