// SPDX-License-Identifier: Apache-2.0
// AlertEngine: evaluates rules against each tick (metrics from the Snapshot, findings from the live
// diagnosis, Xid events as they arrive) and returns the notifications to send. Pure logic: no I/O,
// no clock of its own (time is the caller's `now_s`), so it is tested tick by tick.
//
// Per rule and target: ok -> pending (condition holds) -> firing once it held for `for_s`; firing
// is notified unless one was notified less than `cooldown_s` ago (a flapping target then stays
// quiet); while firing, re-notified every `repeat_s` (0: never); when the condition clears a
// "resolved" notification follows a notified firing. A value that cannot be read leaves the state
// as it was (a GPU that fell off the bus is the GPU-lost finding's business).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "trainmon/alerts/notification.h"
#include "trainmon/alerts/rules.h"
#include "trainmon/core/snapshot.h"
#include "trainmon/diagnose/finding.h"

namespace trainmon::alerts {

/// One observed value of a rule's target in one tick.
struct Observation {
  std::string target;  ///< "gpu0", "host", "pid 12 (python)", "D13 gpu0"
  double value = 0;
};

/// The values `metric` has in `snap` for the selectors of `rule` (one per GPU / process / host).
std::vector<Observation> observe_metric(const Rule& rule, const Snapshot& snap);

struct EngineContext {
  std::string tool;
  std::int64_t run_id = 0;
  std::string run_name;
  std::string hostname;
};

class AlertEngine {
 public:
  AlertEngine(std::vector<Rule> rules, EngineContext ctx);

  /// One tick at `now_s` (any monotonic seconds). Returns what to send, in rule order.
  std::vector<Notification> evaluate(const Snapshot& snap, std::span<const diagnose::Finding> findings,
                                     double now_s);

  [[nodiscard]] const std::vector<Rule>& rules() const noexcept { return rules_; }

 private:
  struct TargetState {
    bool holding = false;            ///< the condition held at the last evaluation
    double since_s = 0;              ///< when it started holding
    bool firing = false;             ///< held for for_s
    bool notified = false;           ///< this firing episode was notified
    double last_notified_s = -1e18;  ///< last firing notification (cooldown, repeat)
    double value = 0;
    bool seen = false;  ///< present in this tick's observations
  };

  void step(std::size_t rule_index, const std::vector<Observation>& obs, bool event_rule, double now_s,
            std::int64_t time_unix_ns, std::vector<Notification>& out);
  Notification make(const Rule& rule, const std::string& target, double value, const std::string& state,
                    std::int64_t time_unix_ns);

  std::vector<Rule> rules_;
  EngineContext ctx_;
  std::vector<std::map<std::string, TargetState>> states_;  ///< per rule, per target
  std::uint64_t seq_ = 0;
};

}  // namespace trainmon::alerts
