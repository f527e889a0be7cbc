// SPDX-License-Identifier: Apache-2.0
// Every diagnosis threshold is checked against its meaningful range (docs/diagnosis.md).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>

#include "trainmon/diagnose/thresholds.h"

namespace {

using trainmon::diagnose::set_threshold;
using trainmon::diagnose::threshold_range;
using trainmon::diagnose::threshold_table;
using trainmon::diagnose::Thresholds;
using trainmon::diagnose::thresholds_from_toml;

TEST(DiagThresholdRange, EveryThresholdHasARangeHoldingItsDefault) {
  const Thresholds defaults;
  for (const auto& row : threshold_table()) {
    EXPECT_TRUE(threshold_range(row.name).has_value()) << row.name;
    Thresholds th;
    const auto r = set_threshold(th, fmt::format("{}={}", row.name, defaults.*(row.field)));
    EXPECT_TRUE(r.has_value()) << row.name << ": " << r.error();
    EXPECT_EQ(th, defaults) << row.name;
  }
}

TEST(DiagThresholdRange, OutOfRangeIsRefusedNamingKeyAndRange) {
  Thresholds th;
  auto r = set_threshold(th, "window_s=0");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(), "threshold 'window_s': 0 is out of range (a duration in seconds, greater than 0)");
  EXPECT_FALSE(set_threshold(th, "starved_for_s=-5").has_value());
  r = set_threshold(th, "cpu_low_pct=101");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(), "threshold 'cpu_low_pct': 101 is out of range (a percentage, 0 to 100)");
  EXPECT_FALSE(set_threshold(th, "idle_util_pct=-0.5").has_value());
  EXPECT_FALSE(set_threshold(th, "power_cap_frac=1.5").has_value());
  EXPECT_FALSE(set_threshold(th, "spike_frac_of_total=-0.1").has_value());
  EXPECT_FALSE(set_threshold(th, "leak_min_r2=2").has_value());
  EXPECT_FALSE(set_threshold(th, "frag_reserved_ratio=0.5").has_value());
  EXPECT_FALSE(set_threshold(th, "frag_min_gap_mib=-1").has_value());
  EXPECT_FALSE(set_threshold(th, "disk_read_min_bps=-1").has_value());
  EXPECT_FALSE(set_threshold(th, "swing_min_cycles=0").has_value());
  EXPECT_FALSE(set_threshold(th, "growth_min_epochs=2.5").has_value());
  EXPECT_FALSE(set_threshold(th, "window_s=inf").has_value());
  EXPECT_EQ(th, Thresholds{}) << "a refused value changes nothing";
  // The edges are allowed.
  EXPECT_TRUE(set_threshold(th, "cpu_low_pct=100").has_value());
  EXPECT_TRUE(set_threshold(th, "idle_util_pct=0").has_value());
  EXPECT_TRUE(set_threshold(th, "power_cap_frac=1").has_value());
  EXPECT_TRUE(set_threshold(th, "window_s=0.5").has_value());
  EXPECT_TRUE(set_threshold(th, "swing_min_cycles=1").has_value());
  EXPECT_TRUE(set_threshold(th, "frag_reserved_ratio=1").has_value());
}

TEST(DiagThresholdRange, TomlIsCheckedAlike) {
  auto t = thresholds_from_toml("[diagnose]\nwindow_s = 0\n");
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error(),
            "[diagnose]: threshold 'window_s': 0 is out of range (a duration in seconds, greater than 0)");
  EXPECT_FALSE(thresholds_from_toml("[diagnose]\nnear_full_pct = 120\n").has_value());
  EXPECT_FALSE(thresholds_from_toml("[diagnose]\nswing_min_cycles = 0.5\n").has_value());
  EXPECT_TRUE(thresholds_from_toml("[diagnose]\nnear_full_pct = 90\n").has_value());
}

}  // namespace
