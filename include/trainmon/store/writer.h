// SPDX-License-Identifier: Apache-2.0
// StoreWriter: writes a run's samples on its own thread, one transaction per tick (several queued
// ticks are coalesced into one), so a slow or locked disk never stalls sampling. Each series keeps
// one open chunk that is rewritten at every flush and closed after `chunk_rows` rows: a recorder
// killed with SIGKILL loses at most the tick being written.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>
#include <vector>

#include "trainmon/core/error.h"
#include "trainmon/core/gpu_sample.h"
#include "trainmon/store/run_info.h"
#include "trainmon/store/store.h"

namespace trainmon::store {

/// One row for one series: `series` says which (id and run_id are ignored), `values` its columns
/// in fields_of(series.kind) order.
struct SeriesRow {
  SeriesInfo series;
  std::int64_t t_ms = 0;
  std::vector<std::int64_t> values;
};

/// What one tick adds to the store.
struct TickBatch {
  std::vector<SeriesRow> rows;
  std::vector<GpuEvent> events;
  std::optional<std::vector<RunGpu>> gpus;       ///< set when the run's GPU list changed
  std::vector<TrainEvent> train_events;          ///< events from the training process since the last tick
  std::vector<diagnose::TrainRank> train_ranks;  ///< ranks whose identity is new or changed
  std::vector<TrainStack> train_stacks;          ///< Python stacks collected since the last tick
};

struct WriterOptions {
  std::size_t chunk_rows = 60;   ///< rows per chunk before a new one is started
  std::size_t max_queued = 120;  ///< ticks held while the disk is slow; older ones beyond are dropped
};

/// Counters of a writer (for the summary and tests).
struct WriterStats {
  std::uint64_t ticks_written = 0;
  std::uint64_t ticks_dropped = 0;  ///< queue full, or written after a store error
  std::uint64_t transactions = 0;
};

class StoreWriter {
 public:
  StoreWriter(Store store, std::int64_t run_id, WriterOptions options = {});
  /// Flushes what is queued, then stops the thread (finish() is the normal way out).
  ~StoreWriter();
  StoreWriter(const StoreWriter&) = delete;
  StoreWriter& operator=(const StoreWriter&) = delete;

  /// Queue one tick. Never blocks on the disk.
  void push(TickBatch batch);
  /// Write everything queued, then record the run's end. Returns the first error seen (then the
  /// end may not be recorded). Further pushes are dropped.
  Expected<void> finish(const RunEnd& end);
  /// The first write error, if any (the writer stops writing after it; sampling goes on).
  std::optional<Error> error() const;
  WriterStats stats() const;

 private:
  using Key = std::tuple<int, std::int64_t, std::int64_t, std::uint64_t>;  // kind, gpu, pid, start
  struct Open {
    std::int64_t series_id = 0;
    std::int64_t chunk_id = 0;  ///< 0: not inserted yet
    Chunk chunk;
    bool dirty = false;
    std::uint64_t last_batch = 0;
  };

  void loop();
  Expected<void> write(std::vector<TickBatch>& batches);
  Expected<Open*> series_for(const SeriesInfo& info);
  Expected<void> persist(Open& open);

  Store store_;
  const std::int64_t run_id_;
  const WriterOptions options_;
  std::map<Key, Open> open_;
  std::uint64_t batch_counter_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<TickBatch> queue_;
  bool stop_ = false;
  bool busy_ = false;
  std::optional<Error> error_;
  WriterStats stats_;
  std::thread thread_;
};

}  // namespace trainmon::store
