// SPDX-License-Identifier: Apache-2.0
// The snapshot file: the latest machine picture, as a small JSON document that `trainmon run` and
// `trainmon agent` rewrite atomically (write + rename) every tick, and that the Python package reads
// when it prints its resource line (so Python never spawns nvidia-smi). Format in docs/python.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "trainmon/core/error.h"
#include "trainmon/core/snapshot.h"

namespace trainmon::ipc {

/// Training progress to include in the snapshot (the latest epoch the training process reported).
struct TrainProgress {
  std::int64_t epoch = -1;   ///< 0-based, -1 when unknown
  std::int64_t epochs = -1;  ///< planned epochs, -1 when unknown
};

/// The snapshot document (version 1) for `snap`. `source` is "run" or "agent"; `interval_ms` is how
/// often the writer refreshes it (readers treat a file older than 3 intervals + 2 s as stale).
/// GPU fields that are not available are left out (a reader shows them as N/A).
std::string snapshot_json(const Snapshot& snap, std::string_view source, std::int64_t interval_ms,
                          const std::optional<TrainProgress>& train = std::nullopt);

/// Write `content` to `path` atomically, mode 0600: files::write_file_atomic (a temporary file under
/// a fresh random name, O_EXCL | O_NOFOLLOW, then rename(2)). A reader sees the old or the new
/// document, never half of one. Errors (domain os): the temporary file cannot be written or renamed
/// (it is removed).
Expected<void> write_file_atomic(const std::string& path, std::string_view content);

/// Where a stand-alone agent keeps its snapshot for this user: $XDG_RUNTIME_DIR/trainmon/agent.json,
/// else /tmp/trainmon-UID/agent.json. The Python package computes the same path.
std::string default_agent_snapshot_path();

}  // namespace trainmon::ipc
