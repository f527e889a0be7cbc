// SPDX-License-Identifier: Apache-2.0
// TickObserver: what `run`, `record` and `serve` hand every tick to, after sampling, recording and
// the live diagnosis: the alert engine (alerts), the HTTP server's latest state (serve). Observers
// run on the sampling thread; they must be quick (copy what they need, deliver elsewhere) and must
// not throw (an exception is caught, reported once per observer and the observer is skipped after).
// In diagnose, next to the Finding it hands on, so that the observers (alerts, serve: floor 4 and 5)
// need not include the recorder (floor 3) that drives them (docs/architecture.md).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "trainmon/core/snapshot.h"
#include "trainmon/diagnose/finding.h"

namespace trainmon::diagnose {

/// Once, before the first tick (after signals are prepared and the store opened).
struct StartContext {
  std::string_view tool;    ///< "run", "record", "serve"
  std::int64_t run_id = 0;  ///< 0: not recording (the store could not be opened)
  std::string_view run_name;
  std::string_view db_path;  ///< the store's path (may not exist when run_id is 0)
  std::int64_t start_unix_ns = 0;
};

/// Every tick.
struct TickContext {
  const Snapshot& snapshot;
  /// The live diagnosis's open findings now, sorted by diagnose::finding_less; empty when none or
  /// when the diagnosis is off. Times in them are seconds since the run's start.
  std::span<const diagnose::Finding> active_findings;
  std::int64_t run_id = 0;  ///< as in StartContext
  double elapsed_s = 0;     ///< seconds since the run's start
};

class TickObserver {
 public:
  virtual ~TickObserver() = default;
  virtual void on_start(const StartContext& /*ctx*/) {}
  virtual void on_tick(const TickContext& ctx) = 0;
  /// After the last tick, before the program exits (flush, deliver what is pending).
  virtual void on_finish() {}
};

}  // namespace trainmon::diagnose
