// SPDX-License-Identifier: Apache-2.0
// Delivery: one worker thread per sink. A notification is spooled first (so nothing is lost if the
// program dies), then delivered in order with retries (backoff.h) and removed on success; the log
// sink is written at once. Each sink has a rate limit: notifications beyond it are dropped and
// counted, and the next delivered one says how many were dropped. Sampling never waits on a sink.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "trainmon/alerts/notification.h"
#include "trainmon/alerts/rules.h"
#include "trainmon/alerts/sinks.h"

namespace trainmon::alerts {

class Delivery {
 public:
  /// `spool_dir` holds one directory per sink. Starts the workers; files already spooled for these
  /// sinks are delivered first.
  Delivery(const RuleSet& rules, std::string spool_dir, std::string tool);
  ~Delivery();  ///< finish() if not done
  Delivery(const Delivery&) = delete;
  Delivery& operator=(const Delivery&) = delete;

  /// Queues `n` for the sinks named (unknown names are ignored: parse_rules checked them).
  void send(const Notification& n, const std::vector<std::string>& sinks);
  /// Keeps trying for up to finish_grace_s (at least one attempt for what is pending, even with a
  /// grace of 0), then stops the workers; the rest stays spooled.
  void finish();

  /// Per sink: delivered, failed attempts, dropped by the rate limit, still spooled.
  struct Stats {
    std::int64_t delivered = 0, failures = 0, rate_limited = 0, pending = 0;
  };
  std::map<std::string, Stats> stats() const;

  struct Worker;

 private:
  std::map<std::string, std::unique_ptr<Worker>> workers_;
  bool finished_ = false;
};

}  // namespace trainmon::alerts
