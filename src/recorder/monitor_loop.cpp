// SPDX-License-Identifier: Apache-2.0
#include "trainmon/recorder/monitor_loop.h"

#include <algorithm>
#include <utility>

#include "trainmon/core/clock.h"
#include "trainmon/core/timeline.h"

namespace trainmon::recorder {

MonitorLoop::MonitorLoop(MonitorLoopOptions options, Sampler* sampler, RecorderSession* session,
                         diagnose::LiveDiagnosis* live, std::span<diagnose::TickObserver* const> observers,
                         MonitorHooks& hooks)
    : o_(std::move(options)),
      sampler_(sampler),
      session_(session),
      live_(live),
      observers_(observers.begin(), observers.end()),
      hooks_(hooks) {}

double MonitorLoop::now_s() const {
  return static_cast<double>(now_ns(CLOCK_MONOTONIC) - o_.start_mono_ns) / 1e9;
}

template <typename F>
void MonitorLoop::notify(F&& f) {
  for (auto& obs : observers_) {
    if (!obs) continue;
    try {
      f(*obs);
    } catch (const std::exception& e) {
      hooks_.observer_failed(e);
      obs = nullptr;
    }
  }
}

void MonitorLoop::start_observers(const diagnose::StartContext& ctx) {
  notify([&](diagnose::TickObserver& x) { x.on_start(ctx); });
}

void MonitorLoop::finish_observers() {
  notify([](diagnose::TickObserver& x) { x.on_finish(); });
}

void MonitorLoop::remember(const std::vector<diagnose::Finding>& found) {
  for (const auto& f : found) {
    auto it = std::find_if(seen_.begin(), seen_.end(), [&](const diagnose::Finding& g) {
      return g.code == f.code && g.gpus == f.gpus && g.pids == f.pids && f.start_s <= g.end_s + 1;
    });
    if (it == seen_.end()) {
      seen_.push_back(f);
    } else {
      const double start = std::min(it->start_s, f.start_s);
      *it = f;  // the newest evidence, over the whole episode
      it->start_s = start;
    }
  }
}

std::vector<diagnose::Finding> MonitorLoop::merged(const std::vector<diagnose::Finding>& more) {
  remember(more);
  std::stable_sort(seen_.begin(), seen_.end(), diagnose::finding_less);
  return seen_;
}

void MonitorLoop::tick() {
  // 1-2: the watch list, the sample
  const std::vector<std::uint32_t> watched = hooks_.watch_pids(now_ns(CLOCK_MONOTONIC));
  sampler_->options().watch_pids = watched;
  Snapshot snap = sampler_->sample();
  // 3-5: the command's own messages, the store
  TrainUpdate train;
  std::optional<std::string> epoch;
  hooks_.on_sample(snap, train, epoch);
  session_->tick(snap, std::move(train), std::move(epoch));
  hooks_.on_stored(*session_);
  if (live_) {
    // 6-7: the live diagnosis
    const bool evaluated = live_->on_snapshot(snap, hooks_.job_context(watched));
    hooks_.on_diagnosed(watched);
    if (o_.live_findings == LiveFindings::whole_run) {
      // 8: what was found so far goes into the store with the next tick (at most once per
      // evaluation), so that `runs`, `show`, `report` of the running run, and a run whose recorder
      // is killed, list it; the final diagnosis replaces it at the end.
      if (live_->last_evaluation_s() != stored_eval_s_ && !live_->history().empty()) {
        stored_eval_s_ = live_->last_evaluation_s();
        std::vector<diagnose::Finding> so_far;
        so_far.reserve(live_->history().size());
        for (const auto& h : live_->history()) so_far.push_back(h.finding);
        diagnose::rank_findings(so_far, now_s());
        // which are still open (an episode that closed is kept, and `runs` counts only the open)
        std::vector<bool> open;
        for (const auto& f : so_far)
          open.push_back(
              std::any_of(live_->history().begin(), live_->history().end(),
                          [&](const diagnose::LiveFinding& h) { return h.open && h.finding == f; }));
        session_->set_live_findings(std::move(so_far), std::move(open));
      }
      // 9: in the order to fix them, as diagnose and the summary list them
      if (!observers_.empty() || hooks_.wants_active()) {
        active_ = live_->active();
        diagnose::rank_findings(active_, now_s());
      }
    } else {
      if (evaluated) {
        active_ = live_->active();
      } else if (!active_.empty()) {
        active_ = live_->active();  // evidence and end times refresh while findings stay open
      }
      remember(active_);
      // 8: the findings so far go into the store with the next tick (once per evaluation).
      if (live_->last_evaluation_s() != stored_eval_s_ && !seen_.empty()) {
        stored_eval_s_ = live_->last_evaluation_s();
        auto so_far = seen_;
        std::stable_sort(so_far.begin(), so_far.end(), diagnose::finding_less);
        // open: what the live diagnosis holds now (remember() gave the episode its end and evidence)
        std::vector<bool> open;
        for (const auto& f : so_far)
          open.push_back(std::any_of(active_.begin(), active_.end(), [&](const diagnose::Finding& a) {
            return a.code == f.code && a.gpus == f.gpus && a.pids == f.pids && a.end_s == f.end_s;
          }));
        session_->set_live_findings(std::move(so_far), std::move(open));
      }
    }
  }
  // 10-11
  if (hooks_.wants_active()) hooks_.on_findings(active_, now_s());
  if (!observers_.empty()) {
    const diagnose::TickContext ctx{snap, active_, session_->run_id(), now_s()};
    notify([&](diagnose::TickObserver& x) { x.on_tick(ctx); });
  }
}

void MonitorLoop::run() {
  bool monitoring = sampler_ && session_;
  std::int64_t next = now_ns(CLOCK_MONOTONIC);  // the schedule's phase: the first tick, after the set-up
  for (;;) {
    if (monitoring) {
      try {
        tick();
      } catch (const std::exception& e) {
        monitoring = hooks_.tick_failed(e);
      }
    }
    next += o_.interval_ns;
    const MonitorHooks::Wake wake = hooks_.wait_until(next, monitoring);
    if (wake == MonitorHooks::Wake::stop) return;
    // Woken a whole interval or more late (stopped, a hung call, a suspended VM): the ticks missed
    // are skipped and recorded as a gap, not replayed as a burst of stale rows.
    if (const NextTick step = catch_up(next, o_.interval_ns, now_ns(CLOCK_MONOTONIC));
        monitoring && step.skipped > 0) {
      session_->note_skipped_ticks(next, step.at_ns - o_.interval_ns, step.skipped,
                                   "the sampling loop was stalled (stopped or a call hung)");
      next = step.at_ns;
    }
    if (wake == MonitorHooks::Wake::stop_after_gap) return;
  }
}

}  // namespace trainmon::recorder
