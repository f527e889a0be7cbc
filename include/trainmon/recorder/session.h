// SPDX-License-Identifier: Apache-2.0
// RecorderSession: what happens at every tick of `trainmon run` / `trainmon record`, apart from
// taking the snapshot: find the job's processes, turn the Snapshot into store rows (handed to the
// StoreWriter thread), keep the summary statistics, note the job's cgroups for the OOM verdict, and
// print the resource line. A store failure is reported once and recording goes on in memory.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "trainmon/core/snapshot.h"
#include "trainmon/core/timeline.h"
#include "trainmon/diagnose/train_series.h"
#include "trainmon/recorder/job_tree.h"
#include "trainmon/recorder/resource_line.h"
#include "trainmon/recorder/run_stats.h"
#include "trainmon/runner/oom.h"
#include "trainmon/store/writer.h"

namespace trainmon::recorder {

/// Store rows for one snapshot, at the snapshot's own times (its wall clock). `stored_pids`
/// (sorted): host processes to keep; `job_pids` (sorted): those of them that belong to the watched
/// job (flagged in_job). GPU processes are always kept.
store::TickBatch make_tick_batch(const Snapshot& snap, std::span<const std::uint32_t> stored_pids,
                                 std::span<const std::uint32_t> job_pids);
/// The same on the run's timeline (core/timeline.h): the rows at timeline.of(snap); the driver's
/// high-resolution samples and the NVML events, read by the wall clock, shifted by the snapshot's
/// offset and kept within [`prev_t_ns` - kWallReadingSlackNs, timeline.of(snap) + `interval_ns`].
store::TickBatch make_tick_batch(const Snapshot& snap, std::span<const std::uint32_t> stored_pids,
                                 std::span<const std::uint32_t> job_pids, const Timeline& timeline,
                                 std::int64_t prev_t_ns, std::int64_t interval_ns);

/// Totals over `snap.processes` whose pid is in `pids` (sorted).
JobTotals job_totals(const Snapshot& snap, std::span<const std::uint32_t> pids);

struct SessionOptions {
  std::optional<std::uint32_t> child_pid;  ///< `run`: the command; empty for `record`
  std::uint32_t self_pid = 0;              ///< trainmon (the job's subreaper), never counted in the job
  std::string proc_root = "/proc";
  std::string sys_root = "/sys";
  std::int64_t print_every_ms = 30'000;  ///< 0: no resource line
  bool quiet = false;
  std::int64_t start_monotonic_ns = 0;  ///< elapsed times count from here (with start_unix_ns: the timeline)
  std::int64_t interval_ns = 1'000'000'000;  ///< the sampling interval (bounds event times to their tick)
  std::FILE* out = stderr;
  /// The training process's current epoch ("45/200") for the resource line; empty function or
  /// nullopt: the elapsed time is shown instead. (Filled from the training-event channel.)
  std::function<std::optional<std::string>()> epoch;
  /// Wall time of the run's start (t = 0 of the run clock), ns since the epoch: with
  /// start_monotonic_ns the run's timeline (core/timeline.h), on which every stored time lies; maps
  /// the training ranks' rows (TrainWindow::t) to stored times too.
  std::int64_t start_unix_ns = 0;
  /// The training loop's figures over the last `seconds` for the resource line's train part; empty
  /// function or nullopt: no train part.
  std::function<std::optional<diagnose::TrainStats>(double seconds)> train;
  /// True while a training process prints the resource line itself (`lines` in its hello): then
  /// trainmon prints none, so the log has one line per interval.
  std::function<bool()> rank_prints_lines;
  /// The usage ledger's "held idle" threshold (store/usage_ledger.h): the run's
  /// diagnose::Thresholds::idle_util_pct (default 5 %, MISSION §4 D2).
  double idle_util_pct = 5;
};

/// What the training processes sent during one tick (ipc::TrainTick, as the recorder stores it).
struct TrainUpdate {
  std::vector<store::TrainEvent> events;
  std::vector<std::pair<diagnose::TrainRank, diagnose::TrainWindow>> windows;  ///< one row per rank
  std::vector<diagnose::TrainRank> ranks;                                      ///< identities new or changed
  std::vector<store::TrainStack> stacks;                                       ///< Python stacks collected
};

class RecorderSession {
 public:
  /// `writer` may be null (no store: monitoring only).
  RecorderSession(SessionOptions options, std::unique_ptr<store::StoreWriter> writer);

  /// The job's pids now (the command, its descendants and orphans adopted by trainmon), sorted; the
  /// Sampler's watch list for the next tick. Empty for `record`.
  std::vector<std::uint32_t> refresh_job_pids();
  /// Account for one snapshot (see the header comment). Never throws.
  void tick(const Snapshot& snap);
  /// The same, with the training process's events since the last tick (stored with the tick) and its
  /// current epoch ("45/200") for the resource line (nullopt: SessionOptions::epoch, else elapsed time).
  void tick(const Snapshot& snap, std::vector<store::TrainEvent> train_events,
            std::optional<std::string> epoch);

  /// The same with everything the training processes sent (events, step timing rows, identities).
  void tick(const Snapshot& snap, TrainUpdate train, std::optional<std::string> epoch);

  /// Store training events outside a tick (the last ones, after the command exited).
  void add_train_events(std::vector<store::TrainEvent> train_events);
  /// Store what the training processes sent outside a tick (the last messages, stacks).
  void add_train(TrainUpdate train);

  RunSummary summary() const { return stats_.summary(); }
  const runner::OomWatch& oom_watch() const { return oom_; }
  /// Last job totals (zero before the first tick).
  const JobTotals& last_job() const { return last_job_; }
  /// The sampling loop skipped `ticks` due ticks (it was stalled), the first at `first_monotonic_ns`,
  /// the last at `last_monotonic_ns`: recorded as a gap (cause sampling_stalled) with the next tick.
  void note_skipped_ticks(std::int64_t first_monotonic_ns, std::int64_t last_monotonic_ns, std::int64_t ticks,
                          std::string detail);
  /// The run's id in the store; 0 while it is not created yet, or when not recording.
  std::int64_t run_id() const;
  /// The findings so far of the running run, stored with the next tick (StoreWriter::
  /// set_live_findings, `open` as there); nothing when not recording.
  void set_live_findings(std::vector<diagnose::Finding> findings, std::vector<bool> open = {});
  /// Write everything held, then the end and `findings` (nullopt: none stored). Waits up to
  /// `wait` for a store that refuses writes (one message after a second); `give_up`, polled about
  /// every 200 ms while waiting, stops waiting when it returns true (a second signal). Returns the
  /// error when the end was not recorded.
  std::optional<Error> finish(const store::RunEnd& end,
                              std::optional<std::vector<diagnose::Finding>> findings = std::nullopt,
                              std::chrono::nanoseconds wait = std::chrono::seconds(30),
                              const std::function<bool()>& give_up = {});
  /// Print what the store writer has to say ("recording paused ...", "resumed ..."); true when
  /// something was printed.
  bool report_store_notices();
  /// The run's timeline (start wall time + monotonic elapsed).
  Timeline timeline() const { return {options_.start_unix_ns, options_.start_monotonic_ns}; }

 private:
  /// The usage ledger's shares of this tick (store/usage_ledger.h) on the batch's gpu_process rows.
  void add_usage_shares(store::TickBatch& batch, const Snapshot& snap);
  SessionOptions options_;
  std::unique_ptr<store::StoreWriter> writer_;
  RunStats stats_;
  runner::OomWatch oom_;
  ParentTable parents_;  // scanned again at any tick where a process appeared (exact job tree)
  std::vector<std::uint32_t> job_pids_;
  JobTotals last_job_;
  /// The usage ledger's energy per tick: each GPU's energy counter (mJ) at the previous tick, by
  /// index, and that tick's monotonic time.
  std::vector<std::pair<unsigned, std::uint64_t>> prev_energy_mj_;
  std::int64_t prev_energy_mono_ns_ = 0;
  std::vector<std::string> gpu_ids_;  ///< uuid (or index) per GPU last sent to the store
  std::int64_t last_print_ms_ = 0;
  std::int64_t prev_t_ns_ = 0;             ///< the last tick's time on the timeline
  std::vector<store::RecordingGap> gaps_;  ///< skipped ticks, sent with the next tick
};

}  // namespace trainmon::recorder
