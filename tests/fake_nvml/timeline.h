// SPDX-License-Identifier: Apache-2.0
// A metric timeline of the fake NVML: values at scenario seconds, stepped or linearly interpolated,
// optionally periodic and with deterministic noise. See docs/fake-nvml.md ("Timelines").
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace fake_nvml {

/// One metric's values over scenario time (seconds). Pure and immutable once parsed.
class Timeline {
 public:
  /// Parses a number (constant), an array of [t, v] pairs (stepped), or an object
  /// {"points": [[t, v], ...], "interp": "step"|"linear", "repeat_s": P, "noise": A,
  /// "noise_seed": S, "noise_period_s": Q, "min": lo, "max": hi}. Throws std::runtime_error.
  static Timeline parse(const nlohmann::json& j, std::uint64_t default_seed);
  /// A constant timeline.
  static Timeline constant(double v);

  /// The value at scenario time t (seconds); before the first point the first value holds. NaN
  /// where the scenario wrote `null` ("no value": NVML's all-ones N/A, or no per-process sample).
  [[nodiscard]] double at(double t) const;
  /// The value at t without noise (used for integration and for noise-free checks).
  [[nodiscard]] double base_at(double t) const;
  /// The integral of base_at over [0, t] (value × seconds), piecewise exact for step/linear.
  [[nodiscard]] double integral(double t) const;
  /// Whether this timeline has any points at all.
  [[nodiscard]] bool empty() const { return points_.empty(); }

 private:
  std::vector<std::pair<double, double>> points_;  // sorted by time
  bool linear_ = false;
  double repeat_s_ = 0;  // > 0: the timeline loops with this period
  double noise_ = 0;     // amplitude (± value units)
  double noise_period_s_ = 1.0;
  std::uint64_t seed_ = 0;
  double min_ = -1e300, max_ = 1e300;

  [[nodiscard]] double integral_once(double t) const;  // over [0, t] without repeat
  [[nodiscard]] double value_once(double t) const;     // base value without repeat
};

}  // namespace fake_nvml
