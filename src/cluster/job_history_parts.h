// SPDX-License-Identifier: Apache-2.0
// What the parts of the job report's reading share (job_history.cpp: the queries and the span;
// job_series.cpp: the series into nodes and ranks; job_alerts.cpp: the alerts into findings): the
// host and rank metrics it asks for, label access and the UTC times of its messages.
#pragma once

#include <cmath>
#include <ctime>
#include <map>
#include <string>

namespace trainmon::cluster::job_parts {

/// A series of the report: the key it is filed under (label `trainmon_m`) and its metric name.
struct Metric {
  const char* key;
  const char* name;
};
/// Per node (no gpu label).
inline constexpr Metric kHostMetrics[] = {
    {"cpu_busy", "trainmon_host_cpu_busy_ratio"},
    {"cpu_iowait", "trainmon_host_cpu_iowait_ratio"},
    {"mem_total", "trainmon_host_memory_total_bytes"},
    {"mem_available", "trainmon_host_memory_available_bytes"},
    {"mem_cached", "trainmon_host_memory_cached_bytes"},
};
/// Per rank, with the rank's own run labels (docs/serve.md "Training").
inline constexpr Metric kRankMetrics[] = {
    {"steps", "trainmon_train_steps_total"},
    {"samples", "trainmon_train_samples_total"},
    {"step_sum", "trainmon_train_step_seconds_sum"},
    {"step_q", "trainmon_train_step_seconds"},
    {"data", "trainmon_train_data_wait_seconds_total"},
    {"last_step", "trainmon_train_last_step_timestamp_seconds"},
};

/// The value of label `k`; "" when the series has none.
inline std::string label(const std::map<std::string, std::string>& l, const char* k) {
  auto it = l.find(k);
  return it == l.end() ? std::string() : it->second;
}

/// Label `k` as a non-negative integer; -1 when absent or not digits (at most 9).
inline int int_label(const std::map<std::string, std::string>& l, const char* k) {
  const auto v = label(l, k);
  if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoi(v);
}

/// `unix_s` (seconds) as "2026-12-06T21:45:00Z", whole seconds (floor).
inline std::string utc(double unix_s) {
  const std::time_t t = static_cast<std::time_t>(std::floor(unix_s));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace trainmon::cluster::job_parts
