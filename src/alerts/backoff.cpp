// SPDX-License-Identifier: Apache-2.0
#include "trainmon/alerts/backoff.h"

#include <algorithm>
#include <cmath>

namespace trainmon::alerts {

double backoff_delay_s(int failures, double initial_s, double max_s) noexcept {
  if (failures <= 0) return 0;
  double d = initial_s * std::pow(2.0, std::min(failures - 1, 40));
  return std::min(d, max_s);
}

bool RateLimiter::allow(double now_s) {
  if (tokens_ < 0) {
    tokens_ = per_hour_;
    last_s_ = now_s;
  }
  tokens_ = std::min(per_hour_, tokens_ + (now_s - last_s_) * per_hour_ / 3600.0);
  last_s_ = now_s;
  if (tokens_ >= 1) {
    tokens_ -= 1;
    return true;
  }
  return false;
}

}  // namespace trainmon::alerts
