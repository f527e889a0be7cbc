// SPDX-License-Identifier: Apache-2.0
// Per-GPU utilisation and memory history for the dashboard's sparklines (one value per snapshot).
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <vector>

#include "trainmon/core/snapshot.h"

namespace trainmon::tui {

class History {
 public:
  /// Keeps at most `capacity` values per series (the widest sparkline drawn).
  explicit History(std::size_t capacity = 300) : capacity_(capacity) {}
  /// Appends each GPU's utilization.gpu % and memory used % (NaN when missing or lost).
  void add(const Snapshot& snap);
  /// Oldest first; empty when the GPU was never seen.
  [[nodiscard]] std::vector<double> util(unsigned gpu) const;
  [[nodiscard]] std::vector<double> memory(unsigned gpu) const;

 private:
  std::size_t capacity_;
  std::map<unsigned, std::deque<double>> util_, mem_;
};

}  // namespace trainmon::tui
