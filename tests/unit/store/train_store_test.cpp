// SPDX-License-Identifier: Apache-2.0
// The training loop's data in the store (schema 2): ranks, step-timing rows (series kind
// train_rank) and Python stacks go through the session's rows, the writer thread and SQLite, and
// load_run_series gives the live TrainSeries back; a schema-1 store still opens.
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <cmath>

#include "trainmon/recorder/session.h"
#include "trainmon/store/load_run_series.h"
#include "trainmon/store/store.h"
#include "trainmon/store/train_rows.h"
#include "trainmon/store/writer.h"
#include "unit/store/store_test_util.h"

namespace trainmon::store {
namespace {

constexpr std::int64_t kStartNs = 1'700'000'000'000'000'000;

diagnose::TrainWindow window(double t, std::uint32_t n, double before) {
  diagnose::TrainWindow w;
  w.t = t;
  w.steps = n;
  w.samples = 64.0 * n;
  w.span_s = 0.25f * n;
  w.step = {0.25f * n, 0.2f, 0.3f, 0.25f, 0.29f, 0.3f};
  w.data = {0.05f * n, 0.01f, 0.09f, 0.05f, 0.08f, 0.09f};
  w.total_steps = before + n;
  w.total_samples = 64.0 * (before + n);
  w.total_step_s = 0.25 * (before + n);
  w.total_data_s = 0.05 * (before + n);
  w.last_step_t = t - 0.01;
  w.phase = diagnose::TrainPhase::compute;
  w.phase_t = t - 0.005;
  return w;
}

diagnose::TrainRank rank(int r) {
  diagnose::TrainRank id;
  id.rank = r;
  id.pid = 4000 + static_cast<std::uint32_t>(r);
  id.key = diagnose::train_rank_key(id.rank, id.pid);
  id.local_rank = r;
  id.world_size = 2;
  id.node_rank = 0;
  id.host = "node-a";
  id.cuda_device = r;
  id.gpu = r;
  id.framework = "torch";
  id.stack_signal = 40;
  return id;
}

}  // namespace

TEST(TrainRows, RowRoundTripKeepsEveryFigureToTheMicrosecond) {
  const auto w = window(12.5, 4, 100);
  const std::int64_t start_ms = kStartNs / 1'000'000;
  const auto row = train_window_row(w, start_ms);
  ASSERT_EQ(row.size(), fields_of(SeriesKind::train_rank).size());
  const auto back = train_window_from_row(start_ms + 12'500, row, start_ms);
  EXPECT_DOUBLE_EQ(back.t, 12.5);
  EXPECT_EQ(back.steps, 4u);
  EXPECT_DOUBLE_EQ(back.samples, 256);
  EXPECT_NEAR(back.step.p90, 0.29, 1e-6);
  EXPECT_NEAR(back.data.sum, 0.2, 1e-6);
  EXPECT_DOUBLE_EQ(back.total_steps, 104);
  EXPECT_NEAR(back.total_step_s, 26, 1e-6);
  EXPECT_NEAR(back.last_step_t, 12.49, 1e-9);
  EXPECT_EQ(back.phase, diagnose::TrainPhase::compute);
  // protocol v3's collective wait and the collective the rank is inside
  EXPECT_TRUE(std::isnan(back.comm.sum));
  EXPECT_TRUE(std::isnan(back.total_comm_s));
  EXPECT_TRUE(back.coll.op.empty());
  auto wc = w;
  wc.comm = {0.4f, 0.05f, 0.15f, 0.1f, 0.14f, 0.15f};
  wc.total_comm_s = 9.25;
  wc.phase = diagnose::TrainPhase::collective;
  wc.coll = {"all_reduce", 5120, "0", 4194304};
  const auto cb = train_window_from_row(start_ms + 12'500, train_window_row(wc, start_ms), start_ms);
  EXPECT_NEAR(cb.comm.sum, 0.4, 1e-6);
  EXPECT_NEAR(cb.comm.p90, 0.14, 1e-6);
  EXPECT_NEAR(cb.total_comm_s, 9.25, 1e-6);
  EXPECT_EQ(cb.phase, diagnose::TrainPhase::collective);
  EXPECT_EQ(cb.coll.op, "all_reduce");
  EXPECT_EQ(cb.coll.seq, 5120);
  EXPECT_DOUBLE_EQ(cb.coll.bytes, 4194304);
  EXPECT_TRUE(cb.coll.group.empty());  // the group's name is not stored
  wc.coll.op = "my_own_op";            // a name the store has no code for
  EXPECT_EQ(train_window_from_row(start_ms, train_window_row(wc, start_ms), start_ms).coll.op, "other");
  // A heartbeat's unknown figures stay unknown; a short (older) row fills NaN.
  diagnose::TrainWindow hb;
  hb.t = 3;
  const auto hb_back = train_window_from_row(start_ms + 3000, train_window_row(hb, start_ms), start_ms);
  EXPECT_EQ(hb_back.steps, 0u);
  EXPECT_TRUE(std::isnan(hb_back.step.p50));
  EXPECT_TRUE(std::isnan(hb_back.samples));
  const std::vector<std::int64_t> short_row = {5, 320};
  const auto old = train_window_from_row(start_ms, short_row, start_ms);
  EXPECT_EQ(old.steps, 5u);
  EXPECT_TRUE(std::isnan(old.total_steps));
  // A row of protocol v2 times (22 columns) has no collective figures.
  std::vector<std::int64_t> v2_row = train_window_row(w, start_ms);
  v2_row.resize(22);
  const auto v2 = train_window_from_row(start_ms, v2_row, start_ms);
  EXPECT_NEAR(v2.data.sum, 0.2, 1e-6);
  EXPECT_TRUE(std::isnan(v2.comm.sum));
  EXPECT_TRUE(std::isnan(v2.total_comm_s));
  EXPECT_TRUE(v2.coll.op.empty());
}

TEST(TrainStore, RanksRowsAndStacksComeBackAsTheLiveSeries) {
  testing::TempDir dir;
  const auto path = dir.file("t.db");
  std::int64_t run_id = 0;
  diagnose::TrainSeries live;
  {
    auto s = Store::open(path, OpenMode::read_write);
    ASSERT_TRUE(s);
    EXPECT_EQ(*s->schema_version(), latest_schema_version());
    RunInfo run;
    run.name = "ddp";
    run.start_unix_ns = kStartNs;
    run_id = *s->create_run(run);
    StoreWriter w(std::move(*s), run_id, WriterOptions{4, 100});
    for (int tick = 1; tick <= 9; ++tick) {
      TickBatch batch;
      recorder::TrainUpdate train;
      for (int r = 0; r < 2; ++r) {
        auto id = rank(r);
        if (r == 1 && tick >= 5) id.gpu = 3;  // as the channel's identities after the change
        const auto win = window(tick, static_cast<std::uint32_t>(2 + r), (tick - 1) * (2.0 + r));
        train.windows.emplace_back(id, win);
        diagnose::append_train_window(live, id, win);
        if (tick == 1) train.ranks.push_back(id);
      }
      if (tick == 5) {
        auto moved = rank(1);
        moved.gpu = 3;  // resolved later: the identity is replaced, not duplicated
        train.ranks.push_back(moved);
        live.upsert(moved);
        train.stacks.push_back(TrainStack{kStartNs + 5'000'000'000, 1, 4001, "D23", "Thread 0x1 ...\n"});
      }
      // What RecorderSession does with a TrainUpdate (its rows on the run clock).
      for (const auto& [id, win] : train.windows) {
        SeriesRow row;
        row.series.kind = SeriesKind::train_rank;
        row.series.rank_key = id.key;
        row.t_ms = kStartNs / 1'000'000 + static_cast<std::int64_t>(std::llround(win.t * 1e3));
        row.values = train_window_row(win, kStartNs / 1'000'000);
        batch.rows.push_back(std::move(row));
      }
      batch.train_ranks = std::move(train.ranks);
      batch.train_stacks = std::move(train.stacks);
      w.push(std::move(batch));
    }
    ASSERT_TRUE(w.finish(RunEnd{kStartNs + 10'000'000'000, "exited", 0, {}, "{}"}));
  }
  auto s = Store::open(path, OpenMode::read_only);
  ASSERT_TRUE(s);
  auto ranks = s->train_ranks(run_id);
  ASSERT_TRUE(ranks);
  ASSERT_EQ(ranks->size(), 2u);
  EXPECT_EQ((*ranks)[1].gpu, 3);
  EXPECT_EQ((*ranks)[1].host, "node-a");
  EXPECT_EQ((*ranks)[0].stack_signal, 40);
  auto stacks = s->train_stacks(run_id);
  ASSERT_TRUE(stacks);
  ASSERT_EQ(stacks->size(), 1u);
  EXPECT_EQ((*stacks)[0].finding, "D23");
  EXPECT_EQ((*stacks)[0].pid, 4001u);
  auto series = load_run_series(*s, run_id);
  ASSERT_TRUE(series) << series.error().message;
  ASSERT_EQ(series->train.ranks.size(), 2u);
  for (std::size_t r = 0; r < 2; ++r) {
    const auto& got = series->train.ranks[r];
    const auto& want = live.ranks[r];
    EXPECT_EQ(got.id, want.id);
    ASSERT_EQ(got.rows.size(), want.rows.size());
    for (std::size_t i = 0; i < got.rows.size(); ++i) {
      EXPECT_NEAR(got.rows[i].t, want.rows[i].t, 1e-9);
      EXPECT_EQ(got.rows[i].steps, want.rows[i].steps);
      EXPECT_NEAR(got.rows[i].total_step_s, want.rows[i].total_step_s, 1e-6);
      EXPECT_NEAR(got.rows[i].data.p90, want.rows[i].data.p90, 1e-6);
    }
  }
  // The stacks come back on the run clock for D23 (what the live diagnosis was given).
  ASSERT_EQ(series->stacks.size(), 1u);
  EXPECT_NEAR(series->stacks[0].t, 5.0, 1e-9);
  EXPECT_EQ(series->stacks[0].rank_key, 1);
  EXPECT_EQ(series->stacks[0].pid, 4001u);
  EXPECT_EQ(series->stacks[0].finding, "D23");
  EXPECT_EQ(series->stacks[0].text, "Thread 0x1 ...\n");
  // The figures every view shows are the same offline as live.
  const auto a = diagnose::train_stats(series->train), b = diagnose::train_stats(live);
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_NEAR(a.samples_per_s, b.samples_per_s, 1e-3);
  EXPECT_NEAR(a.data_share, b.data_share, 1e-6);
}

TEST(TrainStore, SchemaOneStoreOpensReadOnlyWithoutTrainTablesAndMigrates) {
  testing::TempDir dir;
  const auto path = dir.file("v1.db");
  std::int64_t run_id = 0;
  {
    auto s = Store::open(path, OpenMode::read_write);
    ASSERT_TRUE(s);
    RunInfo run;
    run.name = "old";
    run.start_unix_ns = kStartNs;
    run_id = *s->create_run(run);
  }
  // Make it a file as schema 1 left it.
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(
        sqlite3_exec(
            db,
            "DROP TABLE train_ranks; DROP TABLE train_stacks; DROP TABLE gaps; DROP TABLE run_thresholds; "
            "ALTER TABLE runs DROP COLUMN boot_id; ALTER TABLE runs DROP COLUMN start_monotonic_ns; "
            "DROP TABLE usage; ALTER TABLE series DROP COLUMN slurm_job_id; "
            "ALTER TABLE series DROP COLUMN slurm_step; ALTER TABLE series DROP COLUMN slurm_user; "
            "ALTER TABLE series DROP COLUMN slurm_partition; ALTER TABLE series DROP COLUMN slurm_account; "
            "ALTER TABLE series DROP COLUMN slurm_array_job_id; ALTER TABLE series DROP COLUMN "
            "slurm_array_task_id; "
            "ALTER TABLE series DROP COLUMN pod_uid; ALTER TABLE series DROP COLUMN pod_namespace; "
            "ALTER TABLE series DROP COLUMN pod_name; ALTER TABLE series DROP COLUMN container_name; "
            "ALTER TABLE series DROP COLUMN container_runtime; ALTER TABLE series DROP COLUMN container_id; "
            "ALTER TABLE series DROP COLUMN rank; ALTER TABLE series DROP COLUMN local_rank; "
            "ALTER TABLE series DROP COLUMN attribution_sources; "
            "PRAGMA user_version = 1",
            nullptr, nullptr, nullptr),
        SQLITE_OK);
    sqlite3_close(db);
  }
  {
    auto s = Store::open(path, OpenMode::read_only);
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ(*s->schema_version(), 1);
    auto ranks = s->train_ranks(run_id);
    ASSERT_TRUE(ranks) << ranks.error().message;
    EXPECT_TRUE(ranks->empty());
    auto stacks = s->train_stacks(run_id);
    ASSERT_TRUE(stacks);
    EXPECT_TRUE(stacks->empty());
    auto series = load_run_series(*s, run_id);
    ASSERT_TRUE(series) << series.error().message;
    EXPECT_TRUE(series->train.empty());
    // nor the schema 3 parts: no gaps, no boot id, no monotonic start
    auto got = s->get_run(run_id);
    ASSERT_TRUE(got) << got.error().message;
    EXPECT_EQ(got->name, "old");
    EXPECT_TRUE(got->gaps.empty());
    EXPECT_EQ(got->boot_id, "");
    EXPECT_FALSE(got->start_monotonic_ns);
    EXPECT_TRUE(got->thresholds.empty());  // nor schema 4's
    ASSERT_TRUE(s->list_runs());
    EXPECT_EQ(s->list_runs()->size(), 1u);
  }
  // Opening for writing migrates 1 -> 2 -> 3 -> 4 -> 5 in one transaction: the steps' tables work.
  auto s = Store::open(path, OpenMode::read_write);
  ASSERT_TRUE(s);
  EXPECT_EQ(*s->schema_version(), latest_schema_version());
  EXPECT_TRUE(s->put_train_rank(run_id, rank(0)));
  EXPECT_EQ(s->train_ranks(run_id)->size(), 1u);
  const RecordingGap gap{kStartNs + 1'000'000'000, kStartNs + 3'000'000'000, 3, "store_locked",
                         "database is locked"};
  ASSERT_TRUE(s->insert_gaps(run_id, {gap}));
  EXPECT_EQ(*s->gaps(run_id), std::vector<RecordingGap>{gap});
  EXPECT_EQ(s->get_run(run_id)->name, "old");
}

}  // namespace trainmon::store
