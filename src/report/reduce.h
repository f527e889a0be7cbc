// SPDX-License-Identifier: Apache-2.0
// Reducing a series to screen resolution: the run's time axis cut into buckets, and each series
// summarised per bucket by its minimum, mean and maximum (the min / max envelope keeps a one-sample
// spike visible however long the run). Pure functions, no I/O.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace trainmon::report {

/// Buckets (edges[i], edges[i + 1]] (right-closed), with x[i] the time each is drawn at.
/// edges.size() == x.size() + 1. Times in seconds since the run started.
struct Grid {
  std::vector<double> edges;
  std::vector<double> x;
  bool reduced = false;  ///< false: one bucket per tick (x == the tick times)
  [[nodiscard]] std::size_t size() const noexcept { return x.size(); }
};

/// The grid for ticks `t` (ascending): one bucket per tick when t.size() <= max_points (or
/// max_points <= 0), each tick's bucket reaching back to the previous tick (the first one by the
/// median tick interval) so that samples taken between two ticks land in the later one; else
/// max_points equal-width buckets from t.front() to t.back(), drawn at their middle. Empty t: empty.
Grid make_grid(std::span<const double> t, int max_points);

/// One series on a grid: NaN where a bucket holds no finite sample (a gap in the chart).
struct Envelope {
  std::vector<float> min, mean, max;
  std::size_t samples = 0;  ///< finite samples that fell into some bucket
  /// Whether some bucket has min != max (false: the envelope adds nothing to the mean).
  [[nodiscard]] bool spread() const noexcept;
};

/// Buckets samples (t[i], v[i]) (t ascending, same length) into `grid`. NaN samples are ignored;
/// samples outside the grid's edges are dropped. O(t.size() + grid.size()).
Envelope reduce_to_grid(const Grid& grid, std::span<const double> t, std::span<const float> v);

}  // namespace trainmon::report
