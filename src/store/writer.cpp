// SPDX-License-Identifier: Apache-2.0
#include "trainmon/store/writer.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <limits>

namespace trainmon::store {
namespace {

using Clock = std::chrono::steady_clock;

/// A rough size of what a tick holds in memory (the buffer's bound).
std::size_t approx_bytes(const TickBatch& b) {
  std::size_t n = sizeof(TickBatch);
  for (const auto& r : b.rows) {
    n += sizeof(SeriesRow) + r.values.size() * sizeof(std::int64_t) + r.series.comm.size() +
         r.series.cmdline.size() + r.series.user.size();
  }
  n += b.events.size() * sizeof(GpuEvent);
  if (b.gpus) n += b.gpus->size() * (sizeof(RunGpu) + 64);
  for (const auto& e : b.train_events) n += sizeof(TrainEvent) + e.kind.size() + e.json.size();
  n += b.train_ranks.size() * (sizeof(diagnose::TrainRank) + 64);
  for (const auto& s : b.train_stacks) n += sizeof(TrainStack) + s.text.size() + s.finding.size();
  for (const auto& g : b.gaps) n += sizeof(RecordingGap) + g.detail.size();
  return n;
}

bool has_attribution(const ProcessAttribution& a) {
  return !a.empty() || a.sources != 0;
}

template <class V>
void carry(V& from, V& to) {
  to.insert(to.begin(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

std::string seconds_text(Clock::duration d) {
  return fmt::format("{:.1f} s", std::chrono::duration<double>(d).count());
}

/// `gaps.back()` has just grown by the oldest tick held (`queue`'s front was dropped); the first
/// `in_flight` gaps are being written and stay as they are.
void join_newer_gap(std::vector<RecordingGap>& gaps, std::size_t in_flight,
                    const std::deque<TickBatch>& queue) {
  // Ticks dropped while a transaction was in flight started a gap that is newer than the failed
  // transaction's ticks, which went back to the front of the buffer and may be dropped after: one
  // stretch, two rows. Every tick between the two was dropped when no tick still held lies between
  // them (ticks are written oldest first, so none between was written) and no other gap does: then
  // they are one gap.
  if (gaps.size() < in_flight + 2) return;
  RecordingGap& cur = gaps.back();
  const std::int64_t next_held =
      queue.empty() ? std::numeric_limits<std::int64_t>::max() : queue.front().t_ns;
  const auto between = [&](const RecordingGap& g, std::int64_t t0, std::int64_t t1) {
    return &g != &cur && g.t0_unix_ns > t0 && g.t0_unix_ns < t1;
  };
  for (std::size_t i = in_flight; i + 1 < gaps.size(); ++i) {
    const RecordingGap& newer = gaps[i];
    if (newer.cause != cur.cause || newer.t0_unix_ns <= cur.t1_unix_ns || newer.t0_unix_ns > next_held)
      continue;
    const std::int64_t t0 = cur.t1_unix_ns, t1 = newer.t0_unix_ns;
    bool other = std::ranges::any_of(gaps, [&](const RecordingGap& g) { return between(g, t0, t1); });
    for (const auto& b : queue) {
      if (other) break;
      other = std::ranges::any_of(b.gaps, [&](const RecordingGap& g) { return between(g, t0, t1); });
    }
    if (other) continue;
    cur.t1_unix_ns = newer.t1_unix_ns;
    cur.ticks += newer.ticks;
    gaps.erase(gaps.begin() + static_cast<std::ptrdiff_t>(i));
    return;
  }
}

}  // namespace

std::string_view gap_cause_of(const Error& e) {
  switch (e.code) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return kGapStoreLocked;
    case SQLITE_FULL: return kGapStoreFull;
    case SQLITE_IOERR: return kGapStoreIoError;
    default: return kGapStoreError;
  }
}

bool permanent_store_error(const Error& e, bool at_open) {
  if (e.name == kErrDamaged || e.name == kErrNewerSchema || e.name == kErrMissing) return true;
  switch (e.code) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH: return true;
    case SQLITE_ERROR:
    case SQLITE_CANTOPEN: return at_open;
    default: break;
  }
  return at_open && e.name == kErrCannotCreate;
}

StoreWriter::StoreWriter(Store store, std::int64_t run_id, WriterOptions options)
    : store_(std::move(store)), options_(options), run_id_(run_id) {
  store_->set_busy_timeout(options_.busy_timeout);
  start();
}

StoreWriter::StoreWriter(std::string db_path, RunInfo run, WriterOptions options)
    : db_path_(std::move(db_path)), run_(std::move(run)), options_(options) {
  start();
}

void StoreWriter::start() {
  backoff_ = options_.retry_min;
  thread_ = std::thread([this] { loop(); });
}

StoreWriter::~StoreWriter() {
  abandon();
}

void StoreWriter::push(TickBatch batch) {
  {
    std::lock_guard lock(mu_);
    if (finishing_ || abandon_ || error_) {
      ++stats_.ticks_dropped;
      return;
    }
    queued_bytes_ += approx_bytes(batch);
    queue_.push_back(std::move(batch));
    trim_locked();
    stats_.ticks_held_max = std::max<std::uint64_t>(stats_.ticks_held_max, queue_.size());
  }
  cv_.notify_one();
}

void StoreWriter::drop_front_locked(std::string_view cause, const std::string& detail) {
  TickBatch dropped = std::move(queue_.front());
  queue_.pop_front();
  queued_bytes_ -= std::min(queued_bytes_, approx_bytes(dropped));
  // What is not sampled again goes on with the next tick: a GPU list change, NVML events, the
  // training events, rank identities, stacks, and the gaps the loop noticed.
  if (!queue_.empty()) {
    TickBatch& next = queue_.front();
    if (dropped.gpus && !next.gpus) next.gpus = std::move(dropped.gpus);
    carry(dropped.events, next.events);
    carry(dropped.train_events, next.train_events);
    carry(dropped.train_ranks, next.train_ranks);
    carry(dropped.train_stacks, next.train_stacks);
    carry(dropped.gaps, next.gaps);
  } else {
    for (auto& g : dropped.gaps) gaps_.push_back(std::move(g));
  }
  ++stats_.ticks_dropped;
  if (dropped.t_ns == 0) return;
  ++dropped_while_retrying_;
  // Extend the newest gap when it is the same stretch (never one a transaction is writing now).
  if (gaps_.size() > gaps_in_flight_ && gaps_.back().cause == cause &&
      gaps_.back().t1_unix_ns <= dropped.t_ns) {
    gaps_.back().t1_unix_ns = dropped.t_ns;
    ++gaps_.back().ticks;
  } else {
    gaps_.push_back(RecordingGap{dropped.t_ns, dropped.t_ns, 1, std::string(cause), detail});
  }
  join_newer_gap(gaps_, gaps_in_flight_, queue_);
}

void StoreWriter::trim_locked() {
  const std::string_view cause = retrying_ ? gap_cause_of(*retrying_) : std::string_view(kGapStoreError);
  const std::string detail = retrying_ ? retrying_->message : std::string("the store was too slow");
  while (queue_.size() > 1 &&
         (queue_.size() > options_.max_queued || queued_bytes_ > options_.max_queued_bytes))
    drop_front_locked(cause, detail);
}

std::int64_t StoreWriter::run_id() const {
  std::lock_guard lock(mu_);
  return run_id_;
}

std::int64_t StoreWriter::wait_for_run(std::chrono::nanoseconds timeout) {
  std::unique_lock lock(mu_);
  done_cv_.wait_for(lock, timeout, [&] { return run_id_ != 0 || error_ || done_; });
  return run_id_;
}

std::optional<Error> StoreWriter::error() const {
  std::lock_guard lock(mu_);
  return error_;
}

std::optional<Error> StoreWriter::retrying_error() const {
  std::lock_guard lock(mu_);
  return retrying_;
}

bool StoreWriter::end_recorded() const {
  std::lock_guard lock(mu_);
  return end_recorded_;
}

std::vector<std::string> StoreWriter::take_notices() {
  std::lock_guard lock(mu_);
  return std::exchange(notices_, {});
}

WriterStats StoreWriter::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void StoreWriter::set_live_findings(std::vector<diagnose::Finding> findings, std::vector<bool> open) {
  std::lock_guard lock(mu_);
  if (finishing_) return;  // the end's findings replace them
  live_findings_ = std::move(findings);
  live_open_ = std::move(open);
  ++live_findings_gen_;
}

void StoreWriter::request_finish(RunEnd end, std::optional<std::vector<diagnose::Finding>> findings) {
  {
    std::lock_guard lock(mu_);
    if (finishing_) return;
    finishing_ = true;
    finish_requested_ = Clock::now();
    end_ = std::move(end);
    end_findings_ = std::move(findings);
  }
  cv_.notify_all();
}

bool StoreWriter::wait_finished(std::chrono::nanoseconds timeout) {
  std::unique_lock lock(mu_);
  return done_cv_.wait_for(lock, timeout, [&] { return done_; });
}

void StoreWriter::abandon() {
  {
    std::lock_guard lock(mu_);
    abandon_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Expected<void> StoreWriter::finish(const RunEnd& end, std::chrono::nanoseconds timeout) {
  request_finish(end);
  wait_finished(timeout);
  abandon();
  std::lock_guard lock(mu_);
  if (end_recorded_) return {};
  if (error_) return std::unexpected(*error_);
  Error e = retrying_ ? *retrying_ : Error{ErrorDomain::store, 0, "STORE_GAVE_UP", "the writer stopped"};
  e.message =
      fmt::format("{} (gave up after waiting {})", e.message, seconds_text(Clock::now() - finish_requested_));
  return std::unexpected(e);
}

// ---- the thread ----------------------------------------------------------------------------------

void StoreWriter::note_failure_locked(const Error& e) {
  ++stats_.failed_attempts;
  if (!retrying_) {
    retrying_since_ = Clock::now();
    dropped_while_retrying_ = 0;
    notices_.push_back(fmt::format(
        "{}: {}; the samples wait in memory (up to {} ticks) and are written when the store accepts "
        "writes{}",
        run_id_ == 0 ? "recording not started yet" : "recording paused", e.message, options_.max_queued,
        run_id_ == 0 ? "" : " again"));
  }
  retrying_ = e;
}

void StoreWriter::note_success_locked() {
  if (retrying_) {
    const auto lost = dropped_while_retrying_;
    notices_.push_back(
        fmt::format("recording {} after {} ({})", run_id_ == 0 ? "started" : "resumed",
                    seconds_text(Clock::now() - retrying_since_),
                    lost == 0 ? std::string("nothing lost")
                              : fmt::format("{} tick{} did not fit in memory and {} recorded as a gap", lost,
                                            lost == 1 ? "" : "s", lost == 1 ? "is" : "are")));
  }
  retrying_.reset();
  backoff_ = options_.retry_min;
}

void StoreWriter::stop_for_good_locked(Error e) {
  stats_.ticks_dropped += queue_.size();
  queue_.clear();
  queued_bytes_ = 0;
  gaps_.clear();
  notices_.push_back(fmt::format("{}: {}; monitoring goes on (summary at the end)",
                                 run_id_ == 0 ? "not recording" : "recording stopped", e.message));
  error_ = std::move(e);
  retrying_.reset();
}

bool StoreWriter::wait_backoff(std::unique_lock<std::mutex>& lock) {
  cv_.wait_for(lock, backoff_, [&] { return abandon_; });
  backoff_ = std::min(backoff_ * 2, options_.retry_max);
  return !abandon_;
}

bool StoreWriter::open_and_create() {
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (abandon_) return false;
    }
    Error err;
    bool ok = false;
    if (!store_) {
      if (auto s = Store::open(db_path_, OpenMode::read_write, options_.busy_timeout)) {
        store_ = std::move(*s);
        sync_full_.reset();
      } else {
        err = s.error();
      }
    }
    if (store_) {
      // The run's row is the first durable transaction: a power loss right after start keeps it.
      auto r = begin_transaction(true);
      Expected<std::int64_t> id =
          r ? store_->create_run(run_) : Expected<std::int64_t>(std::unexpected(r.error()));
      if (id) {
        if (auto c = commit_transaction(true); !c) id = std::unexpected(c.error());
      }
      if (id) {
        std::lock_guard lock(mu_);
        note_success_locked();  // "started" (run_id_ still 0)
        run_id_ = *id;
        ok = true;
      } else {
        store_->rollback();
        err = id.error();
      }
    }
    if (ok) {
      done_cv_.notify_all();
      return true;
    }
    std::unique_lock lock(mu_);
    if (permanent_store_error(err, true)) {
      stop_for_good_locked(err);
      return false;
    }
    note_failure_locked(err);
    done_cv_.notify_all();  // wait_for_run() callers learn that the store is refusing for now
    if (!wait_backoff(lock)) return false;
  }
}

void StoreWriter::loop() {
  if (!store_ && !open_and_create()) {
    std::lock_guard lock(mu_);
    done_ = true;
    done_cv_.notify_all();
    return;
  }
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return abandon_ || finishing_ || !queue_.empty(); });
    if (abandon_) break;
    std::vector<RecordingGap> gaps = gaps_;
    gaps_in_flight_ = gaps.size();
    if (queue_.empty()) {
      // finishing_, everything held is written: the end, in its own durable transaction.
      lock.unlock();
      auto r = write_end(gaps);
      lock.lock();
      gaps_in_flight_ = 0;
      if (r) {
        gaps_.erase(gaps_.begin(),
                    gaps_.begin() + static_cast<std::ptrdiff_t>(std::min(gaps.size(), gaps_.size())));
        stats_.gaps_recorded += gaps.size();
        end_recorded_ = true;
        note_success_locked();
        break;
      }
      if (permanent_store_error(r.error(), false)) {
        stop_for_good_locked(r.error());
        break;
      }
      note_failure_locked(r.error());
      if (!wait_backoff(lock)) break;
      continue;
    }
    const std::size_t n =
        std::min(queue_.size(), std::max<std::size_t>(1, options_.max_ticks_per_transaction));
    std::vector<TickBatch> batches;
    batches.reserve(n);
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < n; ++i) {
      bytes += approx_bytes(queue_.front());
      batches.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    queued_bytes_ -= std::min(queued_bytes_, bytes);
    const std::optional<std::vector<diagnose::Finding>> live = live_findings_;
    const std::vector<bool> live_open = live_open_;
    const std::uint64_t live_gen = live_findings_gen_;
    lock.unlock();
    auto r = write(batches, gaps, live ? &*live : nullptr, live_open);
    lock.lock();
    gaps_in_flight_ = 0;
    if (r) {
      if (live_findings_gen_ == live_gen) live_findings_.reset();
      stats_.ticks_written += batches.size();
      ++stats_.transactions;
      gaps_.erase(gaps_.begin(),
                  gaps_.begin() + static_cast<std::ptrdiff_t>(std::min(gaps.size(), gaps_.size())));
      stats_.gaps_recorded += gaps.size();
      for (const auto& b : batches) stats_.gaps_recorded += b.gaps.size();
      note_success_locked();
      continue;
    }
    // Not written: the ticks go back to the front of the buffer (bounded: the oldest may go).
    for (auto it = batches.rbegin(); it != batches.rend(); ++it) {
      queued_bytes_ += approx_bytes(*it);
      queue_.push_front(std::move(*it));
    }
    if (permanent_store_error(r.error(), false)) {
      stop_for_good_locked(r.error());
      break;
    }
    note_failure_locked(r.error());
    trim_locked();
    if (!wait_backoff(lock)) break;
  }
  if (!end_recorded_ && !error_) {
    stats_.ticks_dropped += queue_.size();
    queue_.clear();
    queued_bytes_ = 0;
  }
  done_ = true;
  done_cv_.notify_all();
}

// ---- transactions --------------------------------------------------------------------------------

Expected<void> StoreWriter::begin_transaction(bool durable) {
  // Durable when waiting for the next commit (about as far off as the last one) would leave the
  // oldest commit not yet fsynced older than durable_every: every committed tick is on disk within
  // about durable_every, at one fsync per durable_every when ticks come faster.
  const auto now = Clock::now();
  const auto gap = last_commit_ ? now - *last_commit_ : Clock::duration(options_.durable_every);
  const auto oldest = first_unsynced_.value_or(now);
  if (options_.durable_every.count() == 0 || (now - oldest) + gap >= options_.durable_every) durable = true;
  if (sync_full_ != durable) {
    if (auto r = store_->set_synchronous_full(durable); !r) return r;
    sync_full_ = durable;
  }
  return store_->begin();
}

Expected<void> StoreWriter::commit_transaction(bool /*durable*/) {
  if (auto r = store_->commit(); !r) return r;
  const auto now = Clock::now();
  last_commit_ = now;
  if (sync_full_.value_or(false)) {
    first_unsynced_.reset();
    std::lock_guard lock(mu_);
    ++stats_.durable_commits;
  } else if (!first_unsynced_) {
    first_unsynced_ = now;
  }
  if (!dir_synced_ && sync_full_.value_or(false)) {
    // A new store's -wal file is durable only once its directory entry is: fsync the directory
    // once (SQLite does not for the WAL).
    dir_synced_ = true;
    auto dir = std::filesystem::path(store_->path()).parent_path();
    const std::string d = dir.empty() ? "." : dir.string();
    if (int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); fd >= 0) {
      (void)::fsync(fd);
      ::close(fd);
    }
  }
  return {};
}

void StoreWriter::undo(std::vector<Undo>& log) {
  // Newest first: a series touched twice is put back to its oldest recorded state last.
  for (auto it = log.rbegin(); it != log.rend(); ++it) {
    auto o = open_.find(it->key);
    if (o == open_.end()) continue;
    if (it->created) {
      open_.erase(o);
      continue;
    }
    Open& x = o->second;
    if (it->before_close) x.chunk = std::move(*it->before_close);
    x.chunk.t_ms.resize(it->rows);
    x.chunk.values.resize(it->rows * x.chunk.columns);
    x.encoded.reset(x.chunk);  // rare (a failed transaction): encode the kept rows again
    x.chunk_id = it->chunk_id;
    x.dirty = it->dirty;
    x.last_batch = it->last_batch;
    x.has_user = it->has_user;
    x.has_attribution = it->has_attribution;
  }
  log.clear();
}

Expected<StoreWriter::Open*> StoreWriter::series_for(const SeriesInfo& info, std::vector<Undo>& log) {
  Key key{static_cast<int>(info.kind), info.gpu_index ? static_cast<std::int64_t>(*info.gpu_index) : -1,
          info.kind == SeriesKind::train_rank ? info.rank_key
                                              : (info.pid ? static_cast<std::int64_t>(*info.pid) : -1),
          info.start_time_ticks};
  auto it = open_.find(key);
  if (it != open_.end()) {
    Open& o = it->second;
    if (o.last_batch != batch_counter_) {
      // First touch in this transaction: remember how to put it back.
      log.push_back(Undo{key, false, o.chunk.rows(), o.chunk_id, o.dirty, o.last_batch, std::nullopt,
                         o.has_user, o.has_attribution});
    }
    return &o;
  }
  SeriesInfo s = info;
  s.run_id = run_id_;
  auto id = store_->create_series(s);
  if (!id) return std::unexpected(id.error());
  Open o;
  o.series_id = *id;
  o.chunk.columns = fields_of(info.kind).size();
  o.encoded.clear(o.chunk.columns);
  o.has_user = !info.user.empty();
  o.has_attribution = has_attribution(info.attribution);
  log.push_back(Undo{key, true, 0, 0, false, 0, std::nullopt});
  return &open_.emplace(key, std::move(o)).first->second;
}

Expected<void> StoreWriter::persist(Open& o) {
  if (o.chunk_id == 0) {
    auto id = store_->insert_chunk(o.series_id, o.chunk, o.encoded.blob());
    if (!id) return std::unexpected(id.error());
    o.chunk_id = *id;
    return {};
  }
  auto id = store_->replace_chunk(o.chunk_id, o.series_id, o.chunk, o.encoded.blob());
  if (!id) return std::unexpected(id.error());
  o.chunk_id = *id;
  return {};
}

Expected<void> StoreWriter::write(std::vector<TickBatch>& batches, const std::vector<RecordingGap>& gaps,
                                  const std::vector<diagnose::Finding>* live_findings,
                                  const std::vector<bool>& live_open) {
  const std::uint64_t counter_before = batch_counter_;
  ++batch_counter_;
  if (auto r = begin_transaction(false); !r) {
    batch_counter_ = counter_before;
    return r;
  }
  std::vector<Undo> log;
  auto fail = [&](Error e) -> Expected<void> {
    store_->rollback();
    undo(log);
    batch_counter_ = counter_before;
    return std::unexpected(std::move(e));
  };
  if (auto r = store_->insert_gaps(run_id_, gaps); !r) return fail(r.error());
  for (auto& batch : batches) {
    if (batch.gpus) {
      if (auto r = store_->put_gpus(run_id_, *batch.gpus); !r) return fail(r.error());
    }
    for (auto& row : batch.rows) {
      auto open = series_for(row.series, log);
      if (!open) return fail(open.error());
      Open& o = **open;
      o.last_batch = batch_counter_;
      // A process whose user or attribution the host reader gave only after the series was created
      // (its details are read later, or the GPU join found it later): the series row learns it once.
      const bool new_user = !o.has_user && !row.series.user.empty();
      const bool new_attr = !o.has_attribution && has_attribution(row.series.attribution);
      if (new_user || new_attr) {
        if (auto r = store_->set_series_attribution(o.series_id, new_user ? row.series.user : std::string(),
                                                    new_attr ? &row.series.attribution : nullptr);
            !r)
          return fail(r.error());
        o.has_user = o.has_user || new_user;
        o.has_attribution = o.has_attribution || new_attr;
      }
      if (row.usage) {
        if (auto r = store_->add_usage(o.series_id, row.t_ms, *row.usage); !r) return fail(r.error());
      }
      // Close a full chunk before appending (writing it first when this transaction filled it).
      if (o.chunk.rows() >= options_.chunk_rows) {
        // Keep the chunk as it was for undo(), once per series and transaction.
        for (auto it = log.rbegin(); it != log.rend(); ++it) {
          if (&open_.find(it->key)->second != &o) continue;
          if (!it->created && !it->before_close) it->before_close = o.chunk;
          break;
        }
        if (o.dirty) {
          if (auto r = persist(o); !r) return fail(r.error());
        }
        o.chunk.clear();
        o.encoded.clear(o.chunk.columns);
        o.chunk_id = 0;
      }
      o.chunk.append(row.t_ms, row.values);
      o.encoded.append(row.t_ms, row.values);
      o.dirty = true;
    }
    if (!batch.events.empty()) {
      if (auto r = store_->insert_gpu_events(run_id_, batch.events); !r) return fail(r.error());
    }
    for (const auto& e : batch.train_events) {
      if (auto r = store_->insert_train_event(run_id_, e); !r) return fail(r.error());
    }
    for (const auto& rank : batch.train_ranks) {
      if (auto r = store_->put_train_rank(run_id_, rank); !r) return fail(r.error());
    }
    for (const auto& st : batch.train_stacks) {
      if (auto r = store_->insert_train_stack(run_id_, st); !r) return fail(r.error());
    }
    if (auto r = store_->insert_gaps(run_id_, batch.gaps); !r) return fail(r.error());
  }
  for (auto& [key, o] : open_) {
    if (!o.dirty || o.last_batch != batch_counter_) continue;
    if (auto r = persist(o); !r) return fail(r.error());
  }
  if (live_findings) {
    if (auto r = store_->insert_findings(run_id_, *live_findings, live_open); !r) return fail(r.error());
  }
  if (auto r = commit_transaction(false); !r) return fail(r.error());
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

Expected<void> StoreWriter::write_end(const std::vector<RecordingGap>& gaps) {
  RunEnd end;
  std::optional<std::vector<diagnose::Finding>> findings;
  {
    std::lock_guard lock(mu_);
    end = end_;
    findings = end_findings_;
  }
  if (auto r = begin_transaction(true); !r) return r;
  auto fail = [&](Error e) -> Expected<void> {
    store_->rollback();
    return std::unexpected(std::move(e));
  };
  if (auto r = store_->insert_gaps(run_id_, gaps); !r) return fail(r.error());
  if (auto r = store_->finish_run(run_id_, end); !r) return fail(r.error());
  if (findings) {
    if (auto r = store_->insert_findings(run_id_, *findings); !r) return fail(r.error());
  }
  if (auto r = commit_transaction(true); !r) return fail(r.error());
  return {};
}

}  // namespace trainmon::store
