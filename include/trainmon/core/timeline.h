// SPDX-License-Identifier: Apache-2.0
// The run's timeline and the tick schedule: what keeps durations honest when the wall clock steps
// (NTP, a VM resumed, an operator's `date -s`) and sampling stalls (SIGSTOP, a slow disk, a hung
// call).
//
// The rule (docs/store.md "Times"): a run's times are its start's wall time plus CLOCK_MONOTONIC
// elapsed since then. Every stored row, event, gap and the run's end, and every diagnosis time
// ("for N s"), are on that timeline; the wall clock is read once, at the start, as a label. A clock
// step during the run moves nothing; the stored times may then differ from the wall clock by the
// step. The training ranks' rows follow the same rule (diagnose::RunClock maps their CLOCK_MONOTONIC).
#pragma once

#include <algorithm>
#include <cstdint>

#include "trainmon/core/snapshot.h"

namespace trainmon {

/// How far before the previous tick a wall-clock reading delivered with a tick may lie and still be
/// taken as it is: the driver's buffered utilisation samples and queued events can be a few seconds
/// old. Only a reading further off than that (or after the next tick) is a clock step's doing.
inline constexpr std::int64_t kWallReadingSlackNs = 10'000'000'000;

struct Timeline {
  std::int64_t start_unix_ns = 0;       ///< wall clock at the start (the label of t = 0)
  std::int64_t start_monotonic_ns = 0;  ///< CLOCK_MONOTONIC at the same moment

  /// A CLOCK_MONOTONIC reading on the timeline (ns since the Unix epoch).
  [[nodiscard]] std::int64_t at(std::int64_t monotonic_ns) const noexcept {
    return start_unix_ns + (monotonic_ns - start_monotonic_ns);
  }
  /// The snapshot's time on the timeline (from its monotonic_ns).
  [[nodiscard]] std::int64_t of(const Snapshot& snap) const noexcept { return at(snap.monotonic_ns); }
  /// Seconds since the start for a CLOCK_MONOTONIC reading.
  [[nodiscard]] double elapsed_s(std::int64_t monotonic_ns) const noexcept {
    return static_cast<double>(monotonic_ns - start_monotonic_ns) / 1e9;
  }
  /// A wall-clock time read close to `snap` (an NVML event's, a driver sample's) placed on the
  /// timeline: shifted by the snapshot's own wall-to-timeline offset, then clamped to
  /// [floor_ns, ceil_ns] (the previous tick's time less kWallReadingSlackNs, and the next tick's),
  /// so that a clock step between that reading and the snapshot cannot move it far from its tick.
  [[nodiscard]] std::int64_t of_wall(std::int64_t wall_ns, const Snapshot& snap, std::int64_t floor_ns,
                                     std::int64_t ceil_ns) const noexcept {
    return std::clamp(wall_ns + (of(snap) - snap.time_unix_ns), floor_ns, std::max(floor_ns, ceil_ns));
  }
};

/// Which tick a loop that wants one every `interval_ns` from a fixed phase takes now.
struct NextTick {
  std::int64_t at_ns = 0;    ///< the schedule point of the tick taken now (same clock as the inputs)
  std::int64_t skipped = 0;  ///< ticks that were due before it and are skipped
};

/// The tick due at `due_ns`, about to be taken at `now_ns` (the loop woke up): when `now_ns` is a
/// whole interval or more past it (a stall: SIGSTOP, a slow disk, a hung call, a suspended VM), the
/// ticks missed meanwhile are skipped, never replayed as a burst of rows with the same stale
/// values: the tick taken now stands for the last schedule point not after `now_ns` and the loop
/// goes on at the same phase. A tick late by less than an interval is just late.
/// `interval_ns` must be > 0.
[[nodiscard]] inline NextTick catch_up(std::int64_t due_ns, std::int64_t interval_ns,
                                       std::int64_t now_ns) noexcept {
  NextTick n{due_ns, 0};
  if (now_ns - due_ns >= interval_ns) {
    n.skipped = (now_ns - due_ns) / interval_ns;
    n.at_ns += n.skipped * interval_ns;
  }
  return n;
}

}  // namespace trainmon
