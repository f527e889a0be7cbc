// SPDX-License-Identifier: Apache-2.0
// The schema, as a table of migration steps. Step N brings a file from user_version N-1 to N.
// Never edit a released step; append a new one. docs/store.md documents every table.
#include <fmt/format.h>

#include <string_view>

#include "store/store_impl.h"

namespace trainmon::store {
namespace {

struct Migration {
  int version;
  std::string_view sql;
};

constexpr Migration kMigrations[] = {
    {1, R"sql(
CREATE TABLE runs (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  name         TEXT NOT NULL,
  kind         TEXT NOT NULL,            -- 'run' | 'record'
  command      TEXT NOT NULL,            -- JSON array of argv
  cwd          TEXT NOT NULL DEFAULT '',
  user         TEXT NOT NULL DEFAULT '',
  host         TEXT NOT NULL DEFAULT '',
  start_ns     INTEGER NOT NULL,         -- Unix epoch, ns
  end_ns       INTEGER,                  -- NULL while recording
  status       TEXT NOT NULL,
  exit_code    INTEGER,
  exit_signal  INTEGER,
  recorder_pid INTEGER NOT NULL DEFAULT 0,
  interval_ms  INTEGER NOT NULL DEFAULT 1000,
  summary      TEXT NOT NULL DEFAULT ''  -- JSON, written at the end
);
CREATE INDEX runs_name ON runs(name);
CREATE TABLE labels (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key    TEXT NOT NULL,
  value  TEXT NOT NULL,
  PRIMARY KEY (run_id, key)
) WITHOUT ROWID;
CREATE TABLE gpus (
  run_id             INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  gpu_index          INTEGER NOT NULL,
  uuid               TEXT NOT NULL DEFAULT '',
  name               TEXT NOT NULL DEFAULT '',
  pci_bus_id         TEXT NOT NULL DEFAULT '',
  memory_total_bytes INTEGER,
  power_limit_mw     INTEGER,
  used_by_job        INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (run_id, gpu_index)
) WITHOUT ROWID;
CREATE TABLE series (
  id          INTEGER PRIMARY KEY,
  run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  kind        INTEGER NOT NULL,          -- SeriesKind: 1 gpu, 2 gpu_util_hr, 3 host, 4 process, 5 gpu_process
  gpu_index   INTEGER,
  pid         INTEGER,
  start_ticks INTEGER NOT NULL DEFAULT 0,
  ppid        INTEGER NOT NULL DEFAULT 0,
  comm        TEXT NOT NULL DEFAULT '',
  cmdline     TEXT NOT NULL DEFAULT '',
  user        TEXT NOT NULL DEFAULT '',
  in_job      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX series_run ON series(run_id);
CREATE TABLE chunks (
  id        INTEGER PRIMARY KEY,
  series_id INTEGER NOT NULL REFERENCES series(id) ON DELETE CASCADE,
  t0_ms     INTEGER NOT NULL,            -- first row, Unix epoch ms
  t1_ms     INTEGER NOT NULL,            -- last row
  rows      INTEGER NOT NULL,
  agg       INTEGER NOT NULL DEFAULT 0,  -- 1: downsampled (mean, min, max)
  data      BLOB NOT NULL                -- chunk codec v1
);
CREATE INDEX chunks_series ON chunks(series_id, t0_ms);
CREATE TABLE gpu_events (
  run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  t_ns       INTEGER NOT NULL,
  gpu_index  INTEGER NOT NULL,
  event_type INTEGER NOT NULL,
  xid        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX gpu_events_run ON gpu_events(run_id, t_ns);
CREATE TABLE train_events (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  t      INTEGER NOT NULL,               -- Unix epoch, ns
  kind   TEXT NOT NULL,
  json   TEXT NOT NULL
);
CREATE INDEX train_events_run ON train_events(run_id, t);
CREATE TABLE findings (
  id       INTEGER PRIMARY KEY,
  run_id   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  code     TEXT NOT NULL,
  severity TEXT NOT NULL,
  t0_ns    INTEGER,
  t1_ns    INTEGER,
  json     TEXT NOT NULL
);
CREATE INDEX findings_run ON findings(run_id);
)sql"},
    // 2: the training loop's ranks (their step timing is series kind 6, train_rank) and the Python
    // stacks asked of them (docs/store.md).
    {2, R"sql(
CREATE TABLE train_ranks (
  run_id               INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank_key             INTEGER NOT NULL,  -- global rank, else -1 - pid (diagnose::TrainRank::key)
  rank                 INTEGER,
  local_rank           INTEGER,
  world_size           INTEGER,
  node_rank            INTEGER,
  host                 TEXT NOT NULL DEFAULT '',
  pid                  INTEGER,
  cuda_device          INTEGER,
  gpu_uuid             TEXT NOT NULL DEFAULT '',
  cuda_visible_devices TEXT NOT NULL DEFAULT '',
  cuda_device_order    TEXT NOT NULL DEFAULT '',
  gpu_index            INTEGER,           -- NVML index as the recorder resolved it
  framework            TEXT NOT NULL DEFAULT '',
  stack_signal         INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (run_id, rank_key)
) WITHOUT ROWID;
CREATE TABLE train_stacks (
  id       INTEGER PRIMARY KEY,
  run_id   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  t_ns     INTEGER NOT NULL,              -- when trainmon asked, Unix epoch ns
  rank_key INTEGER NOT NULL,
  pid      INTEGER NOT NULL,
  finding  TEXT NOT NULL DEFAULT '',
  text     TEXT NOT NULL
);
CREATE INDEX train_stacks_run ON train_stacks(run_id, t_ns);
)sql"},
    // 3: what a run's recording could not keep (ticks never stored, and why), and the run's start on
    // this boot's CLOCK_MONOTONIC, so that a reader on the same boot measures a running run's
    // duration without the wall clock (docs/store.md).
    {3, R"sql(
CREATE TABLE gaps (
  id      INTEGER PRIMARY KEY,
  run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  t0_ns   INTEGER NOT NULL,            -- first tick not stored (the run's timeline, Unix epoch ns)
  t1_ns   INTEGER NOT NULL,            -- last tick not stored
  ticks   INTEGER NOT NULL,            -- ticks not stored
  cause   TEXT NOT NULL,               -- store_locked, store_full, store_io_error, store_error, sampling_stalled
  detail  TEXT NOT NULL DEFAULT ''     -- the error message, or what stalled
);
CREATE INDEX gaps_run ON gaps(run_id, t0_ns);
ALTER TABLE runs ADD COLUMN boot_id TEXT NOT NULL DEFAULT '';   -- /proc/sys/kernel/random/boot_id
ALTER TABLE runs ADD COLUMN start_monotonic_ns INTEGER;         -- CLOCK_MONOTONIC at start_ns
)sql"},
    // 4: the diagnosis thresholds a run was given (`run --threshold`, `record --threshold`) where they
    // differ from the defaults, so that `trainmon diagnose` of the run judges it as the run did.
    {4, R"sql(
CREATE TABLE run_thresholds (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  name   TEXT NOT NULL,                -- a threshold's name (docs/diagnosis.md), e.g. hang_floor_s
  value  TEXT NOT NULL,                -- its value, as the shortest decimal that reads back exactly
  PRIMARY KEY (run_id, name)
) WITHOUT ROWID;
)sql"},
    // 5: who each process series worked for (its Slurm job, Kubernetes pod, container, rank:
    // core/attribution.h), and the usage ledger's per-process sums in 10-minute buckets
    // (store/usage_ledger.h; `trainmon usage`).
    {5, R"sql(
ALTER TABLE series ADD COLUMN slurm_job_id TEXT NOT NULL DEFAULT '';
ALTER TABLE series ADD COLUMN slurm_step TEXT NOT NULL DEFAULT '';
ALTER TABLE series ADD COLUMN slurm_user TEXT NOT NULL DEFAULT '';
ALTER TABLE series ADD COLUMN slurm_partition TEXT NOT NULL DEFAULT '';
ALTER TABLE series ADD COLUMN slurm_account TEXT NOT NULL DEFAULT '';
ALTER TABLE series ADD COLUMN slurm_array_job_id TEXT NOT NULL DEFAULT '';
ALTER TABLE series ADD COLUMN slurm_array_task_id TEXT NOT NULL DEFAULT '';
ALTER TABLE series ADD COLUMN pod_uid TEXT NOT NULL DEFAULT '';
ALTER TABLE series ADD COLUMN pod_namespace TEXT NOT NULL DEFAULT '';
ALTER TABLE series ADD COLUMN pod_name TEXT NOT NULL DEFAULT '';
ALTER TABLE series ADD COLUMN container_name TEXT NOT NULL DEFAULT '';
ALTER TABLE series ADD COLUMN container_runtime TEXT NOT NULL DEFAULT '';
ALTER TABLE series ADD COLUMN container_id TEXT NOT NULL DEFAULT '';
ALTER TABLE series ADD COLUMN rank INTEGER;
ALTER TABLE series ADD COLUMN local_rank INTEGER;
ALTER TABLE series ADD COLUMN attribution_sources INTEGER NOT NULL DEFAULT 0;
CREATE TABLE usage (
  series_id    INTEGER NOT NULL REFERENCES series(id) ON DELETE CASCADE,  -- a gpu_process series
  bucket_ms    INTEGER NOT NULL,       -- start of the 10-minute bucket, Unix epoch ms
  t0_ms        INTEGER NOT NULL,       -- first tick counted in it
  t1_ms        INTEGER NOT NULL,       -- last tick counted in it
  ticks        INTEGER NOT NULL,       -- ticks on which the process held memory on the GPU
  held_s       REAL NOT NULL,          -- GPU-seconds held (a tick's interval split among holders)
  busy_s       REAL NOT NULL,          -- GPU-seconds busy (utilisation-weighted)
  idle_s       REAL NOT NULL,          -- GPU-seconds held while the GPU was idle
  memory_gib_s REAL NOT NULL,          -- GiB x seconds of GPU memory
  energy_j     REAL NOT NULL,          -- joules (the GPU's energy split among holders)
  PRIMARY KEY (series_id, bucket_ms)
) WITHOUT ROWID;
CREATE INDEX usage_time ON usage(bucket_ms);
)sql"},
};

}  // namespace

int latest_schema_version() noexcept {
  return kMigrations[std::size(kMigrations) - 1].version;
}

Expected<void> migrate(sqlite3* db) {
  // BEGIN IMMEDIATE: two recorders starting together must not both run step 1.
  if (auto r = detail::exec(db, "BEGIN IMMEDIATE", "starting the schema migration"); !r) return r;
  auto fail = [&](Error e) -> Expected<void> {
    (void)detail::exec(db, "ROLLBACK", "rollback");
    return std::unexpected(std::move(e));
  };
  detail::Stmt q(db, "PRAGMA user_version");
  if (q.step() != SQLITE_ROW) return fail(detail::sqlite_error(db, q.step(), "reading the schema version"));
  const int current = static_cast<int>(q.i64(0));
  if (current > latest_schema_version()) {
    return fail(Error{ErrorDomain::store, 0, std::string(kErrNewerSchema),
                      fmt::format("the run store has schema version {}, newer than this trainmon's {}; "
                                  "upgrade trainmon (nothing was changed)",
                                  current, latest_schema_version())});
  }
  for (const auto& m : kMigrations) {
    if (m.version <= current) continue;
    if (auto r = detail::exec(db, m.sql, fmt::format("migrating the run store to schema {}", m.version)); !r)
      return fail(r.error());
    if (auto r = detail::exec(db, fmt::format("PRAGMA user_version = {}", m.version),
                              "setting the schema version");
        !r)
      return fail(r.error());
  }
  return detail::exec(db, "COMMIT", "committing the schema migration");
}

}  // namespace trainmon::store
