// SPDX-License-Identifier: Apache-2.0
// TrainChannel: everything `trainmon run` needs to talk to the training process, in three calls:
//
//   auto channel = ipc::TrainChannel::open(std::to_string(run_id));   // before spawning the child
//   for (auto& [k, v] : channel->child_environment()) setenv(k, v);   // or put them in the child's env
//   each tick:  channel->publish(snapshot, interval_ms);              // snapshot file for the resource line
//               for (auto& e : channel->drain()) store.insert_train_event(run_id, e);
//
// Events arrive in the order each training process sent them. Step timing (v2 `steps`) is folded per
// rank and tick by collect(): one TrainWindow row per rank that reported, on the run's clock.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "trainmon/core/error.h"
#include "trainmon/core/snapshot.h"
#include "trainmon/diagnose/train_message.h"
#include "trainmon/diagnose/train_series.h"
#include "trainmon/ipc/event_server.h"
#include "trainmon/ipc/snapshot_file.h"
#include "trainmon/store/run_info.h"

namespace trainmon::ipc {

/// The store's row for a message that happened at `time_unix_ns` (the run's clock mapped to Unix
/// time: run start + run_t): that time, the type name and the canonical JSON without `steps`.
store::TrainEvent to_store_event(const diagnose::TrainMessage& message, std::int64_t time_unix_ns);

/// Environment variable names the Python package reads.
inline constexpr const char* kEnvEventsSocket = "TRAINMON_EVENTS_SOCKET";
inline constexpr const char* kEnvSnapshotFile = "TRAINMON_SNAPSHOT_FILE";
inline constexpr const char* kEnvRunId = "TRAINMON_RUN_ID";

/// What the training processes sent during one tick, ready for the store, the diagnosis and views.
struct TrainTick {
  std::vector<store::TrainEvent> events;              ///< rows to store (heartbeats are not stored)
  std::vector<diagnose::TrainEvent> diagnose_events;  ///< the same, for the live diagnosis
  /// One row per rank that sent step timing this tick (its windows merged), with its identity.
  std::vector<std::pair<diagnose::TrainRank, diagnose::TrainWindow>> windows;
  std::vector<diagnose::TrainRank> ranks;  ///< identities that are new or changed since the last tick
};

class TrainChannel {
 public:
  /// Start the event server (private directory, socket) for run `run_id`.
  /// Errors: as EventServer::start.
  static Expected<std::unique_ptr<TrainChannel>> open(std::string run_id, EventServerOptions options = {});

  /// TRAINMON_EVENTS_SOCKET, TRAINMON_SNAPSHOT_FILE and TRAINMON_RUN_ID for the child.
  std::vector<std::pair<std::string, std::string>> child_environment() const;
  /// Path of the snapshot file (in the server's private directory).
  const std::string& snapshot_path() const noexcept { return snapshot_path_; }
  const std::string& socket_path() const noexcept { return server_->socket_path(); }
  /// The run's private directory (0700) holding the socket, the snapshot file and per-run files.
  const std::string& directory() const noexcept { return server_->directory(); }

  /// Write the snapshot file for the training process's resource line (with the latest epoch).
  /// A write failure is returned, not fatal: the resource line then lacks GPU data.
  Expected<void> publish(const Snapshot& snap, std::int64_t interval_ms);

  /// Accepted events since the previous call, oldest first, as store rows; also updates progress().
  std::vector<store::TrainEvent> drain();
  /// The same events as parsed messages (for callers that want the fields, e.g. diagnosis).
  std::vector<ReceivedEvent> drain_messages();

  /// The run's clock for the senders' times (set it before the first collect(); `trainmon run`
  /// gives its start's wall and monotonic time).
  void set_clock(diagnose::RunClock clock) noexcept { clock_ = clock; }
  const diagnose::RunClock& clock() const noexcept { return clock_; }
  /// Drain and fold everything since the previous call (see TrainTick); also updates progress().
  /// `gpus`: the NVML GPUs now, to resolve which GPU each rank uses (resolve_rank_gpu); a resolved GPU
  /// is kept when later ticks cannot tell.
  TrainTick collect(std::span<const diagnose::NvmlGpuRef> gpus = {});
  /// Every rank that has spoken, ordered by key.
  const std::vector<diagnose::TrainRank>& ranks() const noexcept { return ranks_; }
  /// The smallest resource-line interval a rank announced (`lines` in hello), nullopt when none prints.
  std::optional<double> rank_prints_lines() const noexcept;

  /// The latest epoch / planned epochs reported (nullopt before the first report).
  std::optional<TrainProgress> progress() const noexcept { return progress_; }
  /// "45/200" (1-based epoch / planned epochs, as recorder::format_resource_line's `epoch` wants it),
  /// "45" when the plan is unknown, nullopt before the first report.
  std::optional<std::string> epoch_text() const;
  EventServerStats stats() const { return server_->stats(); }

 private:
  TrainChannel(std::string run_id, std::unique_ptr<EventServer> server);
  void note(const diagnose::TrainMessage& m);

  std::string run_id_;
  std::unique_ptr<EventServer> server_;
  std::string snapshot_path_;
  std::optional<TrainProgress> progress_;
  diagnose::RunClock clock_;
  std::vector<diagnose::TrainRank> ranks_;                      ///< by key
  std::vector<std::pair<std::int64_t, std::int64_t>> pid_key_;  ///< sender pid -> key once its rank is known
};

}  // namespace trainmon::ipc
