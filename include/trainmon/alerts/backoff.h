// SPDX-License-Identifier: Apache-2.0
// Retry delays: initial, then doubled per consecutive failure, capped at max (no jitter: one
// trainmon per sink, so there is no thundering herd to spread).
#pragma once

namespace trainmon::alerts {

/// Delay in seconds before retry number `failures` (1 = after the first failure).
double backoff_delay_s(int failures, double initial_s, double max_s) noexcept;

/// A sliding one-hour window: allow() is true at most `per_hour` times in any 3600 s.
class RateLimiter {
 public:
  explicit RateLimiter(double per_hour) : per_hour_(per_hour) {}
  bool allow(double now_s);

 private:
  double per_hour_;
  double tokens_ = -1;  ///< token bucket: capacity per_hour, refill per_hour / 3600 per s
  double last_s_ = 0;
};

}  // namespace trainmon::alerts
