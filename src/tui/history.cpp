// SPDX-License-Identifier: Apache-2.0
#include "trainmon/tui/history.h"

#include <cmath>
#include <limits>

namespace trainmon::tui {

void History::push(Series& s, double v) const {
  if (capacity_ == 0) return;
  if (s.values.size() >= 2 * capacity_) {
    s.values.erase(s.values.begin(), s.values.begin() + static_cast<std::ptrdiff_t>(s.start));
    s.start = 0;
  }
  s.values.push_back(v);
  if (s.values.size() - s.start > capacity_) ++s.start;
}

void History::add(const Snapshot& snap) {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  for (const auto& g : snap.gpus) {
    const double u = g.utilization_gpu_pct ? static_cast<double>(*g.utilization_gpu_pct) : nan;
    double m = nan;
    if (g.memory_used_bytes && g.memory_total_bytes && *g.memory_total_bytes > 0)
      m = 100.0 * static_cast<double>(*g.memory_used_bytes) / static_cast<double>(*g.memory_total_bytes);
    push(util_[g.index], u);
    push(mem_[g.index], m);
  }
}

std::span<const double> History::view(const std::map<unsigned, Series>& m, unsigned gpu) {
  const auto it = m.find(gpu);
  if (it == m.end()) return {};
  return std::span<const double>(it->second.values).subspan(it->second.start);
}

std::span<const double> History::util(unsigned gpu) const {
  return view(util_, gpu);
}

std::span<const double> History::memory(unsigned gpu) const {
  return view(mem_, gpu);
}

}  // namespace trainmon::tui
