// SPDX-License-Identifier: Apache-2.0
// StoreWriter: writes a run's samples on its own thread, one transaction per tick (several queued
// ticks are coalesced into one), so a slow, locked or full store never stalls sampling. Each series
// keeps one open chunk that is rewritten at every flush and closed after `chunk_rows` rows: a
// recorder killed with SIGKILL loses at most the tick being written.
//
// Recording never gives up while the job runs (docs/store.md "Safety"): a store that refuses writes
// (locked by another connection, disk full, I/O error) is retried with back-off while the ticks wait
// in a bounded buffer; when the store accepts writes again everything held is written, and ticks
// that did not fit are recorded as a gap with its cause. Only a store that can never be written
// (damaged, another program's, a newer schema, no permission, read-only) stops the writer for good.
// The WAL is fsynced (a synchronous=FULL commit) at least every `durable_every`: a power loss keeps
// all but about the last second.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "trainmon/core/error.h"
#include "trainmon/core/gpu_sample.h"
#include "trainmon/diagnose/finding.h"
#include "trainmon/store/chunk_codec.h"
#include "trainmon/store/run_info.h"
#include "trainmon/store/store.h"

namespace trainmon::store {

/// One row for one series: `series` says which (id and run_id are ignored), `values` its columns
/// in fields_of(series.kind) order.
struct SeriesRow {
  SeriesInfo series;
  std::int64_t t_ms = 0;
  std::vector<std::int64_t> values;
  /// gpu_process rows of a process holding memory: its share of the tick for the usage ledger
  /// (store/usage_ledger.h), added to the series' usage bucket (schema 5).
  std::optional<UsageShare> usage;
};

/// What one tick adds to the store.
struct TickBatch {
  std::vector<SeriesRow> rows;
  std::vector<GpuEvent> events;
  std::optional<std::vector<RunGpu>> gpus;       ///< set when the run's GPU list changed
  std::vector<TrainEvent> train_events;          ///< events from the training process since the last tick
  std::vector<diagnose::TrainRank> train_ranks;  ///< ranks whose identity is new or changed
  std::vector<TrainStack> train_stacks;          ///< Python stacks collected since the last tick
  /// The tick's time on the run's timeline (ns since the epoch); 0 for a batch that is no sampling
  /// tick (training messages alone). A tick dropped from a full buffer is recorded as a gap at it.
  std::int64_t t_ns = 0;
  std::vector<RecordingGap> gaps;  ///< gaps the sampling loop noticed (ticks it skipped)
};

struct WriterOptions {
  std::size_t chunk_rows = 60;  ///< rows per chunk before a new one is started
  /// Ticks held while the store refuses writes (1 h at 1 s); beyond it the oldest are dropped and
  /// recorded as a gap.
  std::size_t max_queued = 3600;
  std::size_t max_queued_bytes = 64u << 20;      ///< the same bound in (estimated) bytes
  std::size_t max_ticks_per_transaction = 300;   ///< catching up writes in steps of this many ticks
  std::chrono::milliseconds retry_min{100};      ///< first back-off after a failed write
  std::chrono::milliseconds retry_max{2000};     ///< back-off doubles up to this
  std::chrono::milliseconds busy_timeout{1000};  ///< SQLite's wait for another connection's lock
  /// A commit fsyncs the WAL (synchronous=FULL) when waiting for the next one would leave a commit
  /// unsynced for longer than this (the next assumed as far off as the last), and always the run's
  /// creation and end; the others use synchronous=NORMAL. So every tick is on disk within about
  /// this, at one fsync per tick when ticks are this far apart or more. 0: every commit.
  std::chrono::milliseconds durable_every{1000};
};

/// Counters of a writer (for the summary, the tests and bench/).
struct WriterStats {
  std::uint64_t ticks_written = 0;
  std::uint64_t ticks_dropped = 0;  ///< buffer full (recorded as gaps), or the writer stopped for good
  std::uint64_t transactions = 0;
  std::uint64_t failed_attempts = 0;  ///< transactions that failed and were retried
  std::uint64_t durable_commits = 0;  ///< commits with synchronous=FULL
  std::uint64_t gaps_recorded = 0;    ///< gap rows committed
  std::uint64_t ticks_held_max = 0;   ///< the most ticks held at once
};

class StoreWriter {
 public:
  /// Writes into run `run_id` of the open `store` (the run already exists).
  StoreWriter(Store store, std::int64_t run_id, WriterOptions options = {});
  /// Opens the store at `db_path` and creates `run` on the writer thread, retrying with back-off
  /// while the store is locked, full or failing; ticks pushed meanwhile wait in the buffer. A store
  /// that can never be written ends the writer (error()).
  StoreWriter(std::string db_path, RunInfo run, WriterOptions options = {});
  /// Stops at once: what is still held is lost (finish() is the normal way out).
  ~StoreWriter();
  StoreWriter(const StoreWriter&) = delete;
  StoreWriter& operator=(const StoreWriter&) = delete;

  /// Queue one tick. Never blocks on the disk.
  void push(TickBatch batch);

  /// The run's id; 0 while it is not created yet (the store refused so far) or never will be.
  std::int64_t run_id() const;
  /// Waits up to `timeout` until the run exists or the writer stopped for good; returns run_id().
  std::int64_t wait_for_run(std::chrono::nanoseconds timeout);

  /// The run's findings so far (a running run's live diagnosis), replacing those stored: written
  /// with the next tick's transaction, so that `runs`, `show`, `report` and a run whose recorder
  /// dies keep what was found. Only the newest set is kept while the store refuses writes. `open`:
  /// whether each (same index) is still open (Store::insert_findings; empty: all).
  void set_live_findings(std::vector<diagnose::Finding> findings, std::vector<bool> open = {});

  /// Ask for the end: everything held is written, then `end` and `findings` (replacing the run's
  /// findings; nullopt: left as they are) in one durable transaction, retried like the ticks.
  /// Further pushes are dropped. Returns at once.
  void request_finish(RunEnd end, std::optional<std::vector<diagnose::Finding>> findings = std::nullopt);
  /// Waits up to `timeout` for the writer to be done after request_finish(); true when it is (the
  /// end recorded, or the writer stopped for good).
  bool wait_finished(std::chrono::nanoseconds timeout);
  /// Stop retrying: what is still held is dropped, the thread ends.
  void abandon();
  /// request_finish(end), wait_finished(timeout), abandon(). The error when the end was not recorded.
  Expected<void> finish(const RunEnd& end, std::chrono::nanoseconds timeout = std::chrono::seconds(30));
  /// True when the run's end is in the store.
  bool end_recorded() const;

  /// The error that stopped the writer for good; nullopt while it writes or retries.
  std::optional<Error> error() const;
  /// The error the store gives while the writer retries; nullopt when writes succeed.
  std::optional<Error> retrying_error() const;
  /// Messages for the user since the last call ("recording paused ...", "recording resumed ...").
  std::vector<std::string> take_notices();
  WriterStats stats() const;

 private:
  using Key = std::tuple<int, std::int64_t, std::int64_t, std::uint64_t>;  // kind, gpu, pid, start
  struct Open {
    std::int64_t series_id = 0;
    std::int64_t chunk_id = 0;  ///< 0: not inserted yet
    Chunk chunk;
    ChunkEncoder encoded;  ///< chunk's blob, kept up to date row by row
    bool dirty = false;
    std::uint64_t last_batch = 0;
    bool has_user = false, has_attribution = false;  ///< what the series row in the store knows
  };
  /// How to put an Open back as it was before a transaction that failed.
  struct Undo {
    Key key;
    bool created = false;
    std::size_t rows = 0;
    std::int64_t chunk_id = 0;
    bool dirty = false;
    std::uint64_t last_batch = 0;
    std::optional<Chunk> before_close;  ///< the chunk as it was when this transaction closed it
    bool has_user = false, has_attribution = false;
  };

  void start();
  void loop();
  bool open_and_create();
  Expected<void> write(std::vector<TickBatch>& batches, const std::vector<RecordingGap>& gaps,
                       const std::vector<diagnose::Finding>* live_findings,
                       const std::vector<bool>& live_open);
  Expected<void> write_end(const std::vector<RecordingGap>& gaps);
  Expected<void> begin_transaction(bool durable);
  Expected<void> commit_transaction(bool durable);
  void undo(std::vector<Undo>& log);
  Expected<Open*> series_for(const SeriesInfo& info, std::vector<Undo>& log);
  Expected<void> persist(Open& open);
  // ---- under mu_ ----
  void trim_locked();
  void drop_front_locked(std::string_view cause, const std::string& detail);
  void note_failure_locked(const Error& e);
  void note_success_locked();
  void stop_for_good_locked(Error e);
  bool wait_backoff(std::unique_lock<std::mutex>& lock);

  std::optional<Store> store_;
  std::string db_path_;
  RunInfo run_;
  const WriterOptions options_;
  std::map<Key, Open> open_;
  std::uint64_t batch_counter_ = 0;
  std::optional<bool> sync_full_;                                        ///< the connection's current setting
  std::optional<std::chrono::steady_clock::time_point> last_commit_;     ///< the last successful commit
  std::optional<std::chrono::steady_clock::time_point> first_unsynced_;  ///< the oldest one not fsynced
  bool dir_synced_ = false;

  mutable std::mutex mu_;
  std::condition_variable cv_;       ///< wakes the writer thread
  std::condition_variable done_cv_;  ///< run created / writer done
  std::deque<TickBatch> queue_;
  std::size_t queued_bytes_ = 0;
  std::vector<RecordingGap> gaps_;  ///< not yet written
  std::size_t gaps_in_flight_ = 0;  ///< the first gaps_ a transaction is writing now
  std::int64_t run_id_ = 0;
  bool finishing_ = false;
  std::chrono::steady_clock::time_point finish_requested_{};
  bool abandon_ = false;
  bool done_ = false;
  bool end_recorded_ = false;
  RunEnd end_;
  std::optional<std::vector<diagnose::Finding>> end_findings_;
  std::optional<std::vector<diagnose::Finding>> live_findings_;  ///< not yet written
  std::vector<bool> live_open_;                                  ///< which of them are open
  std::uint64_t live_findings_gen_ = 0;                          ///< set_live_findings() calls
  std::optional<Error> error_;                                   ///< stopped for good
  std::optional<Error> retrying_;                                ///< the current transient failure
  std::chrono::steady_clock::time_point retrying_since_{};
  std::uint64_t dropped_while_retrying_ = 0;
  std::chrono::milliseconds backoff_{0};
  std::vector<std::string> notices_;
  WriterStats stats_;
  std::thread thread_;
};

/// The gap cause (kGap*) for a store error.
std::string_view gap_cause_of(const Error& e);
/// Whether a store error will not go away by retrying (damaged, another program's file, a newer
/// schema, no permission, read-only, corrupt): the writer stops on it. `at_open`: while opening the
/// store and creating the run, where SQLITE_ERROR, SQLITE_CANTOPEN and kErrCannotCreate are
/// permanent too.
bool permanent_store_error(const Error& e, bool at_open);

}  // namespace trainmon::store
