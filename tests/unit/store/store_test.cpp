// SPDX-License-Identifier: Apache-2.0
#include "trainmon/store/store.h"
#include "trainmon/diagnose/finding.h"
#include "trainmon/diagnose/thresholds.h"

#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sqlite3.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "trainmon/store/db_path.h"
#include "unit/store/store_test_util.h"

namespace trainmon::store {
namespace {

using testing::TempDir;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

RunInfo sample_run(std::string name) {
  RunInfo r;
  r.name = std::move(name);
  r.command = {"python", "train.py", "--batch", "128"};
  r.cwd = "/work";
  r.user = "alice";
  r.host = "node1";
  r.start_unix_ns = 1'700'000'000'000'000'000;
  r.labels = {{"SLURM_JOB_ID", "42"}, {"team", "vision"}};
  r.gpus = {RunGpu{0, "GPU-aaaa", "NVIDIA H200", "00000000:83:00.0", 150'000'000'000, 700'000, true}};
  return r;
}

TEST(StoreFindings, ARunningRunsOpenCountLeavesOutTheLiveFindingsThatClosed) {
  TempDir dir;
  auto s = Store::open(dir.file("t.db"), OpenMode::read_write);
  ASSERT_TRUE(s);
  const auto id = *s->create_run(sample_run("live"));
  std::vector<diagnose::Finding> found(3);
  for (std::size_t i = 0; i < found.size(); ++i) {
    found[i] =
        diagnose::make_finding(i == 1 ? "D10" : "D4", diagnose::Severity::warning, 10.0 * i, 10.0 * i + 5);
    found[i].evidence = "e";
  }
  // the live diagnosis so far: D4 closed, D10 open, D4 open again (a second episode)
  ASSERT_TRUE(s->insert_findings(id, found, {false, true, true}));
  auto r = s->get_run(id);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->finding_count, 3);
  EXPECT_EQ(r->open_finding_count, 2);
  EXPECT_EQ(s->findings(id)->size(), 3u);  // every one is kept (the report of the running run lists it)
  // the end's findings replace them, all counted
  ASSERT_TRUE(s->insert_findings(id, {found[0]}));
  EXPECT_EQ(s->list_runs()->front().open_finding_count, 1);
}

TEST(StoreSchema, NewFileGetsLatestSchemaAndWal) {
  TempDir dir;
  auto s = Store::open(dir.file("sub/dir/t.db"), OpenMode::read_write);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(*s->schema_version(), latest_schema_version());
  EXPECT_GE(latest_schema_version(), 1);
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(dir.file("sub/dir/t.db").c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(raw, "PRAGMA journal_mode", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "wal");
  sqlite3_finalize(st);
  // The tables the later issues rely on exist with the documented columns.
  EXPECT_EQ(sqlite3_exec(raw, "SELECT run_id, t, kind, json FROM train_events", nullptr, nullptr, nullptr),
            SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(raw, "SELECT run_id, code, severity, json FROM findings", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
}

TEST(StoreSchema, ReopeningDoesNotMigrateAgainAndNewerSchemaIsRefused) {
  TempDir dir;
  const auto path = dir.file("t.db");
  { ASSERT_TRUE(Store::open(path, OpenMode::read_write)); }
  {
    auto s = Store::open(path, OpenMode::read_write);
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ(*s->schema_version(), latest_schema_version());
  }
  sqlite3* raw = nullptr;
  sqlite3_open(path.c_str(), &raw);
  sqlite3_exec(raw, "PRAGMA user_version = 999", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  auto s = Store::open(path, OpenMode::read_write);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().name, kErrNewerSchema);
}

TEST(StoreRuns, CreateFinishListAndGet) {
  TempDir dir;
  auto s = Store::open(dir.file("t.db"), OpenMode::read_write);
  ASSERT_TRUE(s);
  auto id = s->create_run(sample_run("resnet"));
  ASSERT_TRUE(id) << id.error().message;
  RunEnd end{1'700'000'100'000'000'000, "exited", 3, std::nullopt, R"({"gpus":[]})"};
  ASSERT_TRUE(s->finish_run(*id, end));
  auto run = s->get_run(*id);
  ASSERT_TRUE(run) << run.error().message;
  EXPECT_EQ(run->name, "resnet");
  EXPECT_EQ(run->command, (std::vector<std::string>{"python", "train.py", "--batch", "128"}));
  EXPECT_EQ(run->status, "exited");
  EXPECT_EQ(run->exit_code, 3);
  EXPECT_FALSE(run->exit_signal);
  EXPECT_EQ(*run->end_unix_ns, 1'700'000'100'000'000'000);
  ASSERT_EQ(run->labels.size(), 2u);
  EXPECT_EQ(run->labels[0], (std::pair<std::string, std::string>{"SLURM_JOB_ID", "42"}));
  ASSERT_EQ(run->gpus.size(), 1u);
  EXPECT_EQ(run->gpus[0].uuid, "GPU-aaaa");
  EXPECT_EQ(*run->gpus[0].memory_total_bytes, 150'000'000'000);
  EXPECT_TRUE(run->gpus[0].used_by_job);
  auto all = s->list_runs();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].summary_json, R"({"gpus":[]})");
}

TEST(StoreRuns, ARunsThresholdsComeBackExactlyAndUnknownOnesAreSkippedWhenApplied) {
  TempDir dir;
  auto s = Store::open(dir.file("t.db"), OpenMode::read_write);
  ASSERT_TRUE(s);
  diagnose::Thresholds given;
  ASSERT_TRUE(diagnose::set_threshold(given, "hang_floor_s=15"));
  ASSERT_TRUE(diagnose::set_threshold(given, "idle_util_pct=0.1"));  // no exact binary value
  RunInfo r = sample_run("with-thresholds");
  r.thresholds = diagnose::threshold_changes(given);
  ASSERT_EQ(r.thresholds.size(), 2u);
  r.thresholds.emplace_back("zz_from_a_newer_trainmon_s", 3);
  auto id = s->create_run(r);
  ASSERT_TRUE(id) << id.error().message;
  auto back = s->get_run(*id);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->thresholds.size(), 3u);  // sorted by name
  EXPECT_EQ(back->thresholds[0], (std::pair<std::string, double>{"hang_floor_s", 15}));
  EXPECT_EQ(back->thresholds[1], (std::pair<std::string, double>{"idle_util_pct", 0.1}));
  diagnose::Thresholds applied;
  const auto skipped = diagnose::apply_threshold_changes(applied, back->thresholds);
  EXPECT_EQ(skipped, std::vector<std::string>{"zz_from_a_newer_trainmon_s"});
  EXPECT_TRUE(applied == given);
  // A run given none stores none, and reads back none.
  auto plain = s->create_run(sample_run("plain"));
  ASSERT_TRUE(plain);
  EXPECT_TRUE(s->get_run(*plain)->thresholds.empty());
  EXPECT_TRUE(diagnose::threshold_changes(diagnose::Thresholds{}).empty());
}

TEST(StoreRuns, ResolveByIdNameLastAndAmbiguity) {
  TempDir dir;
  auto s = Store::open(dir.file("t.db"), OpenMode::read_write);
  ASSERT_TRUE(s);
  auto a = *s->create_run(sample_run("alpha"));
  auto b1 = *s->create_run(sample_run("beta"));
  auto b2 = *s->create_run(sample_run("beta"));
  auto n = *s->create_run(sample_run("7"));  // a numeric name that is no id
  EXPECT_EQ(*s->resolve_run("alpha"), a);
  EXPECT_EQ(*s->resolve_run(std::to_string(b1)), b1);
  EXPECT_EQ(*s->resolve_run("last"), n);
  EXPECT_EQ(*s->resolve_run("7"), n);
  auto amb = s->resolve_run("beta");
  ASSERT_FALSE(amb);
  EXPECT_EQ(amb.error().name, kErrAmbiguous);
  EXPECT_NE(amb.error().message.find(std::to_string(b1) + ", " + std::to_string(b2)), std::string::npos);
  auto none = s->resolve_run("gamma");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().name, kErrNotFound);
}

TEST(StoreRuns, LastOnEmptyStoreIsNotFound) {
  TempDir dir;
  auto s = Store::open(dir.file("t.db"), OpenMode::read_write);
  ASSERT_TRUE(s);
  auto r = s->resolve_run("last");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().name, kErrNotFound);
}

TEST(StoreRuns, DeleteRemovesSamplesToo) {
  TempDir dir;
  auto s = Store::open(dir.file("t.db"), OpenMode::read_write);
  ASSERT_TRUE(s);
  auto id = *s->create_run(sample_run("x"));
  SeriesInfo si;
  si.run_id = id;
  si.kind = SeriesKind::gpu;
  si.gpu_index = 0;
  auto sid = *s->create_series(si);
  Chunk c;
  c.columns = 1;
  c.append(1000, {5});
  ASSERT_TRUE(s->insert_chunk(sid, c));
  ASSERT_TRUE(s->delete_run(id));
  EXPECT_FALSE(s->get_run(id));
  auto series = s->list_series(id);
  ASSERT_TRUE(series);
  EXPECT_TRUE(series->empty());
  int rows = 0;
  ASSERT_TRUE(s->read_series(sid, [&](const Chunk&, bool) { ++rows; }));
  EXPECT_EQ(rows, 0);
  EXPECT_EQ(s->delete_run(id).error().name, kErrNotFound);
}

TEST(StoreDamage, GarbageFileIsRefusedAndLeftUntouched) {
  TempDir dir;
  const auto path = dir.file("t.db");
  std::string garbage(4096, '\0');
  for (std::size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<char>((i * 7919) % 251);
  std::ofstream(path, std::ios::binary) << garbage;
  for (auto mode : {OpenMode::read_write, OpenMode::read_only}) {
    auto s = Store::open(path, mode);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().name, kErrDamaged);
    EXPECT_NE(s.error().message.find(path), std::string::npos);
  }
  EXPECT_EQ(slurp(path), garbage);
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
}

TEST(StoreDamage, TruncatedDatabaseIsRefusedAndLeftUntouched) {
  TempDir dir;
  const auto path = dir.file("t.db");
  {
    auto s = Store::open(path, OpenMode::read_write);
    ASSERT_TRUE(s);
    for (int i = 0; i < 200; ++i) {
      auto id = *s->create_run(sample_run("run" + std::to_string(i)));
      SeriesInfo si;
      si.run_id = id;
      si.kind = SeriesKind::host;
      auto sid = *s->create_series(si);
      Chunk c;
      c.columns = 1;
      for (int k = 0; k < 60; ++k) c.append(k * 1000, {k * 1234567});
      ASSERT_TRUE(s->insert_chunk(sid, c));
    }
  }
  // Fold the WAL into the main file, then cut the file in half.
  sqlite3* raw = nullptr;
  sqlite3_open(path.c_str(), &raw);
  sqlite3_exec(raw, "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  auto size = std::filesystem::file_size(path);
  ASSERT_GT(size, 8192u);
  std::filesystem::resize_file(path, size / 2);
  const std::string before = slurp(path);
  auto s = Store::open(path, OpenMode::read_write);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().name, kErrDamaged) << s.error().message;
  EXPECT_EQ(slurp(path), before);
}

// Drops CAP_DAC_OVERRIDE from this thread's effective set so that permission bits bind root too.
class ScopedNoDacOverride {
 public:
  ScopedNoDacOverride() {
    hdr_.version = _LINUX_CAPABILITY_VERSION_3;
    syscall(SYS_capget, &hdr_, saved_);
    __user_cap_data_struct data[2] = {saved_[0], saved_[1]};
    data[0].effective &= ~((1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH));
    syscall(SYS_capset, &hdr_, data);
  }
  ~ScopedNoDacOverride() { syscall(SYS_capset, &hdr_, saved_); }

 private:
  __user_cap_header_struct hdr_{};
  __user_cap_data_struct saved_[2]{};
};

TEST(StoreOpen, ReadOnlyDirectoryGivesOneClearMessage) {
  TempDir dir;
  const auto ro = dir.file("ro");
  std::filesystem::create_directory(ro);
  std::filesystem::permissions(ro, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  ScopedNoDacOverride no_override;
  auto s = Store::open(ro + "/t.db", OpenMode::read_write);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().name, kErrCannotCreate);
  EXPECT_NE(s.error().message.find("not writable"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find(ro), std::string::npos);
}

TEST(StoreOpen, ReadOnlyModeNeedsAnExistingFile) {
  TempDir dir;
  auto s = Store::open(dir.file("none.db"), OpenMode::read_only);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().name, kErrMissing);
  EXPECT_FALSE(std::filesystem::exists(dir.file("none.db")));
}

TEST(StoreOpen, DbPathPrecedence) {
  const char* home = std::getenv("HOME");
  const std::string saved_home = home ? home : "";
  ::setenv("TRAINMON_DB", "/x/env.db", 1);
  EXPECT_EQ(resolve_db_path("/cli.db"), "/cli.db");
  EXPECT_EQ(resolve_db_path(), "/x/env.db");
  ::unsetenv("TRAINMON_DB");
  ::setenv("XDG_STATE_HOME", "/state", 1);
  EXPECT_EQ(resolve_db_path(), "/state/trainmon/trainmon.db");
  ::unsetenv("XDG_STATE_HOME");
  ::setenv("HOME", "/home/u", 1);
  EXPECT_EQ(resolve_db_path(), "/home/u/.local/state/trainmon/trainmon.db");
  ::setenv("HOME", saved_home.c_str(), 1);
}

}  // namespace
}  // namespace trainmon::store
