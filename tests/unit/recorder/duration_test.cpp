// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "trainmon/recorder/duration.h"

TEST(Duration, ParsesUnitsAndRefusesWhatCannotBeRepresented) {
  using trainmon::recorder::kMaxDurationNs;
  using trainmon::recorder::parse_duration_ns;
  EXPECT_EQ(parse_duration_ns("0.5"), 500'000'000);
  EXPECT_EQ(parse_duration_ns("500ms"), 500'000'000);
  EXPECT_EQ(parse_duration_ns("90m"), 5'400'000'000'000);
  EXPECT_EQ(parse_duration_ns("2d"), 172'800'000'000'000);
  EXPECT_EQ(parse_duration_ns("36500d"), kMaxDurationNs);
  EXPECT_EQ(parse_duration_ns("0"), 0);
  // 1e12 s overflowed int64 nanoseconds and came out negative: `record --duration 1e12` stopped at once.
  EXPECT_FALSE(parse_duration_ns("1e12").has_value());
  EXPECT_FALSE(parse_duration_ns("36501d").has_value());
  EXPECT_FALSE(parse_duration_ns("1e300h").has_value());
  EXPECT_FALSE(parse_duration_ns("-1").has_value());
  EXPECT_FALSE(parse_duration_ns("nan").has_value());
  EXPECT_FALSE(parse_duration_ns("inf").has_value());
  EXPECT_FALSE(parse_duration_ns("infs").has_value());
  EXPECT_FALSE(parse_duration_ns("").has_value());
  EXPECT_FALSE(parse_duration_ns("5 s").has_value());
  EXPECT_FALSE(parse_duration_ns("5x").has_value());
}
