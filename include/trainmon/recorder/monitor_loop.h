// SPDX-License-Identifier: Apache-2.0
// The one monitoring loop that `trainmon run`, `trainmon record` and `trainmon serve` drive.
//
// One tick, in order (who needs each step):
//  1. watch list: the processes whose trees the sampler reads this tick
//       run: the job's tree (RecorderSession::refresh_job_pids)
//       record/serve: the trees below the previous tick's GPU processes (ParentTable, every 5 s)
//  2. sample: one Snapshot (Sampler::sample), GPU waits bounded by the tick (all)
//  3. after the sample, before the store (MonitorHooks::on_sample):
//       run: the GPUs as last seen (for job_gpus), the training events of the tick from the event
//            channel (publish the snapshot to the job, collect events, windows, ranks, the epoch),
//            the first "events are being rejected" notice
//       record/serve: the GPU processes joined to this namespace (next tick's watch list)
//  4. store: RecorderSession::tick (host row, GPUs, processes, training rows; resource line) (all)
//  5. after the store (MonitorHooks::on_stored): run: the job's cgroup limits said when they change
//  6. live diagnosis: LiveDiagnosis::on_snapshot with the hooks' JobContext
//       run: the job's root, pids and cgroup OOM kills / memory limit; record/serve: the machine
//  7. after the diagnosis (MonitorHooks::on_diagnosed): run: every new finding printed, and a hang
//       (D23) asks the job's Python processes for their stacks
//  8. live findings to the store, once per evaluation (LiveFindings):
//       run (whole_run): the diagnosis' whole history, ranked, open flags from the history
//       record/serve (merged_episodes): the diagnosis keeps one hour; episodes are merged into
//            `seen` so that a daemon's findings of weeks are all stored
//  9. the active findings, ranked (observers and the state file read them)
// 10. after the findings (MonitorHooks::on_findings): run: the live state file for top and serve
// 11. the tick observers (alerts, serve's state): on_tick (all; one that throws is left out)
// Then the wait for the next tick (MonitorHooks::wait_until):
//       run: the launched job's end (child exit), stop signals passed on to the job (JobStop,
//            --kill-after), monitoring stopped after a failure waits for the job only
//       record/serve: stop signals, --duration (stop_after_ns)
// and the ticks missed by a stall (a whole interval late) recorded as one gap (all).
// A failed tick: record/serve say "tick failed" and go on; run stops monitoring (the job runs on).
// At the end (the caller): observers' on_finish (MonitorLoop::finish_observers), the final
// diagnosis, the run's end in the store, the summary: recorder/record_loop.cpp for record/serve,
// recorder/job_run.cpp and recorder/run_verdict.cpp for run.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "trainmon/diagnose/engine.h"
#include "trainmon/diagnose/tick_observer.h"
#include "trainmon/recorder/session.h"
#include "trainmon/sampler/sampler.h"

namespace trainmon::recorder {

/// What only one command does at a step of the tick (see the list above). Every hook may throw:
/// the tick is then failed (tick_failed decides what follows).
class MonitorHooks {
 public:
  virtual ~MonitorHooks() = default;
  /// Step 1: the pids whose trees the sampler watches this tick (empty: none).
  virtual std::vector<std::uint32_t> watch_pids(std::int64_t now_mono_ns) = 0;
  /// Step 3: the training messages of this tick and the epoch text, stored with the tick.
  virtual void on_sample(const Snapshot& /*snap*/, TrainUpdate& /*train*/,
                         std::optional<std::string>& /*epoch*/) {}
  /// Step 5.
  virtual void on_stored(RecorderSession& /*session*/) {}
  /// Step 6: the context of the live diagnosis; `watched` as returned by watch_pids.
  virtual diagnose::JobContext job_context(const std::vector<std::uint32_t>& watched) = 0;
  /// Step 7.
  virtual void on_diagnosed(const std::vector<std::uint32_t>& /*watched*/) {}
  /// Step 9: whether the active findings are needed even without observers (run's state file).
  virtual bool wants_active() const { return false; }
  /// Step 10: `active` ranked, `now_s` since the start.
  virtual void on_findings(const std::vector<diagnose::Finding>& /*active*/, double /*now_s*/) {}
  /// A tick threw: say it; true goes on monitoring, false stops monitoring (the loop still waits).
  virtual bool tick_failed(const std::exception& e) = 0;
  /// An observer threw: say it (it is left out from then on).
  virtual void observer_failed(const std::exception& e) = 0;

  enum class Wake {
    tick,            ///< time for the next tick
    stop,            ///< end now (the job ended, the last tick of --duration)
    stop_after_gap,  ///< end after recording the ticks a stall skipped (a stop signal)
  };
  /// Wait until `next_mono_ns` (the next tick is due), or for something that ends the loop.
  /// `monitoring` false: no tick is due any more; wait only for the end.
  virtual Wake wait_until(std::int64_t next_mono_ns, bool monitoring) = 0;
};

/// How the live findings go into the store while the run goes on (step 8).
enum class LiveFindings {
  whole_run,        ///< run: LiveDiagnosis keeps the whole run
  merged_episodes,  ///< record/serve: it keeps one hour; the loop keeps every episode (seen())
};

struct MonitorLoopOptions {
  std::int64_t interval_ns = 1'000'000'000;
  std::int64_t start_unix_ns = 0;
  std::int64_t start_mono_ns = 0;
  LiveFindings live_findings = LiveFindings::whole_run;
};

class MonitorLoop {
 public:
  /// `live` null: no live diagnosis (record --no-diagnose); observers see no findings. `sampler` or
  /// `session` null: monitoring could not start; run() only waits for the end (run: the job runs
  /// on). Everything given must outlive the loop.
  MonitorLoop(MonitorLoopOptions options, Sampler* sampler, RecorderSession* session,
              diagnose::LiveDiagnosis* live, std::span<diagnose::TickObserver* const> observers,
              MonitorHooks& hooks);

  /// Observers' on_start.
  void start_observers(const diagnose::StartContext& ctx);
  /// Ticks until the hooks' wait_until says stop.
  void run();
  /// Observers' on_finish.
  void finish_observers();
  /// merged_episodes: every finding seen, with `more` merged (the final diagnosis), sorted.
  std::vector<diagnose::Finding> merged(const std::vector<diagnose::Finding>& more);
  /// merged_episodes: every finding seen while recording (unsorted, as remembered).
  const std::vector<diagnose::Finding>& seen() const { return seen_; }

 private:
  void tick();
  void remember(const std::vector<diagnose::Finding>& found);
  template <typename F>
  void notify(F&& f);
  double now_s() const;

  MonitorLoopOptions o_;
  Sampler* sampler_;
  RecorderSession* session_;
  diagnose::LiveDiagnosis* live_;
  std::vector<diagnose::TickObserver*> observers_;
  MonitorHooks& hooks_;
  std::vector<diagnose::Finding> active_;
  std::vector<diagnose::Finding> seen_;
  double stored_eval_s_ = -1e300;  ///< the live evaluation whose findings were last given to the store
};

}  // namespace trainmon::recorder
