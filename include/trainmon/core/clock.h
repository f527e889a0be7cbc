// SPDX-License-Identifier: Apache-2.0
// The time now on one of the kernel's clocks, in nanoseconds: the one helper the monitoring loop,
// the recorder, the event server and the sampler share (CLOCK_MONOTONIC for intervals and deadlines,
// CLOCK_REALTIME for stored times: core/timeline.h joins the two).
#pragma once

#include <time.h>

#include <cstdint>

namespace trainmon {

/// Nanoseconds on `clock` (CLOCK_MONOTONIC: since boot, never steps; CLOCK_REALTIME: since the Unix
/// epoch). 0 when the clock cannot be read (an unknown clock id; never for those two).
inline std::int64_t now_ns(clockid_t clock) noexcept {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace trainmon
