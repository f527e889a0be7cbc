// SPDX-License-Identifier: Apache-2.0
// Per-GPU utilisation and memory history for the dashboard's sparklines (one value per snapshot).
#pragma once

#include <cstddef>
#include <map>
#include <span>
#include <vector>

#include "trainmon/core/snapshot.h"

namespace trainmon::tui {

class History {
 public:
  /// Keeps at most `capacity` values per series (the widest sparkline drawn).
  explicit History(std::size_t capacity = 300) : capacity_(capacity) {}
  /// Appends each GPU's utilization.gpu % and memory used % (NaN when missing or lost).
  void add(const Snapshot& snap);
  /// Oldest first; empty when the GPU was never seen. Valid until the next add().
  [[nodiscard]] std::span<const double> util(unsigned gpu) const;
  [[nodiscard]] std::span<const double> memory(unsigned gpu) const;

 private:
  /// The last `capacity` values are values[start..]: appending moves them to the front only when
  /// the vector reaches twice the capacity (no copy of the whole series per snapshot).
  struct Series {
    std::vector<double> values;
    std::size_t start = 0;
  };
  void push(Series& s, double v) const;
  static std::span<const double> view(const std::map<unsigned, Series>& m, unsigned gpu);
  std::size_t capacity_;
  std::map<unsigned, Series> util_, mem_;
};

}  // namespace trainmon::tui
