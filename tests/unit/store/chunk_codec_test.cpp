// SPDX-License-Identifier: Apache-2.0
#include "trainmon/store/chunk_codec.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

namespace trainmon::store {
namespace {

TEST(StoreChunkCodec, RoundTripsValuesNullsAndExtremes) {
  Chunk c;
  c.columns = 4;
  const std::int64_t big = std::numeric_limits<std::int64_t>::max();
  c.append(1'700'000'000'000, {0, kNull, 85'899'345'920, big});
  c.append(1'700'000'001'000, {90, kNull, 85'899'345'920, -5});
  c.append(1'700'000'002'003, {0, 7, 85'899'345'920, kNull});
  c.append(1'700'000'002'999, {100, kNull, 85'899'345'920, std::numeric_limits<std::int64_t>::min() + 1});
  auto back = decode_chunk(encode_chunk(c));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->columns, 4u);
  EXPECT_EQ(back->t_ms, c.t_ms);
  EXPECT_EQ(back->values, c.values);
}

TEST(StoreChunkCodec, SteadySeriesCostAFewBytesPerChunk) {
  Chunk c;
  c.columns = 3;
  for (int i = 0; i < 60; ++i) {
    // constant 80 GiB, a counter rising by the same step, a constant percentage
    c.append(1'700'000'000'000 + i * 1000, {85'899'345'920, 1'000'000 + i * 350'000, 50});
  }
  std::string blob = encode_chunk(c);
  // 60 rows x 4 columns in well under a byte per row: each column is its first value(s) plus one
  // run token (the large first values dominate).
  EXPECT_LE(blob.size(), 40u);
  auto back = decode_chunk(blob);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->values, c.values);
}

TEST(StoreChunkCodec, RejectsTruncatedAndGarbageBlobs) {
  Chunk c;
  c.columns = 2;
  c.append(1000, {1, 2});
  c.append(2000, {3, 4});
  std::string blob = encode_chunk(c);
  EXPECT_FALSE(decode_chunk(blob.substr(0, blob.size() - 1)));
  EXPECT_FALSE(decode_chunk(""));
  EXPECT_FALSE(decode_chunk(std::string("\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11)));
  EXPECT_FALSE(decode_chunk(blob + "x"));
}

TEST(StoreChunkCodec, EmptyChunkRoundTrips) {
  Chunk c;
  c.columns = 5;
  auto back = decode_chunk(encode_chunk(c));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->rows(), 0u);
  EXPECT_EQ(back->columns, 5u);
}

// The writer's incremental encoder must give encode_chunk's bytes after every row, whatever the
// values: runs of zeros, NULLs, steady counters, extremes that need the escape token, rows shorter
// or longer than the column count.
TEST(StoreChunkCodec, IncrementalEncoderIsByteIdenticalAfterEveryRow) {
  std::mt19937_64 rng(20261206);
  const std::int64_t extremes[] = {0,
                                   1,
                                   -1,
                                   std::numeric_limits<std::int64_t>::max(),
                                   std::numeric_limits<std::int64_t>::min() + 1,
                                   1LL << 61,
                                   -(1LL << 61)};
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t columns = rng() % 7;
    Chunk c;
    c.columns = columns;
    ChunkEncoder enc(columns);
    EXPECT_EQ(enc.blob(), encode_chunk(c));
    std::int64_t t = 1'700'000'000'000 + static_cast<std::int64_t>(rng() % 1000);
    std::vector<std::int64_t> counter(columns, 0);
    for (int r = 0; r < 70; ++r) {
      t += (rng() % 4 == 0) ? static_cast<std::int64_t>(rng() % 3000) : 1000;
      std::vector<std::int64_t> row;
      const std::size_t n = columns + (rng() % 5 == 0 ? 1 : 0) - (columns && rng() % 6 == 0 ? 1 : 0);
      for (std::size_t k = 0; k < n; ++k) {
        const auto kind = rng() % 6;
        std::int64_t v;
        if (kind == 0)
          v = kNull;
        else if (kind == 1)
          v = extremes[rng() % std::size(extremes)];
        else if (kind == 2)
          v = static_cast<std::int64_t>(rng() % 101);
        else if (k < columns)
          v = counter[k] += (kind == 3 ? 0 : 350'000);
        else
          v = 7;
        row.push_back(v);
      }
      c.append(t, row);
      enc.append(t, row);
      ASSERT_EQ(enc.rows(), c.rows());
      ASSERT_EQ(enc.blob(), encode_chunk(c)) << "trial " << trial << " row " << r;
    }
    ChunkEncoder again;
    again.reset(c);
    EXPECT_EQ(again.blob(), encode_chunk(c));
    again.clear(columns);
    c.clear();
    EXPECT_EQ(again.blob(), encode_chunk(c));
  }
}

}  // namespace
}  // namespace trainmon::store
