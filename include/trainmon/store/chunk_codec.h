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

/// The same packing, kept up to date as rows arrive: append() costs O(columns) and blob() O(size of
/// the blob), where encode_chunk reads every row again. The store writer rewrites each series' open
/// chunk at every tick, so re-encoding made a tick's cost grow with the chunk (issue 31's record
/// tick profile: 52 % of record's instructions). blob() is byte-identical to encode_chunk() of the
/// same rows (tests/unit/store/chunk_codec_test.cpp checks it on random chunks).
class ChunkEncoder {
 public:
  explicit ChunkEncoder(std::size_t columns = 0);
  /// Start again from `chunk`'s rows (its column count included).
  void reset(const Chunk& chunk);
  /// Start again with no rows and `columns` columns.
  void clear(std::size_t columns);
  /// Append one row; values past `columns` are ignored and missing ones are kNull (as Chunk::append).
  void append(std::int64_t t, const std::vector<std::int64_t>& row);
  std::size_t rows() const noexcept { return rows_; }
  std::size_t columns() const noexcept { return columns_; }
  /// The blob encode_chunk() would give for the rows appended so far.
  std::string blob() const;

 private:
  /// One column under one order (1 delta, 2 delta of delta): the tokens written so far and the
  /// pending run that the next value may still extend.
  struct Stream {
    std::string out;
    std::int64_t prev = 0, prev_delta = 0;
    std::uint64_t zero_run = 0, null_run = 0;
    bool first = true;
    void push(std::int64_t v, int order);
    void flush_into(std::string& out_bytes) const;
    std::size_t final_size() const;
  };
  struct Column {
    Stream delta, delta2;
    void push(std::int64_t v);
    void write(std::string& out) const;  ///< the shorter order, as encode_best picks it
  };
  std::size_t columns_ = 0;
  std::size_t rows_ = 0;
  Column time_;
  std::vector<Column> values_;
};

/// Unpack a blob made by encode_chunk. A truncated or malformed blob is an Error (domain store).
Expected<Chunk> decode_chunk(std::string_view blob);

}  // namespace trainmon::store
