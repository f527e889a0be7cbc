// SPDX-License-Identifier: Apache-2.0
// TrainChannel: everything `trainmon run` needs to talk to the training process, in three calls:
//
//   auto channel = ipc::TrainChannel::open(std::to_string(run_id));   // before spawning the child
//   for (auto& [k, v] : channel->child_environment()) setenv(k, v);   // or put them in the child's env
//   each tick:  channel->publish(snapshot, interval_ms);              // snapshot file for the resource line
//               for (auto& e : channel->drain()) store.insert_train_event(run_id, e);
//
// Events arrive in the order the training process sent them (one sender) and carry its time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trainmon/core/error.h"
#include "trainmon/core/snapshot.h"
#include "trainmon/ipc/event_server.h"
#include "trainmon/ipc/snapshot_file.h"
#include "trainmon/store/run_info.h"

namespace trainmon::ipc {

/// Environment variable names the Python package reads.
inline constexpr const char* kEnvEventsSocket = "TRAINMON_EVENTS_SOCKET";
inline constexpr const char* kEnvSnapshotFile = "TRAINMON_SNAPSHOT_FILE";
inline constexpr const char* kEnvRunId = "TRAINMON_RUN_ID";

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

  /// Write the snapshot file for the training process's resource line (with the latest epoch).
  /// A write failure is returned, not fatal: the resource line then lacks GPU data.
  Expected<void> publish(const Snapshot& snap, std::int64_t interval_ms);

  /// Accepted events since the previous call, oldest first, as store rows; also updates progress().
  std::vector<store::TrainEvent> drain();
  /// The same events as parsed messages (for callers that want the fields, e.g. diagnosis).
  std::vector<ReceivedEvent> drain_messages();

  /// The latest epoch / planned epochs reported (nullopt before the first report).
  std::optional<TrainProgress> progress() const noexcept { return progress_; }
  /// "45/200" (1-based epoch / planned epochs, as recorder::format_resource_line's `epoch` wants it),
  /// "45" when the plan is unknown, nullopt before the first report.
  std::optional<std::string> epoch_text() const;
  EventServerStats stats() const { return server_->stats(); }

 private:
  TrainChannel(std::string run_id, std::unique_ptr<EventServer> server);
  void note(const TrainMessage& m);

  std::string run_id_;
  std::unique_ptr<EventServer> server_;
  std::string snapshot_path_;
  std::optional<TrainProgress> progress_;
};

}  // namespace trainmon::ipc
