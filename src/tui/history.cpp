// SPDX-License-Identifier: Apache-2.0
#include "trainmon/tui/history.h"

#include <cmath>
#include <limits>

namespace trainmon::tui {

namespace {
void push(std::deque<double>& d, double v, std::size_t cap) {
  d.push_back(v);
  while (d.size() > cap) d.pop_front();
}
}  // namespace

void History::add(const Snapshot& snap) {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  for (const auto& g : snap.gpus) {
    const double u = g.utilization_gpu_pct ? static_cast<double>(*g.utilization_gpu_pct) : nan;
    double m = nan;
    if (g.memory_used_bytes && g.memory_total_bytes && *g.memory_total_bytes > 0)
      m = 100.0 * static_cast<double>(*g.memory_used_bytes) / static_cast<double>(*g.memory_total_bytes);
    push(util_[g.index], u, capacity_);
    push(mem_[g.index], m, capacity_);
  }
}

std::vector<double> History::util(unsigned gpu) const {
  auto it = util_.find(gpu);
  return it == util_.end() ? std::vector<double>{}
                           : std::vector<double>(it->second.begin(), it->second.end());
}

std::vector<double> History::memory(unsigned gpu) const {
  auto it = mem_.find(gpu);
  return it == mem_.end() ? std::vector<double>{} : std::vector<double>(it->second.begin(), it->second.end());
}

}  // namespace trainmon::tui
