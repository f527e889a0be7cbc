// SPDX-License-Identifier: Apache-2.0
// Series, chunks and events.
#include "store/store_impl.h"

namespace trainmon::store {

using detail::Stmt;

Expected<std::int64_t> Store::create_series(const SeriesInfo& s) {
  sqlite3* db = impl_->db.get();
  // Schema 5 keeps the process's attribution with it (columns after in_job).
  const bool attributed = impl_->schema >= 5;
  Stmt q(db, attributed
                 ? "INSERT INTO series (run_id, kind, gpu_index, pid, start_ticks, ppid, comm, cmdline, "
                   "user, in_job, " +
                       detail::attribution_columns() +
                       ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
                 : std::string("INSERT INTO series (run_id, kind, gpu_index, pid, start_ticks, ppid, comm, "
                               "cmdline, user, in_job) VALUES (?,?,?,?,?,?,?,?,?,?)"));
  q.bind(1, s.run_id).bind(2, static_cast<std::int64_t>(s.kind));
  q.bind(3, s.gpu_index ? std::optional<std::int64_t>(*s.gpu_index) : std::nullopt);
  if (s.kind == SeriesKind::train_rank) {
    q.bind(4, std::optional<std::int64_t>(s.rank_key));
  } else {
    q.bind(4, s.pid ? std::optional<std::int64_t>(*s.pid) : std::nullopt);
  }
  q.bind(5, static_cast<std::int64_t>(s.start_time_ticks)).bind(6, static_cast<std::int64_t>(s.ppid));
  q.bind(7, s.comm).bind(8, s.cmdline).bind(9, s.user).bind(10, static_cast<std::int64_t>(s.in_job));
  if (attributed) detail::bind_series_attribution(q, 11, s.attribution);
  if (int rc = q.step(); rc != SQLITE_DONE)
    return std::unexpected(detail::sqlite_error(db, rc, "creating a series"));
  return sqlite3_last_insert_rowid(db);
}

Expected<std::int64_t> Store::insert_chunk(std::int64_t series_id, const Chunk& chunk,
                                           std::string_view encoded) {
  sqlite3* db = impl_->db.get();
  std::string made;
  if (encoded.empty()) made = encode_chunk(chunk);
  const std::string_view data = encoded.empty() ? std::string_view(made) : encoded;
  StmtUse q(
      impl_->cached("INSERT INTO chunks (series_id, t0_ms, t1_ms, rows, agg, data) VALUES (?,?,?,?,0,?)"));
  q->bind(1, series_id)
      .bind(2, chunk.rows() ? chunk.t_ms.front() : 0)
      .bind(3, chunk.rows() ? chunk.t_ms.back() : 0);
  q->bind(4, static_cast<std::int64_t>(chunk.rows())).bind_blob_static(5, data);
  if (int rc = q->step(); rc != SQLITE_DONE)
    return std::unexpected(detail::sqlite_error(db, rc, "writing samples"));
  return sqlite3_last_insert_rowid(db);
}

Expected<void> Store::update_chunk(std::int64_t chunk_id, const Chunk& chunk) {
  sqlite3* db = impl_->db.get();
  Stmt q(db, "UPDATE chunks SET t0_ms = ?, t1_ms = ?, rows = ?, data = ? WHERE id = ?");
  q.bind(1, chunk.rows() ? chunk.t_ms.front() : 0).bind(2, chunk.rows() ? chunk.t_ms.back() : 0);
  q.bind(3, static_cast<std::int64_t>(chunk.rows())).bind_blob(4, encode_chunk(chunk)).bind(5, chunk_id);
  if (int rc = q.step(); rc != SQLITE_DONE)
    return std::unexpected(detail::sqlite_error(db, rc, "writing samples"));
  return {};
}

Expected<std::int64_t> Store::replace_chunk(std::int64_t chunk_id, std::int64_t series_id, const Chunk& chunk,
                                            std::string_view encoded) {
  sqlite3* db = impl_->db.get();
  {
    StmtUse d(impl_->cached("DELETE FROM chunks WHERE id = ?"));
    d->bind(1, chunk_id);
    if (int rc = d->step(); rc != SQLITE_DONE)
      return std::unexpected(detail::sqlite_error(db, rc, "writing samples"));
  }
  return insert_chunk(series_id, chunk, encoded);
}

Expected<std::vector<SeriesInfo>> Store::list_series(std::int64_t run_id) {
  sqlite3* db = impl_->db.get();
  const bool attributed = impl_->schema >= 5;
  Stmt q(db, "SELECT id, run_id, kind, gpu_index, pid, start_ticks, ppid, comm, cmdline, user, in_job" +
                 (attributed ? ", " + detail::attribution_columns() : std::string()) +
                 " FROM series WHERE run_id = ? ORDER BY kind, gpu_index, pid, id");
  q.bind(1, run_id);
  std::vector<SeriesInfo> out;
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) {
    SeriesInfo s;
    s.id = q.i64(0);
    s.run_id = q.i64(1);
    s.kind = static_cast<SeriesKind>(q.i64(2));
    if (auto g = q.opt_i64(3)) s.gpu_index = static_cast<unsigned>(*g);
    if (auto p = q.opt_i64(4)) {
      if (s.kind == SeriesKind::train_rank) {
        s.rank_key = *p;
      } else {
        s.pid = static_cast<std::uint32_t>(*p);
      }
    }
    s.start_time_ticks = static_cast<std::uint64_t>(q.i64(5));
    s.ppid = static_cast<std::uint32_t>(q.i64(6));
    s.comm = q.text(7);
    s.cmdline = q.text(8);
    s.user = q.text(9);
    s.in_job = q.i64(10) != 0;
    if (attributed) s.attribution = detail::read_series_attribution(q, 11);
    out.push_back(std::move(s));
  }
  if (rc != SQLITE_DONE) return std::unexpected(detail::sqlite_error(db, rc, "listing series"));
  return out;
}

Expected<void> Store::read_series(std::int64_t series_id,
                                  const std::function<void(const Chunk& chunk, bool aggregated)>& fn) {
  sqlite3* db = impl_->db.get();
  Stmt q(db, "SELECT data, agg FROM chunks WHERE series_id = ? ORDER BY t0_ms, id");
  q.bind(1, series_id);
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) {
    auto chunk = decode_chunk(q.blob(0));
    if (!chunk) return std::unexpected(chunk.error());
    fn(*chunk, q.i64(1) != 0);
  }
  if (rc != SQLITE_DONE) return std::unexpected(detail::sqlite_error(db, rc, "reading samples"));
  return {};
}

Expected<void> Store::insert_gpu_events(std::int64_t run_id, const std::vector<GpuEvent>& events) {
  sqlite3* db = impl_->db.get();
  Stmt q(db, "INSERT INTO gpu_events (run_id, t_ns, gpu_index, event_type, xid) VALUES (?,?,?,?,?)");
  for (const auto& e : events) {
    q.reset();
    q.bind(1, run_id).bind(2, e.time_unix_ns).bind(3, static_cast<std::int64_t>(e.gpu_index));
    q.bind(4, static_cast<std::int64_t>(e.event_type)).bind(5, static_cast<std::int64_t>(e.xid));
    if (int rc = q.step(); rc != SQLITE_DONE)
      return std::unexpected(detail::sqlite_error(db, rc, "writing events"));
  }
  return {};
}

Expected<std::vector<StoredGpuEvent>> Store::gpu_events(std::int64_t run_id) {
  sqlite3* db = impl_->db.get();
  Stmt q(db, "SELECT t_ns, gpu_index, event_type, xid FROM gpu_events WHERE run_id = ? ORDER BY t_ns");
  q.bind(1, run_id);
  std::vector<StoredGpuEvent> out;
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) {
    out.push_back({q.i64(0), static_cast<unsigned>(q.i64(1)), static_cast<std::uint64_t>(q.i64(2)),
                   static_cast<std::uint64_t>(q.i64(3))});
  }
  if (rc != SQLITE_DONE) return std::unexpected(detail::sqlite_error(db, rc, "reading events"));
  return out;
}

Expected<void> Store::insert_train_event(std::int64_t run_id, const TrainEvent& e) {
  sqlite3* db = impl_->db.get();
  Stmt q(db, "INSERT INTO train_events (run_id, t, kind, json) VALUES (?,?,?,?)");
  q.bind(1, run_id).bind(2, e.time_unix_ns).bind(3, e.kind).bind(4, e.json);
  if (int rc = q.step(); rc != SQLITE_DONE)
    return std::unexpected(detail::sqlite_error(db, rc, "writing events"));
  return {};
}

Expected<std::vector<TrainEvent>> Store::train_events(std::int64_t run_id) {
  sqlite3* db = impl_->db.get();
  Stmt q(db, "SELECT t, kind, json FROM train_events WHERE run_id = ? ORDER BY t");
  q.bind(1, run_id);
  std::vector<TrainEvent> out;
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) out.push_back({q.i64(0), q.text(1), q.text(2)});
  if (rc != SQLITE_DONE) return std::unexpected(detail::sqlite_error(db, rc, "reading events"));
  return out;
}

Expected<void> Store::insert_gaps(std::int64_t run_id, const std::vector<RecordingGap>& gaps) {
  sqlite3* db = impl_->db.get();
  if (gaps.empty()) return {};
  StmtUse q(
      impl_->cached("INSERT INTO gaps (run_id, t0_ns, t1_ns, ticks, cause, detail) VALUES (?,?,?,?,?,?)"));
  for (const auto& g : gaps) {
    q->reset();
    q->bind(1, run_id).bind(2, g.t0_unix_ns).bind(3, g.t1_unix_ns).bind(4, g.ticks);
    q->bind(5, g.cause).bind(6, g.detail);
    if (int rc = q->step(); rc != SQLITE_DONE)
      return std::unexpected(detail::sqlite_error(db, rc, "writing a recording gap"));
  }
  return {};
}

Expected<std::vector<RecordingGap>> Store::gaps(std::int64_t run_id) {
  sqlite3* db = impl_->db.get();
  std::vector<RecordingGap> out;
  if (impl_->schema < 3) return out;
  Stmt q(db, "SELECT t0_ns, t1_ns, ticks, cause, detail FROM gaps WHERE run_id = ? ORDER BY t0_ns, id");
  q.bind(1, run_id);
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) out.push_back({q.i64(0), q.i64(1), q.i64(2), q.text(3), q.text(4)});
  if (rc != SQLITE_DONE) return std::unexpected(detail::sqlite_error(db, rc, "reading recording gaps"));
  return out;
}

}  // namespace trainmon::store
