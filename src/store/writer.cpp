// SPDX-License-Identifier: Apache-2.0
#include "trainmon/store/writer.h"

namespace trainmon::store {

StoreWriter::StoreWriter(Store store, std::int64_t run_id, WriterOptions options)
    : store_(std::move(store)), run_id_(run_id), options_(options) {
  thread_ = std::thread([this] { loop(); });
}

StoreWriter::~StoreWriter() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StoreWriter::push(TickBatch batch) {
  {
    std::lock_guard lock(mu_);
    if (stop_ || error_) {
      ++stats_.ticks_dropped;
      return;
    }
    queue_.push_back(std::move(batch));
    while (queue_.size() > options_.max_queued) {
      // Keep the newest ticks, but never drop a GPU list change.
      auto gpus = std::move(queue_.front().gpus);
      TickBatch dropped = std::move(queue_.front());
      queue_.pop_front();
      if (dropped.gpus && !queue_.front().gpus) queue_.front().gpus = std::move(dropped.gpus);
      // Training events, rank identities and stacks are few and not sampled again: carry them to
      // the next tick.
      auto carry = [](auto& from, auto& to) {
        to.insert(to.begin(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
      };
      carry(dropped.train_events, queue_.front().train_events);
      carry(dropped.train_ranks, queue_.front().train_ranks);
      carry(dropped.train_stacks, queue_.front().train_stacks);
      ++stats_.ticks_dropped;
    }
  }
  cv_.notify_one();
}

std::optional<Error> StoreWriter::error() const {
  std::lock_guard lock(mu_);
  return error_;
}

WriterStats StoreWriter::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void StoreWriter::loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty() && stop_) return;
    std::vector<TickBatch> batches(std::make_move_iterator(queue_.begin()),
                                   std::make_move_iterator(queue_.end()));
    queue_.clear();
    if (error_) {
      stats_.ticks_dropped += batches.size();
      continue;
    }
    busy_ = true;
    lock.unlock();
    auto r = write(batches);
    lock.lock();
    busy_ = false;
    if (r) {
      stats_.ticks_written += batches.size();
      ++stats_.transactions;
    } else {
      error_ = r.error();
      stats_.ticks_dropped += batches.size();
    }
  }
}

Expected<StoreWriter::Open*> StoreWriter::series_for(const SeriesInfo& info) {
  Key key{static_cast<int>(info.kind), info.gpu_index ? static_cast<std::int64_t>(*info.gpu_index) : -1,
          info.kind == SeriesKind::train_rank ? info.rank_key
                                              : (info.pid ? static_cast<std::int64_t>(*info.pid) : -1),
          info.start_time_ticks};
  auto it = open_.find(key);
  if (it != open_.end()) return &it->second;
  SeriesInfo s = info;
  s.run_id = run_id_;
  auto id = store_.create_series(s);
  if (!id) return std::unexpected(id.error());
  Open o;
  o.series_id = *id;
  o.chunk.columns = fields_of(info.kind).size();
  return &open_.emplace(key, std::move(o)).first->second;
}

Expected<void> StoreWriter::persist(Open& o) {
  if (o.chunk_id == 0) {
    auto id = store_.insert_chunk(o.series_id, o.chunk);
    if (!id) return std::unexpected(id.error());
    o.chunk_id = *id;
    return {};
  }
  auto id = store_.replace_chunk(o.chunk_id, o.series_id, o.chunk);
  if (!id) return std::unexpected(id.error());
  o.chunk_id = *id;
  return {};
}

Expected<void> StoreWriter::write(std::vector<TickBatch>& batches) {
  ++batch_counter_;
  if (auto r = store_.begin(); !r) return r;
  auto fail = [&](Error e) -> Expected<void> {
    store_.rollback();
    return std::unexpected(std::move(e));
  };
  // After a failure the writer stops for good (error_), so the in-memory state needs no undo.
  for (auto& batch : batches) {
    if (batch.gpus) {
      if (auto r = store_.put_gpus(run_id_, *batch.gpus); !r) {
        return fail(r.error());
      }
    }
    for (auto& row : batch.rows) {
      auto open = series_for(row.series);
      if (!open) {
        return fail(open.error());
      }
      Open& o = **open;
      // Close a full chunk before appending (writing it first when this transaction filled it).
      if (o.chunk.rows() >= options_.chunk_rows) {
        if (o.dirty) {
          if (auto r = persist(o); !r) return fail(r.error());
        }
        o.chunk.clear();
        o.chunk_id = 0;
      }
      o.chunk.append(row.t_ms, row.values);
      o.dirty = true;
      o.last_batch = batch_counter_;
    }
    if (!batch.events.empty()) {
      if (auto r = store_.insert_gpu_events(run_id_, batch.events); !r) {
        return fail(r.error());
      }
    }
    for (const auto& e : batch.train_events) {
      if (auto r = store_.insert_train_event(run_id_, e); !r) return fail(r.error());
    }
    for (const auto& rank : batch.train_ranks) {
      if (auto r = store_.put_train_rank(run_id_, rank); !r) return fail(r.error());
    }
    for (const auto& st : batch.train_stacks) {
      if (auto r = store_.insert_train_stack(run_id_, st); !r) return fail(r.error());
    }
  }
  for (auto& [key, o] : open_) {
    if (!o.dirty) continue;
    if (auto r = persist(o); !r) return fail(r.error());
  }
  if (auto r = store_.commit(); !r) {
    return fail(r.error());
  }
  // Forget series not seen for a while (exited processes): their rows are on disk.
  for (auto it = open_.begin(); it != open_.end();) {
    it->second.dirty = false;
    if (batch_counter_ - it->second.last_batch > 30) {
      it = open_.erase(it);
    } else {
      ++it;
    }
  }
  return {};
}

Expected<void> StoreWriter::finish(const RunEnd& end) {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (auto e = error(); e) return std::unexpected(*e);
  auto r = store_.finish_run(run_id_, end);
  if (!r) {
    std::lock_guard lock(mu_);
    error_ = r.error();
  }
  return r;
}

}  // namespace trainmon::store
