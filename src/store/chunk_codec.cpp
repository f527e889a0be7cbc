// SPDX-License-Identifier: Apache-2.0
#include "trainmon/store/chunk_codec.h"

#include <algorithm>

namespace trainmon::store {
namespace {

// Layout (all integers are LEB128 varints):
//   version(=1) rows columns
//   column 0 is the time, columns 1..N the values; each column: mode byte (1 delta, 2 delta of
//   delta) followed by tokens until `rows` values are produced. A token is varint(x << 2 | tag):
//     tag 0: one value whose (zig-zag) difference is x
//     tag 1: x repetitions of a zero difference
//     tag 2: x NULLs (the running state is not touched)
//     tag 3 (x = 0): one value whose zig-zag difference follows as its own varint (|difference| >= 2^61)
//   The first value of a column is stored as its difference from 0, and the delta before it is 0.
constexpr std::uint8_t kVersion = 1;

std::uint64_t zigzag(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
std::int64_t unzigzag(std::uint64_t v) {
  return static_cast<std::int64_t>((v >> 1) ^ (~(v & 1) + 1));
}

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

struct Reader {
  std::string_view in;
  std::size_t pos = 0;
  bool ok = true;
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos >= in.size()) {
        ok = false;
        return 0;
      }
      auto b = static_cast<std::uint8_t>(in[pos++]);
      v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    ok = false;
    return 0;
  }
};

// Wrapping arithmetic: differences of arbitrary int64 values must round-trip.
std::int64_t wsub(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}
std::int64_t wadd(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}

template <class Get>
std::string encode_column(std::size_t rows, Get get, int order) {
  std::string out;
  out.push_back(static_cast<char>(order));
  std::int64_t prev = 0, prev_delta = 0;
  std::uint64_t zero_run = 0, null_run = 0;
  bool first = true;
  auto flush = [&] {
    if (zero_run) put_varint(out, zero_run << 2 | 1), zero_run = 0;
    if (null_run) put_varint(out, null_run << 2 | 2), null_run = 0;
  };
  for (std::size_t i = 0; i < rows; ++i) {
    std::int64_t v = get(i);
    if (v == kNull) {
      if (zero_run) flush();
      ++null_run;
      continue;
    }
    std::int64_t delta = wsub(v, prev);
    std::int64_t diff = order == 1 ? delta : wsub(delta, prev_delta);
    prev = v;
    prev_delta = first ? 0 : delta;
    first = false;
    if (diff == 0) {
      if (null_run) flush();
      ++zero_run;
      continue;
    }
    flush();
    std::uint64_t zz = zigzag(diff);
    if (zz >> 62) {
      put_varint(out, 3);
      put_varint(out, zz);
    } else {
      put_varint(out, zz << 2);
    }
  }
  flush();
  return out;
}

bool decode_column(Reader& r, std::size_t rows, std::vector<std::int64_t>& out, std::size_t stride,
                   std::size_t offset) {
  if (r.pos >= r.in.size()) return false;
  int order = static_cast<std::uint8_t>(r.in[r.pos++]);
  if (order != 1 && order != 2) return false;
  std::int64_t prev = 0, prev_delta = 0;
  std::size_t i = 0;
  bool first = true;
  auto emit_value = [&](std::int64_t diff) {
    std::int64_t delta = order == 1 ? diff : wadd(prev_delta, diff);
    prev = wadd(prev, delta);
    prev_delta = first ? 0 : delta;
    first = false;
    out[i++ * stride + offset] = prev;
  };
  while (i < rows) {
    std::uint64_t token = r.varint();
    if (!r.ok) return false;
    std::uint64_t x = token >> 2;
    switch (token & 3) {
      case 0: emit_value(unzigzag(x)); break;
      case 1:
        if (x > rows - i) return false;
        for (std::uint64_t k = 0; k < x; ++k) emit_value(0);
        break;
      case 2:
        if (x > rows - i) return false;
        for (std::uint64_t k = 0; k < x; ++k) out[i++ * stride + offset] = kNull;
        break;
      case 3: {
        if (x != 0) return false;
        std::uint64_t zz = r.varint();
        if (!r.ok) return false;
        emit_value(unzigzag(zz));
        break;
      }
      default: return false;
    }
  }
  return true;
}

template <class Get>
std::string encode_best(std::size_t rows, Get get) {
  std::string a = encode_column(rows, get, 1);
  std::string b = encode_column(rows, get, 2);
  return b.size() < a.size() ? b : a;
}

Error corrupt(const char* what) {
  return Error{ErrorDomain::store, 0, "CHUNK_CORRUPT",
               std::string("stored sample chunk is damaged: ") + what};
}

}  // namespace

void Chunk::append(std::int64_t t, const std::vector<std::int64_t>& row) {
  t_ms.push_back(t);
  for (std::size_t c = 0; c < columns; ++c) values.push_back(c < row.size() ? row[c] : kNull);
}

std::string encode_chunk(const Chunk& chunk) {
  std::string out;
  out.push_back(static_cast<char>(kVersion));
  const std::size_t rows = chunk.rows();
  put_varint(out, rows);
  put_varint(out, chunk.columns);
  out += encode_best(rows, [&](std::size_t i) { return chunk.t_ms[i]; });
  for (std::size_t c = 0; c < chunk.columns; ++c) {
    out += encode_best(rows, [&](std::size_t i) { return chunk.at(i, c); });
  }
  return out;
}

namespace {
std::size_t varint_size(std::uint64_t v) {
  std::size_t n = 1;
  while (v >= 0x80) v >>= 7, ++n;
  return n;
}
}  // namespace

// The body of encode_column's loop, one value at a time; `out` holds the order byte first.
void ChunkEncoder::Stream::push(std::int64_t v, int order) {
  auto flush = [&] {
    if (zero_run) put_varint(out, zero_run << 2 | 1), zero_run = 0;
    if (null_run) put_varint(out, null_run << 2 | 2), null_run = 0;
  };
  if (v == kNull) {
    if (zero_run) flush();
    ++null_run;
    return;
  }
  const std::int64_t delta = wsub(v, prev);
  const std::int64_t diff = order == 1 ? delta : wsub(delta, prev_delta);
  prev = v;
  prev_delta = first ? 0 : delta;
  first = false;
  if (diff == 0) {
    if (null_run) flush();
    ++zero_run;
    return;
  }
  flush();
  const std::uint64_t zz = zigzag(diff);
  if (zz >> 62) {
    put_varint(out, 3);
    put_varint(out, zz);
  } else {
    put_varint(out, zz << 2);
  }
}

void ChunkEncoder::Stream::flush_into(std::string& out_bytes) const {
  out_bytes += out;
  if (zero_run) put_varint(out_bytes, zero_run << 2 | 1);
  if (null_run) put_varint(out_bytes, null_run << 2 | 2);
}

std::size_t ChunkEncoder::Stream::final_size() const {
  return out.size() + (zero_run ? varint_size(zero_run << 2 | 1) : 0) +
         (null_run ? varint_size(null_run << 2 | 2) : 0);
}

void ChunkEncoder::Column::push(std::int64_t v) {
  delta.push(v, 1);
  delta2.push(v, 2);
}

void ChunkEncoder::Column::write(std::string& out) const {
  // encode_best: the delta-of-delta form only when strictly shorter.
  (delta2.final_size() < delta.final_size() ? delta2 : delta).flush_into(out);
}

ChunkEncoder::ChunkEncoder(std::size_t columns) {
  clear(columns);
}

void ChunkEncoder::clear(std::size_t columns) {
  columns_ = columns;
  rows_ = 0;
  auto fresh = [] {
    Column c;
    c.delta.out.assign(1, static_cast<char>(1));
    c.delta2.out.assign(1, static_cast<char>(2));
    return c;
  };
  time_ = fresh();
  values_.assign(columns, fresh());
}

void ChunkEncoder::reset(const Chunk& chunk) {
  clear(chunk.columns);
  std::vector<std::int64_t> row(chunk.columns);
  for (std::size_t i = 0; i < chunk.rows(); ++i) {
    for (std::size_t c = 0; c < chunk.columns; ++c) row[c] = chunk.at(i, c);
    append(chunk.t_ms[i], row);
  }
}

void ChunkEncoder::append(std::int64_t t, const std::vector<std::int64_t>& row) {
  time_.push(t);
  for (std::size_t c = 0; c < columns_; ++c) values_[c].push(c < row.size() ? row[c] : kNull);
  ++rows_;
}

std::string ChunkEncoder::blob() const {
  std::size_t size = 1 + varint_size(rows_) + varint_size(columns_);
  auto column_size = [](const Column& c) { return std::min(c.delta.final_size(), c.delta2.final_size()); };
  size += column_size(time_);
  for (const auto& c : values_) size += column_size(c);
  std::string out;
  out.reserve(size);
  out.push_back(static_cast<char>(kVersion));
  put_varint(out, rows_);
  put_varint(out, columns_);
  time_.write(out);
  for (const auto& c : values_) c.write(out);
  return out;
}

Expected<Chunk> decode_chunk(std::string_view blob) {
  Reader r{blob};
  if (blob.empty() || static_cast<std::uint8_t>(blob[0]) != kVersion)
    return std::unexpected(corrupt("unknown chunk version"));
  r.pos = 1;
  std::uint64_t rows = r.varint();
  std::uint64_t columns = r.varint();
  // Every value takes at least one bit of a token: a sane bound against garbage sizes.
  if (!r.ok || rows > (1u << 24) || columns > 4096) return std::unexpected(corrupt("bad header"));
  Chunk chunk;
  chunk.columns = columns;
  chunk.t_ms.resize(rows);
  chunk.values.resize(rows * columns);
  if (!decode_column(r, rows, chunk.t_ms, 1, 0)) return std::unexpected(corrupt("bad time column"));
  for (std::size_t c = 0; c < columns; ++c) {
    if (!decode_column(r, rows, chunk.values, columns, c))
      return std::unexpected(corrupt("bad value column"));
  }
  if (r.pos != blob.size()) return std::unexpected(corrupt("trailing bytes"));
  return chunk;
}

}  // namespace trainmon::store
