// SPDX-License-Identifier: Apache-2.0
// The usage ledger's rows (schema 5, table usage) and the per-series attribution columns.
#include "store/store_impl.h"

namespace trainmon::store {

using detail::Stmt;

namespace {

/// The attribution columns of `series`, in the order the SQL below names them.
constexpr const char* kAttrColumns =
    "slurm_job_id, slurm_step, slurm_user, slurm_partition, slurm_account, slurm_array_job_id, "
    "slurm_array_task_id, pod_uid, pod_namespace, pod_name, container_name, container_runtime, "
    "container_id, rank, local_rank, attribution_sources";

/// Bind the attribution's 16 columns from index `first`.
void bind_attribution(Stmt& q, int first, const ProcessAttribution& a) {
  int i = first;
  for (const std::string* s :
       {&a.slurm_job_id, &a.slurm_step, &a.slurm_user, &a.slurm_partition, &a.slurm_account,
        &a.slurm_array_job_id, &a.slurm_array_task_id, &a.pod_uid, &a.pod_namespace, &a.pod_name,
        &a.container_name, &a.container_runtime, &a.container_id})
    q.bind(i++, std::string_view(*s));
  q.bind(i++, a.rank ? std::optional<std::int64_t>(*a.rank) : std::nullopt);
  q.bind(i++, a.local_rank ? std::optional<std::int64_t>(*a.local_rank) : std::nullopt);
  q.bind(i++, static_cast<std::int64_t>(a.sources));
}

/// Read the attribution's 16 columns from index `first`.
ProcessAttribution read_attribution(const Stmt& q, int first) {
  ProcessAttribution a;
  int i = first;
  for (std::string* s : {&a.slurm_job_id, &a.slurm_step, &a.slurm_user, &a.slurm_partition, &a.slurm_account,
                         &a.slurm_array_job_id, &a.slurm_array_task_id, &a.pod_uid, &a.pod_namespace,
                         &a.pod_name, &a.container_name, &a.container_runtime, &a.container_id})
    *s = q.text(i++);
  if (auto r = q.opt_i64(i++)) a.rank = static_cast<int>(*r);
  if (auto r = q.opt_i64(i++)) a.local_rank = static_cast<int>(*r);
  a.sources = static_cast<unsigned>(q.i64(i++));
  return a;
}

}  // namespace

namespace detail {

std::string attribution_columns() {
  return kAttrColumns;
}
void bind_series_attribution(Stmt& q, int first, const ProcessAttribution& a) {
  bind_attribution(q, first, a);
}
ProcessAttribution read_series_attribution(const Stmt& q, int first) {
  return read_attribution(q, first);
}

}  // namespace detail

Expected<void> Store::add_usage(std::int64_t series_id, std::int64_t t_ms, const UsageShare& s) {
  if (impl_->schema < 5) return {};
  sqlite3* db = impl_->db.get();
  StmtUse q(impl_->cached(
      "INSERT INTO usage (series_id, bucket_ms, t0_ms, t1_ms, ticks, held_s, busy_s, idle_s, memory_gib_s, "
      "energy_j) VALUES (?,?,?,?,1,?,?,?,?,?) ON CONFLICT (series_id, bucket_ms) DO UPDATE SET "
      "t0_ms = min(t0_ms, excluded.t0_ms), t1_ms = max(t1_ms, excluded.t1_ms), ticks = ticks + 1, "
      "held_s = held_s + excluded.held_s, busy_s = busy_s + excluded.busy_s, idle_s = idle_s + "
      "excluded.idle_s, memory_gib_s = memory_gib_s + excluded.memory_gib_s, energy_j = energy_j + "
      "excluded.energy_j"));
  const std::int64_t bucket = t_ms - ((t_ms % kUsageBucketMs) + kUsageBucketMs) % kUsageBucketMs;
  q->bind(1, series_id).bind(2, bucket).bind(3, t_ms).bind(4, t_ms);
  q->bind_f64(5, s.held_s).bind_f64(6, s.busy_s).bind_f64(7, s.idle_s).bind_f64(8, s.memory_gib_s);
  q->bind_f64(9, s.energy_j);
  if (int rc = q->step(); rc != SQLITE_DONE)
    return std::unexpected(detail::sqlite_error(db, rc, "writing the usage ledger"));
  return {};
}

Expected<void> Store::set_series_attribution(std::int64_t series_id, std::string_view user,
                                             const ProcessAttribution* a) {
  if (impl_->schema < 5) return {};
  sqlite3* db = impl_->db.get();
  if (!user.empty()) {
    Stmt q(db, "UPDATE series SET user = ? WHERE id = ?");
    q.bind(1, user).bind(2, series_id);
    if (int rc = q.step(); rc != SQLITE_DONE)
      return std::unexpected(detail::sqlite_error(db, rc, "writing a process's user"));
  }
  if (a) {
    Stmt q(
        db,
        "UPDATE series SET slurm_job_id = ?, slurm_step = ?, slurm_user = ?, slurm_partition = ?, "
        "slurm_account = ?, slurm_array_job_id = ?, slurm_array_task_id = ?, pod_uid = ?, pod_namespace = ?, "
        "pod_name = ?, container_name = ?, container_runtime = ?, container_id = ?, rank = ?, "
        "local_rank = ?, attribution_sources = ? WHERE id = ?");
    bind_attribution(q, 1, *a);
    q.bind(17, series_id);
    if (int rc = q.step(); rc != SQLITE_DONE)
      return std::unexpected(detail::sqlite_error(db, rc, "writing a process's attribution"));
  }
  return {};
}

Expected<std::vector<SeriesUsage>> Store::usage_by_series(std::int64_t since_ms, std::int64_t until_ms) {
  std::vector<SeriesUsage> out;
  if (impl_->schema < 5) return out;
  sqlite3* db = impl_->db.get();
  // One pass over the range's buckets grouped by series (index usage_time), then each series' facts.
  Stmt q(db,
         std::string("SELECT s.id, s.run_id, s.gpu_index, s.pid, s.user, s.in_job, s.comm, r.kind, r.name, "
                     "coalesce(g.uuid, ''), x.held, x.busy, x.idle, x.mem, x.energy, x.ticks, x.t0, x.t1, ") +
             kAttrColumns +
             " FROM (SELECT series_id, sum(held_s) AS held, sum(busy_s) AS busy, sum(idle_s) AS idle, "
             "sum(memory_gib_s) AS mem, sum(energy_j) AS energy, sum(ticks) AS ticks, min(t0_ms) AS t0, "
             "max(t1_ms) AS t1 FROM usage WHERE bucket_ms >= ? AND bucket_ms < ? GROUP BY series_id) x "
             "JOIN series s ON s.id = x.series_id JOIN runs r ON r.id = s.run_id "
             "LEFT JOIN gpus g ON g.run_id = s.run_id AND g.gpu_index = s.gpu_index ORDER BY s.id");
  q.bind(1, since_ms).bind(2, until_ms);
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) {
    SeriesUsage u;
    u.series.id = q.i64(0);
    u.series.run_id = q.i64(1);
    u.series.kind = SeriesKind::gpu_process;
    if (auto g = q.opt_i64(2)) u.series.gpu_index = static_cast<unsigned>(*g);
    if (auto p = q.opt_i64(3)) u.series.pid = static_cast<std::uint32_t>(*p);
    u.series.user = q.text(4);
    u.series.in_job = q.i64(5) != 0;
    u.series.comm = q.text(6);
    u.run_kind = q.text(7);
    u.run_name = q.text(8);
    u.gpu_uuid = q.text(9);
    u.held_s = q.f64(10);
    u.busy_s = q.f64(11);
    u.idle_s = q.f64(12);
    u.memory_gib_s = q.f64(13);
    u.energy_j = q.f64(14);
    u.ticks = q.i64(15);
    u.first_ms = q.i64(16);
    u.last_ms = q.i64(17);
    u.series.attribution = read_attribution(q, 18);
    out.push_back(std::move(u));
  }
  if (rc != SQLITE_DONE) return std::unexpected(detail::sqlite_error(db, rc, "reading the usage ledger"));
  return out;
}

Expected<UsageCoverage> Store::usage_coverage(std::int64_t since_ms, std::int64_t until_ms) {
  UsageCoverage c;
  sqlite3* db = impl_->db.get();
  if (impl_->schema >= 5) {
    Stmt q(db, "SELECT min(t0_ms), max(t1_ms) FROM usage");
    if (int rc = q.step(); rc != SQLITE_ROW)
      return std::unexpected(detail::sqlite_error(db, rc, "reading the usage ledger"));
    c.usage_from_ms = q.opt_i64(0).value_or(0);
    c.usage_to_ms = q.opt_i64(1).value_or(0);
  }
  {
    Stmt q(db, "SELECT min(t0_ms), max(t1_ms) FROM chunks WHERE agg = 1");
    if (int rc = q.step(); rc != SQLITE_ROW)
      return std::unexpected(detail::sqlite_error(db, rc, "reading the run store"));
    c.downsampled_from_ms = q.opt_i64(0).value_or(0);
    c.downsampled_to_ms = q.opt_i64(1).value_or(0);
  }
  {
    // Runs overlapping the range that have GPU processes and not one usage row: recorded before
    // schema 5 (or the driver never gave their processes' memory).
    const std::string no_usage = impl_->schema >= 5 ? " AND NOT EXISTS (SELECT 1 FROM series s2 JOIN usage u "
                                                      "ON u.series_id = s2.id WHERE s2.run_id = r.id)"
                                                    : "";
    Stmt q(db,
           "SELECT count(*) FROM runs r WHERE r.start_ns < ?1 AND (r.end_ns IS NULL OR r.end_ns >= ?2) AND "
           "EXISTS (SELECT 1 FROM series s WHERE s.run_id = r.id AND s.kind = 5)" +
               no_usage);
    const auto ns = [](std::int64_t ms) {
      return ms > INT64_MAX / 1'000'000 ? INT64_MAX : ms < INT64_MIN / 1'000'000 ? INT64_MIN : ms * 1'000'000;
    };
    q.bind(1, ns(until_ms)).bind(2, ns(since_ms));
    if (int rc = q.step(); rc != SQLITE_ROW)
      return std::unexpected(detail::sqlite_error(db, rc, "reading the run store"));
    c.runs_without_usage = q.i64(0);
  }
  return c;
}

}  // namespace trainmon::store
