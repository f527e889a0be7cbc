// SPDX-License-Identifier: Apache-2.0
// Retention: delete old runs; replace old full-resolution chunks by one mean/min/max row each.
#include <algorithm>
#include <vector>

#include "store/store_impl.h"

namespace trainmon::store {
namespace {

using detail::Stmt;

/// One row of [mean..., min..., max...] over a chunk's rows (NULLs skipped; all-NULL stays NULL).
Chunk aggregate(const Chunk& in) {
  Chunk out;
  out.columns = in.columns * 3;
  std::vector<std::int64_t> row(out.columns, kNull);
  for (std::size_t c = 0; c < in.columns; ++c) {
    long double sum = 0;
    std::int64_t n = 0, lo = 0, hi = 0;
    for (std::size_t r = 0; r < in.rows(); ++r) {
      std::int64_t v = in.at(r, c);
      if (v == kNull) continue;
      lo = n ? std::min(lo, v) : v;
      hi = n ? std::max(hi, v) : v;
      sum += v;
      ++n;
    }
    if (!n) continue;
    row[c] = static_cast<std::int64_t>(sum / n + (sum >= 0 ? 0.5L : -0.5L));
    row[in.columns + c] = lo;
    row[2 * in.columns + c] = hi;
  }
  // The aggregate row sits at the middle of the span it replaces.
  out.append(in.rows() ? in.t_ms.front() + (in.t_ms.back() - in.t_ms.front()) / 2 : 0, row);
  return out;
}

}  // namespace

Expected<RetentionResult> Store::apply_retention(std::int64_t now_unix_ns, const RetentionPolicy& policy) {
  sqlite3* db = impl_->db.get();
  RetentionResult result;
  if (policy.delete_after_ns > 0) {
    Stmt q(db, "SELECT id FROM runs WHERE end_ns IS NOT NULL AND end_ns < ?");
    q.bind(1, now_unix_ns - policy.delete_after_ns);
    std::vector<std::int64_t> ids;
    while (q.step() == SQLITE_ROW) ids.push_back(q.i64(0));
    for (auto id : ids) {
      if (auto r = delete_run(id); !r) return std::unexpected(r.error());
      ++result.runs_deleted;
    }
    // A run still going (a `record` of many days) loses its own samples past the horizon.
    Stmt d(db, "DELETE FROM chunks WHERE t1_ms < ?");
    d.bind(1, (now_unix_ns - policy.delete_after_ns) / 1'000'000);
    if (int rc = d.step(); rc != SQLITE_DONE)
      return std::unexpected(detail::sqlite_error(db, rc, "deleting old samples"));
    result.chunks_deleted = sqlite3_changes(db);
    if (impl_->schema >= 5) {  // the usage ledger's buckets go with the samples (schema 5)
      Stmt u(db, "DELETE FROM usage WHERE t1_ms < ?");
      u.bind(1, (now_unix_ns - policy.delete_after_ns) / 1'000'000);
      if (int rc = u.step(); rc != SQLITE_DONE)
        return std::unexpected(detail::sqlite_error(db, rc, "deleting old usage rows"));
    }
  }
  if (policy.downsample_after_ns > 0) {
    const std::int64_t cutoff_ms = (now_unix_ns - policy.downsample_after_ns) / 1'000'000;
    // Batches of chunks, one transaction each, so a long pass never holds the write lock for long.
    for (;;) {
      Stmt q(db, "SELECT id, data FROM chunks WHERE agg = 0 AND t1_ms < ? AND rows > 1 LIMIT 500");
      q.bind(1, cutoff_ms);
      std::vector<std::pair<std::int64_t, Chunk>> work;
      int rc;
      while ((rc = q.step()) == SQLITE_ROW) {
        auto c = decode_chunk(q.blob(1));
        if (c) work.emplace_back(q.i64(0), aggregate(*c));
      }
      if (rc != SQLITE_DONE) return std::unexpected(detail::sqlite_error(db, rc, "reading old samples"));
      if (work.empty()) break;
      if (auto r = begin(); !r) return std::unexpected(r.error());
      Stmt u(db, "UPDATE chunks SET agg = 1, rows = 1, data = ? WHERE id = ?");
      for (const auto& [id, agg] : work) {
        u.reset();
        u.bind_blob(1, encode_chunk(agg)).bind(2, id);
        if (int urc = u.step(); urc != SQLITE_DONE) {
          rollback();
          return std::unexpected(detail::sqlite_error(db, urc, "downsampling old samples"));
        }
        ++result.chunks_downsampled;
      }
      if (auto r = commit(); !r) return std::unexpected(r.error());
      if (work.size() < 500) break;
    }
  }
  return result;
}

}  // namespace trainmon::store
