// SPDX-License-Identifier: Apache-2.0
#include "trainmon/ipc/train_channel.h"

#include <fmt/format.h>

namespace trainmon::ipc {

Expected<std::unique_ptr<TrainChannel>> TrainChannel::open(std::string run_id, EventServerOptions options) {
  options.run_id = run_id;
  auto server = EventServer::start(options);
  if (!server) return std::unexpected(server.error());
  return std::unique_ptr<TrainChannel>(new TrainChannel(std::move(run_id), std::move(*server)));
}

TrainChannel::TrainChannel(std::string run_id, std::unique_ptr<EventServer> server)
    : run_id_(std::move(run_id)),
      server_(std::move(server)),
      snapshot_path_(server_->directory() + "/snapshot.json") {}

std::vector<std::pair<std::string, std::string>> TrainChannel::child_environment() const {
  return {
      {kEnvEventsSocket, server_->socket_path()}, {kEnvSnapshotFile, snapshot_path_}, {kEnvRunId, run_id_}};
}

Expected<void> TrainChannel::publish(const Snapshot& snap, std::int64_t interval_ms) {
  return write_file_atomic(snapshot_path_, snapshot_json(snap, "run", interval_ms, progress_));
}

void TrainChannel::note(const TrainMessage& m) {
  if (m.epoch < 0) return;
  TrainProgress p = progress_.value_or(TrainProgress{});
  p.epoch = m.epoch;
  if (m.epochs >= 0) p.epochs = m.epochs;
  progress_ = p;
}

std::vector<ReceivedEvent> TrainChannel::drain_messages() {
  auto events = server_->drain();
  for (const auto& e : events) note(e.message);
  return events;
}

std::vector<store::TrainEvent> TrainChannel::drain() {
  std::vector<store::TrainEvent> out;
  for (const auto& e : drain_messages()) out.push_back(to_store_event(e.message));
  return out;
}

std::optional<std::string> TrainChannel::epoch_text() const {
  if (!progress_) return std::nullopt;
  if (progress_->epochs > 0) return fmt::format("{}/{}", progress_->epoch + 1, progress_->epochs);
  return fmt::format("{}", progress_->epoch + 1);
}

}  // namespace trainmon::ipc
