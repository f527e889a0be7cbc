// SPDX-License-Identifier: Apache-2.0
#include "trainmon/ipc/snapshot_file.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "trainmon/core/private_files.h"
#include "trainmon/core/text_escape.h"

namespace trainmon::ipc {

std::string snapshot_json(const Snapshot& snap, std::string_view source, std::int64_t interval_ms,
                          const std::optional<TrainProgress>& train) {
  using json = nlohmann::json;
  json j;
  j["v"] = 1;
  j["source"] = std::string(source);
  j["pid"] = static_cast<std::int64_t>(::getpid());
  j["time_unix_ns"] = snap.time_unix_ns;
  j["interval_ms"] = interval_ms;
  json driver;
  driver["loaded"] = snap.driver.loaded;
  if (!snap.driver.loaded) driver["error"] = snap.driver.error;
  if (snap.driver.driver_version) driver["version"] = *snap.driver.driver_version;
  j["driver"] = std::move(driver);

  json gpus = json::array();
  for (const auto& g : snap.gpus) {
    json o;
    o["index"] = g.index;
    if (g.info && g.info->name) o["name"] = *g.info->name;
    if (g.responsive.status != ReadStatus::ok && g.responsive.status != ReadStatus::not_collected) {
      o["state"] = std::string(read_status_name(g.responsive.status));
    }
    if (g.utilization_gpu_pct) o["util_pct"] = *g.utilization_gpu_pct;
    if (g.utilization_memory_pct) o["mem_util_pct"] = *g.utilization_memory_pct;
    if (g.memory_used_bytes) o["mem_used_bytes"] = *g.memory_used_bytes;
    if (g.memory_total_bytes) o["mem_total_bytes"] = *g.memory_total_bytes;
    if (g.temperature_gpu_c) o["temp_c"] = *g.temperature_gpu_c;
    if (g.power_draw_mw) o["power_w"] = static_cast<double>(*g.power_draw_mw) / 1000.0;
    gpus.push_back(std::move(o));
  }
  j["gpus"] = std::move(gpus);

  json host;
  if (snap.host.interval_s > 0) host["cpu_pct"] = snap.host.cpu_total.busy_pct;
  if (snap.host.memory.total_bytes) host["mem_total_bytes"] = *snap.host.memory.total_bytes;
  if (snap.host.memory.available_bytes) host["mem_available_bytes"] = *snap.host.memory.available_bytes;
  j["host"] = std::move(host);
  if (train && train->epoch >= 0) {
    json t;
    t["epoch"] = train->epoch;
    if (train->epochs >= 0) t["epochs"] = train->epochs;
    j["train"] = std::move(t);
  }
  return text::json_dump(j);
}

Expected<void> write_file_atomic(const std::string& path, std::string_view content) {
  return files::write_file_atomic(path, content, 0600);
}

std::string default_agent_snapshot_path() {
  const char* x = std::getenv("XDG_RUNTIME_DIR");
  if (x && *x && ::access(x, W_OK | X_OK) == 0) return fmt::format("{}/trainmon/agent.json", x);
  return fmt::format("/tmp/trainmon-{}/agent.json", ::geteuid());
}

}  // namespace trainmon::ipc
