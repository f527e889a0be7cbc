// SPDX-License-Identifier: Apache-2.0
// `run`'s wait between ticks (job_run_parts.h): for the job's main command, with stop signals going on
// to the whole job (runner/job_stop.h).
#include <algorithm>
#include <chrono>

#include "recorder/job_run_parts.h"
#include "trainmon/core/clock.h"

namespace trainmon::recorder::job_parts {

MonitorHooks::Wake wait_for_job(pid_t child, runner::JobStop& job_stop, std::int64_t next, bool monitoring,
                                runner::ChildExit& exited) {
  using Wake = MonitorHooks::Wake;
  for (;;) {
    const std::int64_t now = now_ns(CLOCK_MONOTONIC);
    std::int64_t left = next - now;
    if (left <= 0 && monitoring) return Wake::tick;
    std::int64_t wait = monitoring ? std::max<std::int64_t>(left, 0) : 1'000'000'000;
    if (const auto d = job_stop.deadline_ns()) wait = std::clamp<std::int64_t>(*d - now, 0, wait);
    auto ev = runner::wait_for_event(child, std::chrono::nanoseconds(wait));
    if (ev.kind == runner::Event::child_exited) {
      exited = ev.exit;
      return Wake::stop;
    }
    // A stop signal goes on to the whole job (where the terminal's did not reach); the monitoring
    // goes on while the job shuts down, until its main command ends.
    if (ev.kind == runner::Event::signal)
      job_stop.on_signal(ev.signal_number, ev.from_terminal, now_ns(CLOCK_MONOTONIC));
    job_stop.tick(now_ns(CLOCK_MONOTONIC));
    if (ev.kind == runner::Event::timeout && monitoring && now_ns(CLOCK_MONOTONIC) >= next) return Wake::tick;
  }
}

}  // namespace trainmon::recorder::job_parts
