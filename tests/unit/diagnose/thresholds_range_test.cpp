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
  EXPECT_EQ(r.error(), "window_s=0 is out of range (a duration in seconds, at least 0.1)");
  EXPECT_FALSE(set_threshold(th, "starved_for_s=-5").has_value());
  r = set_threshold(th, "cpu_low_pct=101");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(), "cpu_low_pct=101 is out of range (a percentage, 0 to 100)");
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
  EXPECT_TRUE(set_threshold(th, "window_s=0.1").has_value());
  EXPECT_TRUE(set_threshold(th, "swing_min_cycles=1").has_value());
  EXPECT_TRUE(set_threshold(th, "frag_reserved_ratio=1").has_value());
}

TEST(DiagThresholdRange, HostileButParsableValuesAreRefused) {
  Thresholds th;
  // Shorter than the shortest sampling interval: a window without a sample.
  auto r = set_threshold(th, "window_s=0.001");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(), "window_s=0.001 is out of range (a duration in seconds, at least 0.1)");
  EXPECT_FALSE(set_threshold(th, "hang_floor_s=0.09").has_value());
  // strtod reads hex, inf and nan: a threshold is a plain decimal number.
  r = set_threshold(th, "near_full_pct=0x10");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(), "near_full_pct='0x10' is not a decimal number");
  for (const char* bad : {"window_s=0x1p4", "window_s=infinity", "window_s=nan", "window_s=+5", "window_s=5s",
                          "window_s=", "window_s=1e999", "window_s=1,5"})
    EXPECT_FALSE(set_threshold(th, bad).has_value()) << bad;
  // No word doubled when a caller prefixes "--threshold ".
  r = set_threshold(th, "no_such=1");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(), "'no_such' names no threshold (docs/diagnosis.md lists them)");
  r = set_threshold(th, "near_full_pct");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(), "'near_full_pct' is not name=value");
  EXPECT_EQ(th, Thresholds{});
  EXPECT_TRUE(set_threshold(th, "window_s=1e2").has_value());
  EXPECT_EQ(th.window_s, 100);
  EXPECT_TRUE(set_threshold(th, "window_s= 30 ").has_value());
  EXPECT_EQ(th.window_s, 30);
}

TEST(DiagThresholdRange, RelationsBetweenThresholdsAreChecked) {
  using trainmon::diagnose::check_threshold_relations;
  EXPECT_TRUE(check_threshold_relations(Thresholds{}).has_value());
  Thresholds th;
  th.idle_util_pct = 30;  // above busy_util_pct 20
  auto r = check_threshold_relations(th);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(),
            "idle_util_pct=30 must be below busy_util_pct=20 (a GPU cannot be idle and busy at once)");
  th.idle_util_pct = 20;  // equal: still both at once
  EXPECT_FALSE(check_threshold_relations(th).has_value());
  th.idle_util_pct = 19.5;
  EXPECT_TRUE(check_threshold_relations(th).has_value());
  th = {};
  th.swing_low_pct = th.swing_high_pct;
  EXPECT_FALSE(check_threshold_relations(th).has_value());
  th = {};
  th.healthy_util_low_pct = 96;
  EXPECT_FALSE(check_threshold_relations(th).has_value());
  th = {};
  th.low_util_pct = th.healthy_util_low_pct;  // equal is allowed
  EXPECT_TRUE(check_threshold_relations(th).has_value());
  th.low_util_pct += 1;
  EXPECT_FALSE(check_threshold_relations(th).has_value());
}

TEST(DiagThresholdRange, TomlIsCheckedAlike) {
  auto t = thresholds_from_toml("[diagnose]\nwindow_s = 0\n");
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error(), "[diagnose]: window_s=0 is out of range (a duration in seconds, at least 0.1)");
  EXPECT_FALSE(thresholds_from_toml("[diagnose]\nnear_full_pct = 120\n").has_value());
  EXPECT_FALSE(thresholds_from_toml("[diagnose]\nswing_min_cycles = 0.5\n").has_value());
  EXPECT_TRUE(thresholds_from_toml("[diagnose]\nnear_full_pct = 90\n").has_value());
  EXPECT_FALSE(thresholds_from_toml("[diagnose]\nwindow_s = 0.001\n").has_value());
}

}  // namespace
