// SPDX-License-Identifier: Apache-2.0
#include "report/reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace trainmon::report {

Grid make_grid(std::span<const double> t, int max_points) {
  Grid g;
  if (t.empty()) return g;
  if (max_points <= 0 || t.size() <= static_cast<std::size_t>(max_points)) {
    double step = 1;
    if (t.size() > 1) {
      std::vector<double> d;
      d.reserve(t.size() - 1);
      for (std::size_t i = 1; i < t.size(); ++i) d.push_back(t[i] - t[i - 1]);
      std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
      step = d[d.size() / 2] > 0 ? d[d.size() / 2] : 1;
    }
    g.edges.reserve(t.size() + 1);
    g.edges.push_back(t.front() - step);
    g.edges.insert(g.edges.end(), t.begin(), t.end());
    g.x.assign(t.begin(), t.end());
    return g;
  }
  const auto n = static_cast<std::size_t>(max_points);
  const double t0 = t.front();
  const double width = (t.back() - t0) / static_cast<double>(n);
  g.reduced = true;
  g.edges.resize(n + 1);
  g.x.resize(n);
  // the first bucket also takes t0 itself (buckets are right-closed)
  g.edges[0] = t0 - std::max(width * 1e-9, 1e-9);
  for (std::size_t i = 1; i <= n; ++i) g.edges[i] = t0 + width * static_cast<double>(i);
  g.edges[n] = t.back();
  for (std::size_t i = 0; i < n; ++i) g.x[i] = t0 + width * (static_cast<double>(i) + 0.5);
  return g;
}

bool Envelope::spread() const noexcept {
  for (std::size_t i = 0; i < min.size(); ++i) {
    if (!std::isnan(min[i]) && min[i] != max[i]) return true;
  }
  return false;
}

Envelope reduce_to_grid(const Grid& grid, std::span<const double> t, std::span<const float> v) {
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  Envelope e;
  const std::size_t n = grid.size();
  e.min.assign(n, kNaN);
  e.mean.assign(n, kNaN);
  e.max.assign(n, kNaN);
  if (n == 0) return e;
  const std::size_t len = std::min(t.size(), v.size());
  std::size_t i = 0;
  while (i < len && !(t[i] > grid.edges[0])) ++i;  // before the first bucket
  for (std::size_t b = 0; b < n && i < len; ++b) {
    const double hi = grid.edges[b + 1];
    double sum = 0;
    std::size_t cnt = 0;
    float lo_v = std::numeric_limits<float>::infinity(), hi_v = -std::numeric_limits<float>::infinity();
    for (; i < len && t[i] <= hi; ++i) {
      const float x = v[i];
      if (std::isnan(x)) continue;
      sum += x;
      ++cnt;
      lo_v = std::min(lo_v, x);
      hi_v = std::max(hi_v, x);
    }
    if (cnt) {
      e.min[b] = lo_v;
      e.max[b] = hi_v;
      e.mean[b] = static_cast<float>(sum / static_cast<double>(cnt));
      e.samples += cnt;
    }
  }
  return e;
}

}  // namespace trainmon::report
