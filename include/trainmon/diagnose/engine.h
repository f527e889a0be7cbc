// SPDX-License-Identifier: Apache-2.0
// DiagnosisEngine: runs every detector over a whole run (offline) or, through LiveDiagnosis, over a
// sliding window while the run goes on, with hysteresis so findings do not flap. At run end the
// live result is by construction the offline result on the same series.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainmon/diagnose/detectors.h"
#include "trainmon/diagnose/finding.h"
#include "trainmon/diagnose/series.h"
#include "trainmon/diagnose/thresholds.h"

namespace trainmon::diagnose {

/// Runs the detector table.
class DiagnosisEngine {
 public:
  /// Every detector over the whole series; findings sorted by finding_less.
  [[nodiscard]] std::vector<Finding> run_all(const RunSeries& series, const Thresholds& th) const;
};

/// Adds to every D26 throughput drop the codes of the findings that overlap it in time and can explain
/// it (data loading, clocks, power, PCIe, host memory, another GPU process, a straggler) as `related`,
/// named in its evidence; a finding about GPUs only when one of them is the drop's (the GPUs the job is
/// known to use: none for a job on the CPU). run_all does it; live and offline alike.
void link_related(std::vector<Finding>& findings);

/// Sets `cause` where one finding explains another (docs/diagnosis.md "Causes"), live and offline alike
/// (run_all does it), with `window_s` of slack around each overlap:
///  - D20 OOM kill <- the D3 leak that ended at or before it (the one naming the killed pid first);
///  - D17 host memory pressure <- a D3 leak overlapping it;
///  - D23 hang <- D17 overlapping it: the hang's advice becomes the pressure's (the stacks show where the
///    ranks waited for memory, not a line to fix);
///  - D14 late GPU answer (numbers.host_pressure = 1, not critical) <- D17 or D19 overlapping it;
///  - D25 / D4 data wait <- a D3 leak in a DataLoader worker overlapping it.
void link_causes(std::vector<Finding>& findings, double window_s);

/// Settings of the live wrapper.
/// How much further back than LiveOptions::window_s an evaluation may look before the window is cut.
inline constexpr double kWindowSlack = 1.1;

struct LiveOptions {
  double every_s = 10;  ///< re-evaluate at most this often (run-clock seconds)
  /// Detectors see the last hour (long enough for D3/D5 trends): from window_s to kWindowSlack times
  /// window_s, so that a retained series (trimmed in steps of a tenth) is evaluated without a copy.
  double window_s = 3600;
  double close_after_s = 60;  ///< an open finding closes after being absent this long (hysteresis)
  /// 0: keep the whole run (`trainmon run`: finish() diagnoses all of it). Otherwise rows and closed
  /// findings older than this many seconds are dropped, so a `record` / `serve` daemon running for
  /// weeks stays bounded; must be at least window_s. finish() then sees only what is retained.
  double retain_s = 0;
};

/// A live finding and its state.
struct LiveFinding {
  Finding finding;         ///< latest version (end_s and evidence refresh while it stays open)
  double opened_s = 0;     ///< run time the engine first reported it
  double last_seen_s = 0;  ///< last evaluation that still saw it
  bool open = true;
};

/// Live diagnosis: feed snapshots (or rows) in time order; read `active()` for what is wrong now.
/// Detectors already require their own `for` durations before reporting, which is the "opens
/// after the condition holds" half of the hysteresis; this class adds the "closes only after
/// clear for close_after_s" half. Findings are matched across evaluations by (code, gpus, pids); a D14
/// that turns from a late answer (warning) into a lost GPU (critical) closes the warning and opens anew,
/// so that the caller announces it again.
class LiveDiagnosis {
 public:
  explicit LiveDiagnosis(Thresholds th = {}, LiveOptions opt = {});

  /// Appends the snapshot to the run's series and re-evaluates when `every_s` has passed.
  /// Returns true when the set of open findings changed (something opened or closed).
  bool on_snapshot(const Snapshot& snap, const JobContext& ctx);
  /// Records a training-process event (kept for the next evaluation).
  void on_train_event(TrainEvent ev);
  /// Records one rank's step-timing row (TrainSeries, kept for the next evaluation).
  void on_train_window(const TrainRank& rank, const TrainWindow& window);
  /// Records stacks a rank wrote when asked (D23 shows them from the next evaluation on).
  void on_train_stack(TrainStackRec stack);
  /// Re-evaluates now on the window ending at the last row. Returns true when the open set changed.
  bool evaluate();
  /// Open findings, sorted by finding_less.
  [[nodiscard]] std::vector<Finding> active() const;
  /// Run time (seconds, the series' clock) of the last evaluation; -1e300 before the first. A caller
  /// showing active() needs to read it again only when this moved.
  [[nodiscard]] double last_evaluation_s() const noexcept { return last_eval_s_; }
  /// Every live finding ever opened, open or closed.
  [[nodiscard]] const std::vector<LiveFinding>& history() const noexcept { return live_; }
  /// Ends the run: stores `facts` and returns the offline result on the full series.
  std::vector<Finding> finish(const JobFacts& facts);
  /// The full series recorded so far.
  [[nodiscard]] const RunSeries& series() const noexcept { return series_; }
  /// Mutable access for callers that fill rows themselves (tests, replay).
  RunSeries& mutable_series() noexcept { return series_; }

 private:
  void trim();

  Thresholds th_;
  LiveOptions opt_;
  RunSeries series_;
  DiagnosisEngine engine_;
  std::vector<LiveFinding> live_;
  double last_eval_s_ = -1e300;
};

}  // namespace trainmon::diagnose
