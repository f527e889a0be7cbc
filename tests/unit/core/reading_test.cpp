// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "trainmon/core/reading.h"

using trainmon::Reading;
using trainmon::ReadStatus;

TEST(Reading, DefaultIsNotCollected) {
  Reading<unsigned> r;
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status, ReadStatus::not_collected);
  EXPECT_EQ(r.value_or(7u), 7u);
}

TEST(Reading, OfAndFailKeepValueAndCode) {
  auto ok = Reading<unsigned>::of(42);
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 42u);
  auto bad = Reading<unsigned>::fail(ReadStatus::not_supported, 3);
  EXPECT_FALSE(bad);
  EXPECT_EQ(bad.code, 3);
  EXPECT_EQ(trainmon::read_status_name(bad.status), "not_supported");
}
