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

// One grammar for the command line and the alert rules file (issue 31): what either accepted before
// is accepted by both, with the same value.
TEST(Duration, OneGrammarForOptionsAndRulesFiles) {
  using trainmon::parse_duration_ns;
  EXPECT_EQ(parse_duration_ns("1h30m"), 5'400'000'000'000);  // rules files took compounds
  EXPECT_EQ(parse_duration_ns("2m500ms"), 120'500'000'000);
  EXPECT_EQ(parse_duration_ns(" 60s "), 60'000'000'000);  // and blanks around
  EXPECT_EQ(parse_duration_ns("5min"), 300'000'000'000);  // options took "min"
  EXPECT_EQ(parse_duration_ns("1e3"), 1'000'000'000'000);
  EXPECT_EQ(parse_duration_ns("2w"), 1'209'600'000'000'000);  // `top --prometheus --from -2w` took weeks
  EXPECT_EQ(parse_duration_ns(".5s"), 500'000'000);
  EXPECT_FALSE(parse_duration_ns("1m30").has_value());  // a bare number only alone
  EXPECT_FALSE(parse_duration_ns("30 1m").has_value());
  EXPECT_FALSE(parse_duration_ns("1.2.3s").has_value());
  EXPECT_FALSE(parse_duration_ns("1h-30m").has_value());
  EXPECT_FALSE(parse_duration_ns("+5s").has_value());
  EXPECT_FALSE(parse_duration_ns("36500d1s").has_value());  // the sum is bounded, not each term
  EXPECT_FALSE(parse_duration_ns("5 parsecs").has_value());
  EXPECT_FALSE(parse_duration_ns("   ").has_value());
  EXPECT_EQ(trainmon::format_duration_ms(3'723'000), "1h02m03s");
}
