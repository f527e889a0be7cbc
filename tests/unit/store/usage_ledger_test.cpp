// SPDX-License-Identifier: Apache-2.0
// The usage ledger: the per-tick arithmetic on hand-computed numbers, the same numbers through the
// recorder session, the writer thread and SQLite grouped by user, job and GPU, and a schema 4 store.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <memory>

#include "trainmon/recorder/session.h"
#include "trainmon/store/store.h"
#include "trainmon/store/usage_ledger.h"
#include "trainmon/store/writer.h"
#include "unit/store/store_test_util.h"

namespace trainmon::store {
namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

TEST(UsageShares, OneHolderWithSmUtilisationGetsTheWholeTick) {
  UsageGpuTick g;
  g.gpu_index = 3;
  g.utilization_gpu_pct = 80;
  g.energy_j = 200;
  g.holders = {{101, 2 * kGiB, 80.0}};
  const auto s = usage_shares(g, 2.0, 5);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].gpu_index, 3u);
  EXPECT_EQ(s[0].pid, 101u);
  EXPECT_DOUBLE_EQ(s[0].held_s, 2.0);
  EXPECT_DOUBLE_EQ(s[0].busy_s, 1.6);  // 2 s x 80 %
  EXPECT_DOUBLE_EQ(s[0].idle_s, 0.0);
  EXPECT_DOUBLE_EQ(s[0].memory_gib_s, 4.0);
  EXPECT_DOUBLE_EQ(s[0].energy_j, 200.0);
}

TEST(UsageShares, SharedGpuSplitsHeldBusyAndEnergy) {
  UsageGpuTick g;
  g.utilization_gpu_pct = 60;
  g.energy_j = 300;
  // one holder without a per-process sample: the GPU's utilisation and energy are split evenly
  g.holders = {{102, 4 * kGiB, std::nullopt}, {201, 2 * kGiB, 30.0}, {999, 0, 50.0}};
  const auto s = usage_shares(g, 1.0, 5);
  ASSERT_EQ(s.size(), 2u);  // pid 999 holds no memory: not a holder
  EXPECT_DOUBLE_EQ(s[0].held_s, 0.5);
  EXPECT_DOUBLE_EQ(s[1].held_s, 0.5);
  EXPECT_DOUBLE_EQ(s[0].busy_s, 0.3);
  EXPECT_DOUBLE_EQ(s[1].busy_s, 0.3);
  EXPECT_DOUBLE_EQ(s[0].memory_gib_s, 4.0);
  EXPECT_DOUBLE_EQ(s[1].memory_gib_s, 2.0);
  EXPECT_DOUBLE_EQ(s[0].energy_j, 150.0);
  EXPECT_DOUBLE_EQ(s[1].energy_j, 150.0);
  // every holder sampled: busy is each one's SM, energy by SM share
  g.holders = {{102, 4 * kGiB, 30.0}, {201, 2 * kGiB, 10.0}};
  const auto t = usage_shares(g, 1.0, 5);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_DOUBLE_EQ(t[0].busy_s, 0.3);
  EXPECT_DOUBLE_EQ(t[1].busy_s, 0.1);
  EXPECT_DOUBLE_EQ(t[0].energy_j, 225.0);
  EXPECT_DOUBLE_EQ(t[1].energy_j, 75.0);
}

TEST(UsageShares, IdleIsTheGpuUnderTheIdleThresholdElseTheHoldersSm) {
  UsageGpuTick g;
  g.utilization_gpu_pct = 4;  // below 5 %
  g.holders = {{1, kGiB, std::nullopt}};
  auto s = usage_shares(g, 1.0, 5);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_DOUBLE_EQ(s[0].idle_s, 1.0);
  EXPECT_DOUBLE_EQ(s[0].busy_s, 0.04);
  EXPECT_DOUBLE_EQ(s[0].energy_j, 0.0);  // no energy reading
  g.utilization_gpu_pct = 5;             // not below: not idle
  EXPECT_DOUBLE_EQ(usage_shares(g, 1.0, 5)[0].idle_s, 0.0);
  g.utilization_gpu_pct.reset();  // no utilization.gpu (MIG): the holders' SM decides
  EXPECT_DOUBLE_EQ(usage_shares(g, 1.0, 5)[0].idle_s, 0.0);  // unknown: not idle
  g.holders[0].sm_util_pct = 0;
  EXPECT_DOUBLE_EQ(usage_shares(g, 1.0, 5)[0].idle_s, 1.0);
  EXPECT_TRUE(usage_shares(g, 0.0, 5).empty());
  g.holders.clear();
  EXPECT_TRUE(usage_shares(g, 1.0, 5).empty());
}

// Two users, two Slurm jobs, three GPUs, 10 ticks of 1 s:
//   GPU 0 (80 %, 200 W): pid 101 alice job 1001, 2 GiB, SM 80 %
//   GPU 1 (60 %, 300 W): pid 102 alice job 1001, 4 GiB, and pid 201 bob job 2002, 2 GiB (no SM samples)
//   GPU 2 (0 %, 50 W):   pid 202 bob job 2002, 8 GiB
// Per tick: 101 held 1 s busy 0.8 s 200 J; 102 and 201 held 0.5 s busy 0.3 s 150 J each; 202 held 1 s,
// idle 1 s, 50 J. Over 10 ticks: alice held 15 s, busy 11 s, 60 GiB*s, 3500 J; bob held 15 s, busy
// 3 s, idle 10 s, 100 GiB*s, 2000 J.
constexpr std::int64_t kT0Ns = 1'700'000'000'000'000'000;  // a bucket boundary (divisible by 600 s)

Snapshot ledger_tick(int i) {
  Snapshot s;
  s.time_unix_ns = kT0Ns + i * 1'000'000'000LL;
  s.monotonic_ns = 1'000'000'000LL * (i + 1);
  const unsigned util[3] = {80, 60, 0};
  const unsigned power_w[3] = {200, 300, 50};
  for (unsigned g = 0; g < 3; ++g) {
    GpuSample gs;
    gs.index = g;
    auto info = std::make_shared<GpuStaticInfo>();
    info->uuid = Reading<std::string>::of("GPU-" + std::to_string(g));
    gs.info = info;
    gs.utilization_gpu_pct = Reading<unsigned>::of(util[g]);
    gs.power_draw_mw = Reading<unsigned>::of(power_w[g] * 1000);
    // the counter grows by power x 1 s per tick (mJ); the first tick falls back to power x dt
    gs.total_energy_mj =
        Reading<std::uint64_t>::of(1'000'000 + static_cast<std::uint64_t>(i) * power_w[g] * 1000);
    s.gpus.push_back(gs);
  }
  struct P {
    std::uint32_t pid;
    unsigned gpu;
    std::uint64_t bytes;
    std::optional<unsigned> sm;
    const char* user;
    const char* job;
  };
  const P procs[] = {{101, 0, 2 * kGiB, 80, "alice", "1001"},
                     {102, 1, 4 * kGiB, std::nullopt, "alice", "1001"},
                     {201, 1, 2 * kGiB, std::nullopt, "bob", "2002"},
                     {202, 2, 8 * kGiB, std::nullopt, "bob", "2002"}};
  for (const auto& p : procs) {
    GpuProcessSample gp;
    gp.gpu_index = p.gpu;
    gp.pid = p.pid;
    gp.used_memory_bytes = Reading<std::uint64_t>::of(p.bytes);
    if (p.sm) gp.sm_util_pct = Reading<unsigned>::of(*p.sm);
    gp.host = HostVisibility::visible;
    s.gpu_processes.push_back(gp);
    ProcessSample hp;
    hp.pid = p.pid;
    hp.user = p.user;
    hp.comm = "python3";
    // the attribution arrives on the second tick (read with the details later): the series learns it
    if (i > 0) hp.attribution.slurm_job_id = p.job;
    hp.attribution.sources = i > 0 ? static_cast<unsigned>(kAttributionEnviron) : 0u;
    s.processes.push_back(hp);
  }
  return s;
}

/// Records the ten ticks as `trainmon record` does (a RecorderSession over a StoreWriter).
std::int64_t record_ledger_run(const std::string& path) {
  auto s = Store::open(path, OpenMode::read_write);
  EXPECT_TRUE(s);
  RunInfo run;
  run.name = "shared";
  run.kind = "record";
  run.start_unix_ns = kT0Ns;
  const std::int64_t run_id = *s->create_run(run);
  recorder::SessionOptions o;
  o.print_every_ms = 0;
  o.quiet = true;
  o.interval_ns = 1'000'000'000;
  o.start_unix_ns = kT0Ns;
  o.start_monotonic_ns = 1'000'000'000;
  recorder::RecorderSession session(
      o, std::make_unique<StoreWriter>(std::move(*s), run_id, WriterOptions{4, 100}));
  for (int i = 0; i < 10; ++i) session.tick(ledger_tick(i));
  EXPECT_FALSE(session.finish(RunEnd{kT0Ns + 10'000'000'000, "stopped", 0, {}, "{}"}));
  return run_id;
}

TEST(UsageLedger, TwoUsersTwoJobsThreeGpusThroughTheRecorderAndTheStore) {
  testing::TempDir dir;
  const auto path = dir.file("u.db");
  const std::int64_t run_id = record_ledger_run(path);
  auto s = Store::open(path, OpenMode::read_only);
  ASSERT_TRUE(s) << s.error().message;

  // The gpu_process series know their user and (learned on the second tick) their Slurm job.
  auto series = s->list_series(run_id);
  ASSERT_TRUE(series);
  int gpu_procs = 0;
  for (const auto& x : *series) {
    if (x.kind != SeriesKind::gpu_process) continue;
    ++gpu_procs;
    EXPECT_EQ(x.user, *x.pid < 200 ? "alice" : "bob");
    EXPECT_EQ(x.attribution.slurm_job_id, *x.pid < 200 ? "1001" : "2002");
  }
  EXPECT_EQ(gpu_procs, 4);

  UsageQuery q;
  q.by = UsageGroup::user;
  auto l = usage_ledger(*s, q);
  ASSERT_TRUE(l) << l.error().message;
  ASSERT_EQ(l->rows.size(), 2u);
  const UsageRow& bob = l->rows[0];  // most idle first
  const UsageRow& alice = l->rows[1];
  EXPECT_EQ(bob.key, "bob");
  EXPECT_EQ(alice.key, "alice");
  EXPECT_NEAR(alice.held_h, 15.0 / 3600, 1e-12);
  EXPECT_NEAR(alice.busy_h, 11.0 / 3600, 1e-12);
  EXPECT_NEAR(alice.idle_h, 0.0, 1e-12);
  EXPECT_NEAR(alice.memory_gib_h, 60.0 / 3600, 1e-12);
  EXPECT_NEAR(alice.energy_kwh, 3500.0 / 3.6e6, 1e-12);
  EXPECT_EQ(alice.processes, 2);
  EXPECT_NEAR(bob.held_h, 15.0 / 3600, 1e-12);
  EXPECT_NEAR(bob.busy_h, 3.0 / 3600, 1e-12);
  EXPECT_NEAR(bob.idle_h, 10.0 / 3600, 1e-12);
  EXPECT_NEAR(bob.memory_gib_h, 100.0 / 3600, 1e-12);
  EXPECT_NEAR(bob.energy_kwh, 2000.0 / 3.6e6, 1e-12);
  EXPECT_EQ(bob.first_ms, kT0Ns / 1'000'000);
  EXPECT_EQ(bob.last_ms, kT0Ns / 1'000'000 + 9'000);
  EXPECT_NEAR(l->total.held_h, 30.0 / 3600, 1e-12);  // three GPUs held for 10 s
  EXPECT_EQ(l->total.processes, 4);
  EXPECT_EQ(l->runs, 1);
  EXPECT_EQ(l->runs_without_usage_data, 0);
  EXPECT_EQ(l->covered_from_ms, kT0Ns / 1'000'000);
  EXPECT_EQ(l->covered_to_ms, kT0Ns / 1'000'000 + 9'000);

  q.by = UsageGroup::job;
  l = usage_ledger(*s, q);
  ASSERT_TRUE(l);
  ASSERT_EQ(l->rows.size(), 2u);
  EXPECT_EQ(l->rows[0].key, "slurm:2002");
  EXPECT_EQ(l->rows[1].key, "slurm:1001");
  EXPECT_NEAR(l->rows[1].energy_kwh, 3500.0 / 3.6e6, 1e-12);

  q.by = UsageGroup::gpu;
  l = usage_ledger(*s, q);
  ASSERT_TRUE(l);
  ASSERT_EQ(l->rows.size(), 3u);
  EXPECT_EQ(l->rows[0].key, "2");  // idle first, then GPU 0 and 1 (held alike) by index
  EXPECT_EQ(l->rows[1].key, "0");
  EXPECT_EQ(l->rows[2].key, "1");
  EXPECT_EQ(l->rows[2].gpu_uuid, "GPU-1");
  EXPECT_NEAR(l->rows[2].held_h, 10.0 / 3600, 1e-12);  // two holders split the GPU's 10 s
  EXPECT_NEAR(l->rows[2].busy_h, 6.0 / 3600, 1e-12);
  EXPECT_NEAR(l->rows[2].energy_kwh, 3000.0 / 3.6e6, 1e-12);

  q.by = UsageGroup::pod;  // no pods: one row with no key
  l = usage_ledger(*s, q);
  ASSERT_TRUE(l);
  ASSERT_EQ(l->rows.size(), 1u);
  EXPECT_EQ(l->rows[0].key, "");

  // A range after the run: nothing.
  q.since_ms = kT0Ns / 1'000'000 + kUsageBucketMs;
  l = usage_ledger(*s, q);
  ASSERT_TRUE(l);
  EXPECT_TRUE(l->rows.empty());
  EXPECT_EQ(l->total.held_h, 0);
}

TEST(UsageLedger, RetentionDeletesUsageRowsWithTheSamples) {
  testing::TempDir dir;
  const auto path = dir.file("r.db");
  record_ledger_run(path);
  auto s = Store::open(path, OpenMode::read_write);
  ASSERT_TRUE(s);
  auto before = usage_ledger(*s, UsageQuery{});
  ASSERT_TRUE(before);
  EXPECT_EQ(before->rows.size(), 2u);
  RetentionPolicy p;
  p.delete_after_ns = 1'000'000'000;  // everything is older than 1 s
  ASSERT_TRUE(s->apply_retention(kT0Ns + 3'600'000'000'000, p));
  auto after = usage_ledger(*s, UsageQuery{});
  ASSERT_TRUE(after);
  EXPECT_TRUE(after->rows.empty());
  EXPECT_EQ(after->covered_from_ms, 0);
}

TEST(UsageLedger, SchemaFourStoreReadsAsNoUsageDataAndMigrates) {
  testing::TempDir dir;
  const auto path = dir.file("v4.db");
  const std::int64_t run_id = record_ledger_run(path);
  // Make it a file as schema 4 left it: no usage table, no attribution columns.
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    std::string sql = "DROP TABLE usage;";
    for (const char* c :
         {"slurm_job_id", "slurm_step", "slurm_user", "slurm_partition", "slurm_account",
          "slurm_array_job_id", "slurm_array_task_id", "pod_uid", "pod_namespace", "pod_name",
          "container_name", "container_runtime", "container_id", "rank", "local_rank", "attribution_sources"})
      sql += std::string("ALTER TABLE series DROP COLUMN ") + c + ";";
    sql += "PRAGMA user_version = 4;";
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  {
    auto s = Store::open(path, OpenMode::read_only);
    ASSERT_TRUE(s);
    EXPECT_EQ(*s->schema_version(), 4);
    auto series = s->list_series(run_id);
    ASSERT_TRUE(series) << series.error().message;
    EXPECT_FALSE(series->empty());
    auto l = usage_ledger(*s, UsageQuery{});
    ASSERT_TRUE(l) << l.error().message;
    EXPECT_TRUE(l->rows.empty());
    EXPECT_EQ(l->runs_without_usage_data, 1);
  }
  auto s = Store::open(path, OpenMode::read_write);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(*s->schema_version(), latest_schema_version());
  auto l = usage_ledger(*s, UsageQuery{});
  ASSERT_TRUE(l);
  EXPECT_EQ(l->runs_without_usage_data, 1);  // its runs were recorded before: no rows
  auto series = s->list_series(run_id);
  ASSERT_TRUE(series);
  EXPECT_EQ(series->front().attribution.slurm_job_id, "");
}

}  // namespace
}  // namespace trainmon::store
