// SPDX-License-Identifier: Apache-2.0
// ContinuedCounter: a cumulative counter read tick by tick that may reset to a lower value (NVML's
// volatile ECC counts and total energy start again at a driver reload or GPU reset; violation
// times and PCIe replays too; a network interface re-created). A reading lower than the one before
// is a reset, never a decrease: the rises are summed across resets, the reading after a reset
// counting as new counts from 0 — Prometheus' rule for counters (`rate()` / `increase()` treat any
// drop as a reset), applied where trainmon itself reports a counter.
#pragma once

#include <algorithm>
#include <cstdint>

namespace trainmon {

class ContinuedCounter {
 public:
  /// Feed one reading (the counter's unit); returns continued().
  double observe(double raw) noexcept {
    if (!seen_) {
      seen_ = true;
      first_ = highest_ = raw;
    } else if (raw >= last_) {
      increase_ += raw - last_;
    } else {
      ++resets_;
      increase_ += raw;  // counted again from 0
    }
    highest_ = std::max(highest_, raw);
    last_ = raw;
    return continued();
  }
  /// The counter as if it had never reset: the first reading plus every rise since. Never goes down.
  [[nodiscard]] double continued() const noexcept { return first_ + increase_; }
  /// What it gained since the first reading, across resets (0 before two readings).
  [[nodiscard]] double increase() const noexcept { return increase_; }
  /// The highest reading seen.
  [[nodiscard]] double highest() const noexcept { return highest_; }
  /// The last reading as read.
  [[nodiscard]] double last() const noexcept { return last_; }
  /// How many resets were seen.
  [[nodiscard]] std::uint64_t resets() const noexcept { return resets_; }
  /// Whether any reading was fed.
  [[nodiscard]] bool seen() const noexcept { return seen_; }

 private:
  bool seen_ = false;
  double first_ = 0;
  double last_ = 0;
  double highest_ = 0;
  double increase_ = 0;
  std::uint64_t resets_ = 0;
};

}  // namespace trainmon
