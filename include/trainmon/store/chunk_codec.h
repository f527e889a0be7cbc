// SPDX-License-Identifier: Apache-2.0
// Chunk codec: a run of rows (a time plus a fixed number of nullable integer columns) packed into a
// compact blob. Each column is stored on its own as deltas (or deltas of deltas, whichever is
// smaller) in zig-zag varints, with runs of repeated deltas and of NULLs collapsed to one token.
// A steady counter or a constant costs a few bytes per chunk; a changing percentage one byte a row.
// docs/store.md describes the byte layout.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "trainmon/core/error.h"

namespace trainmon::store {

/// The NULL marker inside a Chunk (a value that is N/A for that row). Never a stored value.
inline constexpr std::int64_t kNull = std::numeric_limits<std::int64_t>::min();

/// Rows of one series in memory: `t_ms[i]` is row i's time (milliseconds since the Unix epoch),
/// `values[i * columns + c]` its column c (kNull for N/A).
struct Chunk {
  std::size_t columns = 0;
  std::vector<std::int64_t> t_ms;
  std::vector<std::int64_t> values;

  std::size_t rows() const noexcept { return t_ms.size(); }
  std::int64_t at(std::size_t row, std::size_t col) const noexcept { return values[row * columns + col]; }
  /// Append one row; `row` must hold `columns` values (missing ones are filled with kNull).
  void append(std::int64_t t, const std::vector<std::int64_t>& row);
  void clear() noexcept {
    t_ms.clear();
    values.clear();
  }
};

/// Pack a chunk. Never fails; an empty chunk gives a small valid blob.
std::string encode_chunk(const Chunk& chunk);

/// Unpack a blob made by encode_chunk. A truncated or malformed blob is an Error (domain store).
Expected<Chunk> decode_chunk(std::string_view blob);

}  // namespace trainmon::store
