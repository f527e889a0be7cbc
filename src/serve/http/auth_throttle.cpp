// SPDX-License-Identifier: Apache-2.0
#include "trainmon/serve/auth_throttle.h"

#include <algorithm>

namespace trainmon::serve {

std::chrono::milliseconds AuthThrottle::wait_for(std::string_view client, Clock::time_point now) {
  const auto it = table_.find(std::string(client));
  if (it == table_.end() || it->second.until <= now) return std::chrono::milliseconds{0};
  return std::chrono::ceil<std::chrono::milliseconds>(it->second.until - now);
}

void AuthThrottle::evict(Clock::time_point now) {
  std::erase_if(table_, [&](const auto& e) { return now - e.second.last > kForgetAfter; });
  while (table_.size() >= kMaxClients) {
    auto oldest = std::min_element(table_.begin(), table_.end(), [](const auto& a, const auto& b) {
      return a.second.last < b.second.last;
    });
    table_.erase(oldest);
  }
}

void AuthThrottle::failed(std::string_view client, Clock::time_point now) {
  auto it = table_.find(std::string(client));
  if (it == table_.end()) {
    if (table_.size() >= kMaxClients) evict(now);
    it = table_.emplace(std::string(client), Entry{}).first;
  } else if (now - it->second.last > kForgetAfter) {
    it->second = Entry{};
  }
  Entry& e = it->second;
  ++e.failures;
  e.last = now;
  if (e.failures > kFreeFailures) {
    const int doublings = std::min(e.failures - kFreeFailures - 1, 16);
    const auto delay = std::min<std::chrono::milliseconds>(kFirstDelay * (1 << doublings), kMaxDelay);
    e.until = now + delay;
  }
}

}  // namespace trainmon::serve
