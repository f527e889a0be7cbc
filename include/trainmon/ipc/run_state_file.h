// SPDX-License-Identifier: Apache-2.0
// The live state file of a run: a small JSON document (version 1, docs/top.md "Live state files")
// that `trainmon run` rewrites atomically every tick in the user's runtime directory, so that the
// other views of the same user (`top`, `serve`) see the training loop of every run going on:
// identity, the job's and each rank's figures, totals, the last step, the phase, the open findings.
//
//   auto f = ipc::RunStateFile::create(header);          // before the first tick
//   each tick: f->write(live.series().train, now_s, live.active());
//   at the end: f->remove();                             // (the destructor removes it too)
//
//   for (const auto& run : ipc::read_live_runs()) ...    // top, serve: stale files are cleaned up
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainmon/core/error.h"
#include "trainmon/diagnose/finding.h"
#include "trainmon/diagnose/train_series.h"

namespace trainmon::ipc {

/// The document's version ("v"). Keys are only ever added within a version (readers ignore keys they
/// do not know); a key that changes meaning bumps it.
inline constexpr int kRunStateVersion = 1;
/// The span of the "recent" figures (samples/s, step quantiles, data share), seconds before the tick.
inline constexpr double kRunStateRecentS = 30;
/// Readers refuse larger files (a run of 1,000 ranks writes about 600 KiB).
inline constexpr std::size_t kRunStateMaxBytes = 4u << 20;
/// read_live_runs reads at most this many files, and stops after this many bytes in all (a directory
/// filled with files, or with large ones, cannot make top or serve read without bound each tick).
inline constexpr std::size_t kRunStateMaxFiles = 256;
inline constexpr std::size_t kRunStateMaxTotalBytes = 32u << 20;

/// Where live state files are: $XDG_RUNTIME_DIR/trainmon/runs when XDG_RUNTIME_DIR is set, absolute
/// and writable, else /tmp/trainmon-UID/runs (UID the effective uid); as the agent snapshot's directory.
std::string run_state_dir();

/// Creates `dir` (and its parent) with mode 0700 where missing, and checks both are directories (not
/// links) owned by the effective uid that group and others cannot write. Errors (domain os): a
/// directory cannot be created, is not ours or is writable by others (nothing is written then).
Expected<void> ensure_private_dir(const std::string& dir);

/// What a run's document says of the run itself (constant for the run, written every tick).
struct RunStateHeader {
  std::int64_t run_id = 0;  ///< 0: not recorded (yet: the store could not be opened or created the run late)
  std::string name;
  std::string db;                     ///< the store's path
  std::uint32_t pid = 0;              ///< the `trainmon run` process
  std::uint64_t pid_start_ticks = 0;  ///< its /proc/PID/stat start time (field 22): a reused pid differs
  /// The inode of its PID namespace (/proc/self/ns/pid); 0: RunStateFile::create fills it in.
  std::uint64_t pid_ns = 0;
  std::string host;
  double start_unix_s = 0;  ///< run clock 0
  std::int64_t interval_ms = 0;
  std::vector<std::pair<std::string, std::string>> labels;  ///< the run's labels, as stored
};

/// The document (version 1) for the run at `now_s` (run clock): the header, the training figures of
/// `train` (totals from each rank's newest cumulative figures, or `sums` when the sender gave none;
/// recent figures over [now_s - kRunStateRecentS, now_s]) and the open `findings`.
/// `sums`: per rank key, the sums of its rows (steps, samples, step s, data s) for senders without totals.
struct RankSums {
  std::int64_t key = 0;
  std::size_t rows = 0;  ///< rows of the rank already added
  double steps = 0, samples = 0, step_s = 0, data_s = 0, comm_s = 0;
  bool samples_known = false, data_known = false, comm_known = false;
};
std::string run_state_json(const RunStateHeader& header, const diagnose::TrainSeries& train, double now_s,
                           std::span<const diagnose::Finding> findings, std::span<const RankSums> sums = {});

/// One run's live state file, written by `trainmon run`. Move-only; removes its file when destroyed.
class RunStateFile {
 public:
  /// The file `dir`/run-<run id>-<pid>.json (dir: run_state_dir() when empty), after
  /// ensure_private_dir(dir). Nothing is written before write(). Errors: as ensure_private_dir.
  static Expected<RunStateFile> create(RunStateHeader header, std::string dir = {});
  RunStateFile(RunStateFile&& other) noexcept;
  RunStateFile& operator=(RunStateFile&& other) noexcept;
  RunStateFile(const RunStateFile&) = delete;
  RunStateFile& operator=(const RunStateFile&) = delete;
  ~RunStateFile();

  /// Rewrites the file atomically (a temporary file created without following links, then rename).
  /// Cost: the training rows added since the last call plus the last kRunStateRecentS of each rank.
  /// Errors (domain os): the file cannot be written (the previous document stays).
  Expected<void> write(const diagnose::TrainSeries& train, double now_s,
                       std::span<const diagnose::Finding> findings);
  /// The run id, once the store has created the run (a store locked at the start creates it late,
  /// docs/store.md "Safety"): later writes carry it; the file keeps its name.
  void set_run_id(std::int64_t run_id) noexcept { header_.run_id = run_id; }
  /// Removes the file (idempotent); later writes do nothing.
  void remove() noexcept;
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  RunStateFile() = default;
  RunStateHeader header_;
  std::string path_;
  std::vector<RankSums> sums_;
  bool removed_ = false;
};

// ---- reading (top, serve) -------------------------------------------------------------------------

/// One rank as a live state file gives it. NaN / -1 / empty: not known.
struct LiveRankState {
  std::int64_t key = 0;
  int rank = -1, local_rank = -1, world_size = -1, node_rank = -1;
  std::string host;
  std::uint32_t pid = 0;
  int gpu = -1;  ///< NVML index
  int cuda_device = -1;
  /// Not in the document: energy the rank's GPU used while serve watched the rank, joules (NVML's
  /// total-energy counter of GPU `gpu`; a GPU shared with other ranks or programs counts whole). Filled
  /// by serve (ServeState) for /metrics; NaN elsewhere.
  double energy_j = std::numeric_limits<double>::quiet_NaN();
  double total_steps = std::numeric_limits<double>::quiet_NaN();
  double total_samples = std::numeric_limits<double>::quiet_NaN();
  double total_step_s = std::numeric_limits<double>::quiet_NaN();
  double total_data_s = std::numeric_limits<double>::quiet_NaN();
  double total_comm_s = std::numeric_limits<double>::quiet_NaN();  ///< protocol v3: collective wait
  double last_step_unix_s = std::numeric_limits<double>::quiet_NaN();
  // over the recent window:
  double recent_steps = 0;
  double samples_per_s = std::numeric_limits<double>::quiet_NaN();
  double steps_per_s = std::numeric_limits<double>::quiet_NaN();
  double step_p50_s = std::numeric_limits<double>::quiet_NaN();
  double step_p90_s = std::numeric_limits<double>::quiet_NaN();
  double step_p99_s = std::numeric_limits<double>::quiet_NaN();
  double data_share = std::numeric_limits<double>::quiet_NaN();
  double comm_share = std::numeric_limits<double>::quiet_NaN();      ///< collective wait / step time
  double compute_mean_s = std::numeric_limits<double>::quiet_NaN();  ///< (step - data - comm) / steps
  /// "data", "compute", "idle", "unknown", "collective", "optimizer"; empty: not reported (the
  /// document's `coll` object, when the phase is collective, is in `document`)
  std::string phase;
  double phase_since_unix_s = std::numeric_limits<double>::quiet_NaN();
};

/// One run as its live state file gives it.
struct LiveRunState {
  std::string path;      ///< the file it was read from
  std::string document;  ///< the document (a JSON object) as parsed, serialised again by text::json_dump
  int version = 0;
  std::int64_t run_id = 0;
  std::string name, db, host;
  std::uint32_t pid = 0;
  std::uint64_t pid_start_ticks = 0;
  std::uint64_t pid_ns = 0;                  ///< the writer's PID namespace (0: not said)
  double start_unix_s = 0, time_unix_s = 0;  ///< run start; when the document was written
  std::int64_t interval_ms = 0;
  std::vector<std::pair<std::string, std::string>> labels;
  bool train = false;  ///< a training process reported step timing
  double window_s = kRunStateRecentS;
  double steps = std::numeric_limits<double>::quiet_NaN();          ///< the rank that did the most, total
  double samples = std::numeric_limits<double>::quiet_NaN();        ///< all ranks, total
  double samples_per_s = std::numeric_limits<double>::quiet_NaN();  ///< recent, summed over ranks
  double steps_per_s = std::numeric_limits<double>::quiet_NaN();    ///< recent, the slowest rank
  double step_median_s = std::numeric_limits<double>::quiet_NaN();  ///< recent, the slowest rank
  double data_share = std::numeric_limits<double>::quiet_NaN();     ///< recent, over every rank
  double comm_share = std::numeric_limits<double>::quiet_NaN();     ///< recent, over every rank
  std::vector<LiveRankState> ranks;                                 ///< ordered by key
  std::vector<diagnose::Finding> findings;
};

/// Parses a document. Errors (domain usage, name BAD_RUN_STATE): not JSON, not an object, "v" not 1,
/// a field of the wrong type; the message names it.
Expected<LiveRunState> parse_run_state(std::string_view text);

/// A document of a writer in another PID namespace (a container sharing the directory) is stale when
/// it was not rewritten for this long, seconds (its pid means nothing here).
inline constexpr double kRunStateForeignStaleS = 600;

/// Every live run in `dir` (run_state_dir() when empty), oldest start first. Only regular files named
/// run-*.json that the effective uid owns, opened without following links or blocking, at most
/// kRunStateMaxBytes each, kRunStateMaxFiles and kRunStateMaxTotalBytes in all (files::
/// read_regular_file_at in a directory checked by files::open_private_dir).
/// A file whose `trainmon run` is gone (its pid does not exist, or now has another start time; for a
/// writer in another PID namespace: not rewritten for kRunStateForeignStaleS) is stale: it is removed
/// and skipped. Unreadable or malformed files are skipped (left in place). A missing directory, or
/// one that is not private to us, gives nothing.
std::vector<LiveRunState> read_live_runs(const std::string& dir = {});

/// The inode of this process's PID namespace (/proc/self/ns/pid); 0 when it cannot be read.
std::uint64_t own_pid_namespace();

/// The start time (clock ticks since boot, /proc/PID/stat field 22) of `pid`; nullopt when it does not
/// exist or cannot be read. `proc_root`: "/proc".
std::optional<std::uint64_t> process_start_ticks(std::uint32_t pid, const std::string& proc_root = "/proc");

}  // namespace trainmon::ipc
