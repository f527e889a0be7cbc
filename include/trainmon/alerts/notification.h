// SPDX-License-Identifier: Apache-2.0
// Notification: one alert event (firing, resolved, test) as it travels to the sinks and the spool.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace trainmon::alerts {

struct Notification {
  std::string id;     ///< unique: "<unix_ns>-<pid>-<seq>"; receivers can de-duplicate on it
  std::string state;  ///< "firing", "resolved", "test"
  std::string rule;
  std::string severity;   ///< "info", "warning", "critical"
  std::string target;     ///< "gpu0", "host", "pid 1234 (python)", "D13 gpu0"
  std::string metric;     ///< metric name or finding code
  double value = 0;       ///< the metric's value (finding: 1)
  std::string condition;  ///< "< 30"
  double for_s = 0;
  std::string message;  ///< rendered template
  std::string hostname;
  std::string tool;  ///< "run", "record", "serve"
  std::int64_t run_id = 0;
  std::string run_name;
  std::int64_t time_unix_ns = 0;
  std::int64_t suppressed = 0;  ///< notifications dropped by the sink's rate limit before this one

  /// One line: "[warning] FIRING gpu-bottleneck gpu0: <message>".
  [[nodiscard]] std::string summary() const;

  friend bool operator==(const Notification&, const Notification&) = default;
};

void to_json(nlohmann::json& j, const Notification& n);
void from_json(const nlohmann::json& j, Notification& n);

}  // namespace trainmon::alerts
