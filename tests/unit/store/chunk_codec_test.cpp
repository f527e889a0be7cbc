// SPDX-License-Identifier: Apache-2.0
#include "trainmon/store/chunk_codec.h"

#include <gtest/gtest.h>

#include <limits>

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

}  // namespace
}  // namespace trainmon::store
