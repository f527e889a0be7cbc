// SPDX-License-Identifier: Apache-2.0
#include "trainmon/ipc/train_channel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace trainmon::ipc {

store::TrainEvent to_store_event(const diagnose::TrainMessage& m, std::int64_t time_unix_ns) {
  store::TrainEvent e;
  e.time_unix_ns = time_unix_ns;
  e.kind = std::string(diagnose::event_type_name(m.type));
  e.json = diagnose::to_json(m, /*with_steps=*/false);
  return e;
}

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

void TrainChannel::note(const diagnose::TrainMessage& m) {
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
  for (const auto& e : drain_messages()) {
    const double t = clock_.of(e.message);
    out.push_back(
        to_store_event(e.message, static_cast<std::int64_t>(std::llround((clock_.start_unix_s + t) * 1e9))));
  }
  return out;
}

std::optional<double> TrainChannel::rank_prints_lines() const noexcept {
  std::optional<double> out;
  for (const auto& r : ranks_)
    if (r.lines_s >= 0 && (!out || r.lines_s < *out)) out = r.lines_s;
  return out;
}

TrainTick TrainChannel::collect(std::span<const diagnose::NvmlGpuRef> gpus) {
  TrainTick tick;
  std::vector<std::int64_t> changed;
  auto key_for = [&](diagnose::TrainRank& id) {
    // A process that told its rank once keeps it (a later message without one is the same rank).
    auto it =
        std::find_if(pid_key_.begin(), pid_key_.end(), [&](const auto& p) { return p.first == id.pid; });
    if (id.rank >= 0) {
      if (it == pid_key_.end()) {
        pid_key_.emplace_back(id.pid, id.key);
      } else {
        it->second = id.key;
      }
    } else if (it != pid_key_.end()) {
      id.key = it->second;
    }
  };
  auto upsert = [&](const diagnose::TrainRank& id) {
    auto it = std::find_if(ranks_.begin(), ranks_.end(), [&](const auto& r) { return r.key == id.key; });
    if (it == ranks_.end()) {
      it = std::find_if(ranks_.begin(), ranks_.end(),
                        [&](const auto& r) { return diagnose::train_key_less(id.key, r.key); });
      it = ranks_.insert(it, id);
      changed.push_back(id.key);
      return;
    }
    const auto before = *it;
    diagnose::update_identity(*it, id);
    if (!(*it == before)) changed.push_back(id.key);
  };
  // key, every window the rank sent this tick (merged once below: a re-sketched sketch drifts)
  std::vector<std::pair<std::int64_t, std::vector<diagnose::TrainWindow>>> rows;
  for (auto& e : drain_messages()) {
    const auto& m = e.message;
    const double t = clock_.of(m);
    const bool said_who = m.type == diagnose::EventType::hello || m.steps;
    auto id = diagnose::rank_of(m, e.sender_pid);
    key_for(id);
    if (said_who) upsert(id);
    if (m.type != diagnose::EventType::heartbeat) {
      tick.events.push_back(
          to_store_event(m, static_cast<std::int64_t>(std::llround((clock_.start_unix_s + t) * 1e9))));
      tick.diagnose_events.push_back(diagnose::to_diagnose_event(m, t));
    }
    if (auto w = diagnose::window_of(m, clock_)) {
      auto it = std::find_if(rows.begin(), rows.end(), [&](const auto& r) { return r.first == id.key; });
      if (it == rows.end()) {
        rows.emplace_back(id.key, std::vector<diagnose::TrainWindow>{*w});
      } else {
        it->second.push_back(*w);
      }
    }
  }
  // Which GPU each rank uses, from the strongest evidence now; a GPU once resolved stays.
  for (auto& r : ranks_) {
    if (auto g = diagnose::resolve_rank_gpu(r, gpus); g && static_cast<int>(*g) != r.gpu) {
      r.gpu = static_cast<int>(*g);
      changed.push_back(r.key);
    }
  }
  std::sort(changed.begin(), changed.end());
  changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
  for (auto key : changed) {
    auto it = std::find_if(ranks_.begin(), ranks_.end(), [&](const auto& r) { return r.key == key; });
    if (it != ranks_.end()) tick.ranks.push_back(*it);
  }
  for (auto& [key, w] : rows) {
    auto it = std::find_if(ranks_.begin(), ranks_.end(), [&](const auto& r) { return r.key == key; });
    if (it != ranks_.end()) tick.windows.emplace_back(*it, diagnose::merge_windows(w));
  }
  return tick;
}

std::optional<std::string> TrainChannel::epoch_text() const {
  if (!progress_) return std::nullopt;
  if (progress_->epochs > 0) return fmt::format("{}/{}", progress_->epoch + 1, progress_->epochs);
  return fmt::format("{}", progress_->epoch + 1);
}

}  // namespace trainmon::ipc
