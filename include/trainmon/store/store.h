// SPDX-License-Identifier: Apache-2.0
// Store: the SQLite run store (docs/store.md). One object = one connection; use it from one thread
// at a time (the recorder gives the writing one to StoreWriter's thread; readers open their own).
// Every method returns an Error (domain store, code = SQLite's) instead of throwing.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trainmon/core/error.h"
#include "trainmon/core/gpu_sample.h"
#include "trainmon/diagnose/finding.h"
#include "trainmon/diagnose/train_series.h"
#include "trainmon/store/chunk_codec.h"
#include "trainmon/store/run_info.h"
#include "trainmon/store/usage_ledger.h"

namespace trainmon::store {

/// The newest schema this build writes (PRAGMA user_version).
int latest_schema_version() noexcept;

enum class OpenMode : std::uint8_t {
  read_write,  ///< create the file (and its directory) when missing; migrate to the latest schema
  read_only,   ///< the file must exist; no migration (a newer or older schema is read as is)
};

/// Error names a caller may test for.
inline constexpr std::string_view kErrDamaged = "STORE_DAMAGED";    ///< not SQLite / quick_check failed
inline constexpr std::string_view kErrMissing = "STORE_MISSING";    ///< read_only and no file
inline constexpr std::string_view kErrNotFound = "RUN_NOT_FOUND";   ///< resolve_run found nothing
inline constexpr std::string_view kErrAmbiguous = "RUN_AMBIGUOUS";  ///< a name matching several runs
inline constexpr std::string_view kErrNewerSchema = "STORE_NEWER_SCHEMA";
inline constexpr std::string_view kErrCannotCreate = "STORE_CANNOT_CREATE";

/// Retention policy for Store::apply_retention. Durations in nanoseconds; 0 disables that step.
struct RetentionPolicy {
  std::int64_t delete_after_ns = 0;      ///< delete runs that ended, and samples taken, longer ago than this
  std::int64_t downsample_after_ns = 0;  ///< samples older than this kept at 1 row per chunk
};

/// What apply_retention did.
struct RetentionResult {
  std::int64_t runs_deleted = 0;
  std::int64_t chunks_downsampled = 0;
  std::int64_t chunks_deleted = 0;  ///< samples older than delete_after_ns in runs still going
};

/// One gpu_process series' usage sums over a time range (Store::usage_by_series).
struct SeriesUsage {
  SeriesInfo series;     ///< with its attribution (schema 5)
  std::string run_kind;  ///< "run" | "record"
  std::string run_name;
  std::string gpu_uuid;  ///< from the run's gpus table; "" when not known
  double held_s = 0, busy_s = 0, idle_s = 0, memory_gib_s = 0, energy_j = 0;
  std::int64_t ticks = 0, first_ms = 0, last_ms = 0;
};

/// Store::usage_coverage.
struct UsageCoverage {
  std::int64_t usage_from_ms = 0, usage_to_ms = 0;
  std::int64_t downsampled_from_ms = 0, downsampled_to_ms = 0;
  std::int64_t runs_without_usage = 0;
};

class Store {
 public:
  /// Open (or create) the store at `path`. A file that is not SQLite, or that fails
  /// `PRAGMA quick_check`, is refused with kErrDamaged and left untouched; so is a SQLite file with
  /// tables but not trainmon's schema (another program's database). An empty file (0 bytes, or SQLite
  /// without tables) becomes a store when opened read_write; read_only it is kErrMissing.
  /// `busy_timeout`: how long a statement, the migration's included, waits for another
  /// connection's lock before SQLITE_BUSY.
  static Expected<Store> open(const std::string& path, OpenMode mode,
                              std::chrono::milliseconds busy_timeout = std::chrono::milliseconds(5000));

  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  ~Store();

  const std::string& path() const noexcept;
  /// PRAGMA user_version of the open file.
  Expected<int> schema_version();

  // ---- transactions (writes batch one tick per transaction) ----
  Expected<void> begin();
  Expected<void> commit();
  void rollback() noexcept;
  /// How long a statement waits for another connection's lock before SQLITE_BUSY (5 s after open).
  void set_busy_timeout(std::chrono::milliseconds timeout) noexcept;
  /// PRAGMA synchronous for the next transactions: FULL (the WAL is fsynced at commit: the
  /// transaction survives a power loss) or NORMAL (fsynced only at checkpoints), the default after
  /// open. Not inside a transaction.
  Expected<void> set_synchronous_full(bool full);

  // ---- runs ----
  /// Insert `run` (id ignored) with its labels and GPUs; returns the new id.
  Expected<std::int64_t> create_run(const RunInfo& run);
  /// Replace the run's GPU list (static facts become known after the first tick).
  Expected<void> put_gpus(std::int64_t run_id, const std::vector<RunGpu>& gpus);
  Expected<void> finish_run(std::int64_t run_id, const RunEnd& end);
  /// Every run, newest first, with gpus and finding_count filled.
  Expected<std::vector<RunInfo>> list_runs();
  Expected<RunInfo> get_run(std::int64_t run_id);
  /// A run id ("12"), a name that matches one run, or "last" (the newest). kErrNotFound or
  /// kErrAmbiguous (message lists the matching ids) otherwise.
  Expected<std::int64_t> resolve_run(std::string_view spec);
  /// Delete a run and everything recorded for it.
  Expected<void> delete_run(std::int64_t run_id);

  // ---- samples ----
  Expected<std::int64_t> create_series(const SeriesInfo& series);
  /// Insert a chunk (a new row); returns its id for update_chunk. `encoded`, when not empty, is
  /// encode_chunk(chunk) already made (the writer's ChunkEncoder) and is stored as it is.
  Expected<std::int64_t> insert_chunk(std::int64_t series_id, const Chunk& chunk,
                                      std::string_view encoded = {});
  /// Rewrite a chunk that grew, in place.
  Expected<void> update_chunk(std::int64_t chunk_id, const Chunk& chunk);
  /// Delete chunk `chunk_id` and insert `chunk` as a new row at the end of the table; returns the new
  /// id. The writer uses this for the open chunk of each series so that growing rows always sit at
  /// the tail and closed chunks stay densely packed (in-place growth splits pages half empty).
  Expected<std::int64_t> replace_chunk(std::int64_t chunk_id, std::int64_t series_id, const Chunk& chunk,
                                       std::string_view encoded = {});
  Expected<std::vector<SeriesInfo>> list_series(std::int64_t run_id);
  /// Call `fn` with each chunk of a series in time order; `aggregated` is true for a downsampled
  /// chunk, whose columns are [mean..., min..., max...] of the original columns, one row.
  Expected<void> read_series(std::int64_t series_id,
                             const std::function<void(const Chunk& chunk, bool aggregated)>& fn);

  // ---- events, findings ----
  Expected<void> insert_gpu_events(std::int64_t run_id, const std::vector<GpuEvent>& events);
  Expected<std::vector<StoredGpuEvent>> gpu_events(std::int64_t run_id);
  Expected<void> insert_train_event(std::int64_t run_id, const TrainEvent& event);
  Expected<std::vector<TrainEvent>> train_events(std::int64_t run_id);
  /// Insert or replace the identity of one training rank (keyed by run and rank.key).
  Expected<void> put_train_rank(std::int64_t run_id, const diagnose::TrainRank& rank);
  /// The run's training ranks, ordered by key as TrainSeries orders them; empty for a store written
  /// before schema 2 (opened read-only, not migrated).
  Expected<std::vector<diagnose::TrainRank>> train_ranks(std::int64_t run_id);
  Expected<void> insert_train_stack(std::int64_t run_id, const TrainStack& stack);
  /// The run's stored stacks, oldest first; empty before schema 2.
  Expected<std::vector<TrainStack>> train_stacks(std::int64_t run_id);
  /// Replace the run's findings (one row each: code, severity, times, the Finding's JSON). `open`: for
  /// a running run's live findings, whether each (same index) is still open; a closed one is stored
  /// with "open": false (RunInfo::open_finding_count leaves it out). Empty: all open (the end's).
  Expected<void> insert_findings(std::int64_t run_id, const std::vector<diagnose::Finding>& findings,
                                 const std::vector<bool>& open = {});
  /// The run's stored findings, in the order they were stored.
  Expected<std::vector<diagnose::Finding>> findings(std::int64_t run_id);

  /// Store gaps of a run's recording (docs/store.md, table gaps).
  Expected<void> insert_gaps(std::int64_t run_id, const std::vector<RecordingGap>& gaps);
  /// The run's gaps, oldest first; empty for a store written before schema 3.
  Expected<std::vector<RecordingGap>> gaps(std::int64_t run_id);

  // ---- usage ledger (schema 5; store/usage_ledger.h) ----
  /// Add one holder's share of one tick (at `t_ms`, Unix ms) to series `series_id`'s usage bucket.
  /// Nothing on a store before schema 5.
  Expected<void> add_usage(std::int64_t series_id, std::int64_t t_ms, const UsageShare& share);
  /// Record the user (empty: keep the stored one) and attribution (null: keep) a series learned after
  /// it was created (nothing before schema 5).
  Expected<void> set_series_attribution(std::int64_t series_id, std::string_view user,
                                        const ProcessAttribution* attribution);
  /// Per gpu_process series, the sums of its usage buckets that start in [since_ms, until_ms).
  Expected<std::vector<SeriesUsage>> usage_by_series(std::int64_t since_ms, std::int64_t until_ms);
  /// What the store covers: the first and last tick of all usage rows, and the span of the chunks
  /// retention downsampled (0, 0: none); runs_without_usage counts runs in [since_ms, until_ms)
  /// with GPU processes but no usage rows.
  Expected<UsageCoverage> usage_coverage(std::int64_t since_ms, std::int64_t until_ms);

  // ---- maintenance ----
  Expected<RetentionResult> apply_retention(std::int64_t now_unix_ns, const RetentionPolicy& policy);
  /// Bytes in the main file (page_count x page_size); the WAL is not counted.
  Expected<std::int64_t> size_bytes();

 private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// The status to show for `run`: "lost" instead of "running" when the recorder pid is gone on this
/// host; otherwise run.status.
std::string effective_status(const RunInfo& run);

}  // namespace trainmon::store
