// SPDX-License-Identifier: Apache-2.0
// trainmon rules' generator (prom_rules.h): numbers and durations PromQL reads back, the alerts'
// codes, slugs and advice from the local tables, and thresholds that reach the expressions.
#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <string>

#include "diagnose/advice.h"
#include "trainmon/diagnose/detectors.h"
#include "trainmon/diagnose/finding.h"
#include "trainmon/diagnose/prom_rules.h"
#include "trainmon/diagnose/thresholds.h"

namespace trainmon::diagnose {
namespace {

TEST(PromRules, DurationsAreWholeMillisecondsInRange) {
  EXPECT_EQ(prom_duration(60), "60s");
  EXPECT_EQ(prom_duration(1.5), "1500ms");
  EXPECT_EQ(prom_duration(0.0001), "1ms");
  EXPECT_EQ(prom_duration(0), "1ms");
  EXPECT_EQ(prom_duration(-3), "1ms");
  EXPECT_EQ(prom_duration(std::numeric_limits<double>::quiet_NaN()), "1ms");
  EXPECT_EQ(prom_duration(1e300), "315360000s");  // 10 years
}

TEST(PromRules, NumbersRoundTrip) {
  EXPECT_EQ(prom_number(95), "95");
  EXPECT_EQ(prom_number(0.9), "0.9");
  EXPECT_EQ(prom_number(1e-9), "1e-09");
  EXPECT_EQ(std::stod(prom_number(0.123456789012345)), 0.123456789012345);
  EXPECT_EQ(prom_number(std::numeric_limits<double>::infinity()), "0");
}

TEST(PromRules, AlertsCarryTheLocalCodesSlugsAndAdvice) {
  const auto groups = prometheus_rule_groups(Thresholds{});
  ASSERT_EQ(groups.size(), 2u);
  std::set<std::string> codes, descriptions;
  for (const auto& r : groups[1].rules) {
    if (r.alert.empty()) {  // the hang's per-rank series, evaluated in the alerts' group just before it
      EXPECT_TRUE(r.record.starts_with("trainmon:rank_")) << r.record;
      continue;
    }
    const auto* kind = find_kind(r.labels.at("code"));
    ASSERT_NE(kind, nullptr) << r.alert;
    EXPECT_EQ(r.labels.at("slug"), kind->slug);
    EXPECT_EQ(r.annotations.at("code"), kind->code);
    Severity s{};
    EXPECT_TRUE(parse_severity(r.labels.at("severity"), s));
    codes.insert(r.labels.at("code"));
    descriptions.insert(r.annotations.at("description"));
  }
  EXPECT_EQ(codes, (std::set<std::string>{"D2", "D3", "D7", "D10", "D12", "D13", "D14", "D21", "D23", "D24",
                                          "D27"}));
  for (auto a :
       {advice::kD2Imbalance, advice::kD3Leak, advice::kD7HeldUnused, advice::kD10Ecc, advice::kD12Thermal,
        advice::kD12Hardware, advice::kD14Lost, advice::kD21NearFull, advice::kD23Hang, advice::kD24Straggler,
        advice::kD24DataWait, advice::kD24Compute, advice::kD27CommBound})
    EXPECT_TRUE(descriptions.contains(std::string(a))) << a;
  for (const auto& x : xid_table()) EXPECT_TRUE(descriptions.contains(std::string(x.advice))) << x.xid;
  for (const auto& r : groups[0].rules) EXPECT_FALSE(r.record.empty());
}

TEST(PromRules, ThresholdsReachTheExpressions) {
  Thresholds th;
  ASSERT_TRUE(set_threshold(th, "near_full_pct=87.5"));
  ASSERT_TRUE(set_threshold(th, "held_unused_for_s=42"));
  const auto yaml = prometheus_rules_yaml(prometheus_rule_groups(th), th);
  EXPECT_NE(yaml.find(">= 87.5)"), std::string::npos);
  EXPECT_NE(yaml.find("for: \"42s\""), std::string::npos) << yaml.substr(0, 400);
  EXPECT_NE(yaml.find("near_full_pct=87.5"), std::string::npos);  // the header
  EXPECT_EQ(yaml.find(">= 95)"), std::string::npos);
}

}  // namespace
}  // namespace trainmon::diagnose
