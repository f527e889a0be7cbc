// SPDX-License-Identifier: Apache-2.0
// What the store keeps about one run (one monitored job, or one `trainmon record` session).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainmon/core/attribution.h"
#include "trainmon/store/series_fields.h"

namespace trainmon::store {

/// One GPU as seen by a run, with the static facts worth keeping.
struct RunGpu {
  unsigned index = 0;
  std::string uuid;  ///< empty when NVML did not say
  std::string name;
  std::string pci_bus_id;
  std::optional<std::int64_t> memory_total_bytes;  ///< empty when N/A
  std::optional<std::int64_t> power_limit_mw;      ///< default power limit; empty when N/A
  bool used_by_job = false;                        ///< a process of the watched tree ran on it
};

/// Why ticks of a run are missing from the store (RecordingGap::cause).
inline constexpr std::string_view kGapStoreLocked = "store_locked";     ///< SQLITE_BUSY / SQLITE_LOCKED
inline constexpr std::string_view kGapStoreFull = "store_full";         ///< SQLITE_FULL (disk or quota full)
inline constexpr std::string_view kGapStoreIoError = "store_io_error";  ///< SQLITE_IOERR
inline constexpr std::string_view kGapStoreError = "store_error";       ///< any other store failure
inline constexpr std::string_view kGapSamplingStalled = "sampling_stalled";  ///< ticks never taken

/// Ticks of a run that are not in the store: the writer's buffer overflowed while the store refused
/// writes (the oldest ticks go first), or the sampling loop was stalled past whole intervals
/// (SIGSTOP, a hung call) and skipped them. Times are on the run's timeline (docs/store.md).
struct RecordingGap {
  std::int64_t t0_unix_ns = 0;  ///< the first tick not stored
  std::int64_t t1_unix_ns = 0;  ///< the last tick not stored (== t0 for one tick)
  std::int64_t ticks = 0;       ///< how many ticks
  std::string cause;            ///< one of the kGap* names
  std::string detail;           ///< the store's error message, or what stalled
  friend bool operator==(const RecordingGap&, const RecordingGap&) = default;
};

/// One run's header row. Times are nanoseconds since the Unix epoch.
struct RunInfo {
  std::int64_t id = 0;  ///< 0 until stored
  std::string name;
  std::string kind = "run";          ///< "run" (a command) or "record" (the whole machine)
  std::vector<std::string> command;  ///< argv; empty for `record`
  std::string cwd;
  std::string user;
  std::string host;
  std::int64_t start_unix_ns = 0;
  std::optional<std::int64_t> end_unix_ns;  ///< empty while recording (or if the recorder died)
  /// "running", "exited", "signaled", "oom_killed", "stopped" (record ended), "failed_to_start";
  /// reads report "lost" for a run whose recorder on this host is gone without finishing it.
  std::string status = "running";
  std::optional<int> exit_code;    ///< as trainmon exits: the code, or 128 + signal
  std::optional<int> exit_signal;  ///< the signal that killed the command, if any
  std::int64_t recorder_pid = 0;
  std::int64_t interval_ms = 1000;
  std::vector<std::pair<std::string, std::string>> labels;  ///< sorted by key
  /// The diagnosis thresholds the run was given where they differ from the defaults, as (name,
  /// value) sorted by name (schema 4; empty in older stores and for runs given none). A name this
  /// trainmon does not know (a newer one's) is kept as read.
  std::vector<std::pair<std::string, double>> thresholds;
  std::string summary_json;        ///< written when the run finishes; empty before
  std::int64_t finding_count = 0;  ///< stored findings (a running run's: every live one, open or closed)
  /// Of those, the ones not closed: a running run's live findings still open (a live finding that
  /// closed is stored with "open": false, Store::insert_findings); every one of a finished run.
  std::int64_t open_finding_count = 0;
  std::vector<RunGpu> gpus;  ///< by index
  /// Time of the newest stored sample row (Unix epoch, ms), read only for a run without end_unix_ns
  /// (still recording, or lost): how far its recording got. Empty when it has no samples yet, and
  /// for finished runs.
  std::optional<std::int64_t> last_sample_unix_ms;
  /// The recorder's boot (/proc/sys/kernel/random/boot_id) and its CLOCK_MONOTONIC at start_unix_ns
  /// (schema 3): a reader on the same host and boot measures a running run without the wall clock.
  /// Empty / nullopt in older stores.
  std::string boot_id;
  std::optional<std::int64_t> start_monotonic_ns;
  /// What the recording could not keep, oldest first (schema 3; empty before).
  std::vector<RecordingGap> gaps;
};

/// How a run ended (for Store::finish_run).
struct RunEnd {
  std::int64_t end_unix_ns = 0;
  std::string status;
  std::optional<int> exit_code;
  std::optional<int> exit_signal;
  std::string summary_json;
};

/// One stored series: which thing it describes.
struct SeriesInfo {
  std::int64_t id = 0;
  std::int64_t run_id = 0;
  SeriesKind kind = SeriesKind::gpu;
  std::optional<unsigned> gpu_index;   ///< gpu, gpu_util_hr, gpu_process
  std::optional<std::uint32_t> pid;    ///< process, gpu_process
  std::uint64_t start_time_ticks = 0;  ///< process: /proc start time (tells reused pids apart)
  std::uint32_t ppid = 0;
  std::string comm;
  std::string cmdline;
  std::string user;
  bool in_job = false;  ///< a process of the watched command's tree
  /// train_rank: diagnose::TrainRank::key (global rank, else -1 - pid), stored in the pid column.
  std::int64_t rank_key = 0;
  /// process, gpu_process (schema 5): the Slurm job, pod, container and rank the process worked for
  /// (core/attribution.h), as the host reader gave it when the series was created or first knew it.
  /// Empty: not known, or a store written before schema 5.
  ProcessAttribution attribution;
};

/// An NVML event as stored.
struct StoredGpuEvent {
  std::int64_t time_unix_ns = 0;
  unsigned gpu_index = 0;
  std::uint64_t event_type = 0;
  std::uint64_t xid = 0;
};

/// Every thread's Python stack of one training process, as it wrote it when trainmon asked
/// (faulthandler's text: "Thread 0x... (most recent call first):" blocks of `File "...", line N in f`).
struct TrainStack {
  std::int64_t time_unix_ns = 0;  ///< when trainmon asked
  std::int64_t rank_key = 0;      ///< diagnose::TrainRank::key of the process
  std::uint32_t pid = 0;
  std::string finding;  ///< code of the finding that asked ("D23"), empty when asked otherwise
  std::string text;     ///< what the process wrote (at most 1 MiB kept)
  friend bool operator==(const TrainStack&, const TrainStack&) = default;
};

/// An event sent by the training process (epoch, batch, torch memory, step timing windows).
struct TrainEvent {
  std::int64_t time_unix_ns = 0;
  std::string kind;
  std::string json;
};

}  // namespace trainmon::store
