// SPDX-License-Identifier: Apache-2.0
// The training loop's ranks and stacks (schema 2; docs/store.md). Their step timing rows are a
// series of kind train_rank, written like every other series.
#include <algorithm>

#include "store/store_impl.h"

namespace trainmon::store {

using detail::Stmt;

namespace {

/// Whether the open file has the schema-2 tables (a read-only open of an older store has not).
bool has_train_tables(sqlite3* db) {
  Stmt q(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'train_ranks'");
  return q.step() == SQLITE_ROW && q.i64(0) > 0;
}

std::optional<std::int64_t> opt(int v) {
  return v >= 0 ? std::optional<std::int64_t>(v) : std::nullopt;
}

constexpr std::size_t kMaxStackBytes = 1 << 20;

}  // namespace

Expected<void> Store::put_train_rank(std::int64_t run_id, const diagnose::TrainRank& r) {
  sqlite3* db = impl_->db.get();
  StmtUse q(impl_->cached(
      "INSERT OR REPLACE INTO train_ranks (run_id, rank_key, rank, local_rank, world_size, node_rank, host, "
      "pid, cuda_device, gpu_uuid, cuda_visible_devices, cuda_device_order, gpu_index, framework, "
      "stack_signal) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"));
  q->bind(1, run_id)
      .bind(2, r.key)
      .bind(3, opt(r.rank))
      .bind(4, opt(r.local_rank))
      .bind(5, opt(r.world_size));
  q->bind(6, opt(r.node_rank)).bind(7, r.host);
  q->bind(8, r.pid ? std::optional<std::int64_t>(r.pid) : std::nullopt);
  q->bind(9, opt(r.cuda_device))
      .bind(10, r.gpu_uuid)
      .bind(11, r.cuda_visible_devices)
      .bind(12, r.cuda_device_order);
  q->bind(13, opt(r.gpu)).bind(14, r.framework).bind(15, static_cast<std::int64_t>(r.stack_signal));
  if (int rc = q->step(); rc != SQLITE_DONE)
    return std::unexpected(detail::sqlite_error(db, rc, "writing a training rank"));
  return {};
}

Expected<std::vector<diagnose::TrainRank>> Store::train_ranks(std::int64_t run_id) {
  sqlite3* db = impl_->db.get();
  std::vector<diagnose::TrainRank> out;
  if (!has_train_tables(db)) return out;
  Stmt q(db,
         "SELECT rank_key, rank, local_rank, world_size, node_rank, host, pid, cuda_device, gpu_uuid, "
         "cuda_visible_devices, cuda_device_order, gpu_index, framework, stack_signal FROM train_ranks "
         "WHERE run_id = ?");
  q.bind(1, run_id);
  int rc;
  auto i = [&](int col) { return static_cast<int>(q.opt_i64(col).value_or(-1)); };
  while ((rc = q.step()) == SQLITE_ROW) {
    diagnose::TrainRank r;
    r.key = q.i64(0);
    r.rank = i(1);
    r.local_rank = i(2);
    r.world_size = i(3);
    r.node_rank = i(4);
    r.host = q.text(5);
    r.pid = static_cast<std::uint32_t>(q.opt_i64(6).value_or(0));
    r.cuda_device = i(7);
    r.gpu_uuid = q.text(8);
    r.cuda_visible_devices = q.text(9);
    r.cuda_device_order = q.text(10);
    r.gpu = i(11);
    r.framework = q.text(12);
    r.stack_signal = static_cast<int>(q.i64(13));
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return std::unexpected(detail::sqlite_error(db, rc, "reading training ranks"));
  // The order TrainSeries keeps: global ranks ascending, then pid keys by pid.
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    if ((a.key >= 0) != (b.key >= 0)) return a.key >= 0;
    return a.key >= 0 ? a.key < b.key : a.key > b.key;
  });
  return out;
}

Expected<void> Store::insert_train_stack(std::int64_t run_id, const TrainStack& s) {
  sqlite3* db = impl_->db.get();
  Stmt q(db, "INSERT INTO train_stacks (run_id, t_ns, rank_key, pid, finding, text) VALUES (?,?,?,?,?,?)");
  q.bind(1, run_id).bind(2, s.time_unix_ns).bind(3, s.rank_key).bind(4, static_cast<std::int64_t>(s.pid));
  q.bind(5, s.finding).bind(6, s.text.size() > kMaxStackBytes ? s.text.substr(0, kMaxStackBytes) : s.text);
  if (int rc = q.step(); rc != SQLITE_DONE)
    return std::unexpected(detail::sqlite_error(db, rc, "writing Python stacks"));
  return {};
}

Expected<std::vector<TrainStack>> Store::train_stacks(std::int64_t run_id) {
  sqlite3* db = impl_->db.get();
  std::vector<TrainStack> out;
  if (!has_train_tables(db)) return out;
  Stmt q(db,
         "SELECT t_ns, rank_key, pid, finding, text FROM train_stacks WHERE run_id = ? ORDER BY t_ns, id");
  q.bind(1, run_id);
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) {
    out.push_back({q.i64(0), q.i64(1), static_cast<std::uint32_t>(q.i64(2)), q.text(3), q.text(4)});
  }
  if (rc != SQLITE_DONE) return std::unexpected(detail::sqlite_error(db, rc, "reading Python stacks"));
  return out;
}

}  // namespace trainmon::store
