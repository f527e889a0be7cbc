// SPDX-License-Identifier: Apache-2.0
// Rules files: parsing, defaults, errors with line numbers; conditions; durations.
#include <gtest/gtest.h>

#include "trainmon/alerts/rules.h"

namespace trainmon::alerts {
namespace {

TEST(AlertRules, ParsesRulesSinksAndDefaults) {
  auto rs = parse_rules(R"(
[delivery]
retry_initial = "2s"
[defaults]
cooldown = "5m"
[sinks.hook]
type = "webhook"
url = "http://127.0.0.1:8080/x"
format = "slack"
[sinks.mail]
type = "email"
url = "smtp://mail.example.org:587"
from = "a@example.org"
to = "b@example.org"
[[rule]]
name = "low"
metric = "utilization.gpu"
condition = "< 30"
for = "1m"
gpus = [0, 2]
sinks = ["mail"]
[[rule]]
name = "xid79"
finding = "D13"
)",
                        "r.toml");
  ASSERT_TRUE(rs) << rs.error().message;
  EXPECT_EQ(rs->delivery.retry_initial_s, 2);
  ASSERT_EQ(rs->sinks.size(), 3u);  // hook, mail, log
  EXPECT_TRUE(rs->sinks["hook"].slack);
  EXPECT_EQ(rs->sinks["mail"].to, std::vector<std::string>{"b@example.org"});
  EXPECT_EQ(rs->sinks["mail"].starttls, "required");
  ASSERT_EQ(rs->rules.size(), 4u);  // + built-in xid and critical-finding
  const Rule& low = rs->rules[0];
  EXPECT_EQ(low.line, 15);
  EXPECT_EQ(low.condition.op, Op::lt);
  EXPECT_EQ(low.condition.threshold, 30);
  EXPECT_EQ(low.for_s, 60);
  EXPECT_EQ(low.cooldown_s, 300);
  EXPECT_EQ(low.gpus, (std::vector<unsigned>{0, 2}));
  EXPECT_EQ(low.sinks, std::vector<std::string>{"mail"});
  EXPECT_EQ(rs->rules[1].finding, "D13");
  EXPECT_EQ(rs->rules[1].sinks, (std::vector<std::string>{"hook", "mail"}));  // every defined sink
  EXPECT_EQ(rs->rules[2].name, "xid");
  EXPECT_EQ(rs->rules[3].name, "critical-finding");
  EXPECT_EQ(rs->rules[3].min_severity, diagnose::Severity::critical);
}

TEST(AlertRules, CriticalFindingsCanBeTurnedOff) {
  auto rs = parse_rules("[defaults]\ncritical_findings = false\n", "r.toml");
  ASSERT_TRUE(rs);
  EXPECT_TRUE(rs->rules.empty());
}

TEST(AlertRules, DefaultsAreTheArticleRulesToTheLog) {
  RuleSet rs = default_rule_set();
  ASSERT_GE(rs.rules.size(), 2u);
  EXPECT_EQ(rs.rules[0].metric, "utilization.gpu");
  EXPECT_EQ(rs.rules[0].for_s, 60);
  EXPECT_EQ(rs.rules[0].condition.threshold, 30);
  EXPECT_EQ(rs.rules[1].metric, "memory.used_pct");
  EXPECT_EQ(rs.rules[1].condition.threshold, 95);
  for (const auto& r : rs.rules) EXPECT_EQ(r.sinks, std::vector<std::string>{"log"});
}

struct BadCase {
  const char* text;
  const char* expect;
};

TEST(AlertRules, ErrorsNameTheLine) {
  const BadCase cases[] = {
      {"[[rule]]\nname = \"a\"\nmetric = \"utilization.gpu\"\ncondition = \"<< 3\"\n",
       "r.toml:4: condition '<< 3'"},
      {"[[rule]]\nname = \"a\"\nmetric = \"gpu.util\"\ncondition = \"< 3\"\n",
       "r.toml:3: unknown metric 'gpu.util'"},
      {"\n\n[[rule]]\nname = \"a\"\ncondition = \"< 3\"\n", "r.toml:3: rule 'a' needs exactly one of"},
      {"[[rule]]\nname = \"a\"\nmetric = \"utilization.gpu\"\ncondition = \"< 3\"\nfor = \"ten\"\n",
       "r.toml:5: 'for' must be a duration"},
      {"[[rule]]\nname = \"a\"\nmetric = \"utilization.gpu\"\ncondition = \"< 3\"\nsinks = [\"x\"]\n",
       "r.toml:5: unknown sink 'x'"},
      {"[[rule]]\nname = \"a\"\nfinding = \"D99\"\n", "r.toml:3: unknown finding 'D99'"},
      {"[[rule]]\nname = \"a\"\nfinding = \"D4\"\nmessage = \"{nope}\"\n",
       "r.toml:4: unknown template variable {nope}"},
      {"[sinks.m]\ntype = \"email\"\nurl = \"smtp://mail.example.org:25\"\nfrom = \"a@b\"\nto = "
       "\"c@d\"\nstarttls = \"off\"\n",
       "r.toml:6: starttls = \"off\" is only allowed"},
      {"[sinks.h]\ntype = \"webhook\"\n", "r.toml:1: [sinks.h] needs url"},
      {"[sinks.h]\ntype = \"pager\"\n", "r.toml:2: unknown sink type 'pager'"},
      {"x = 1\n", "r.toml:1: unknown key 'x'"},
      {"[sinks.c]\ntype = \"command\"\ncommand = \"sleep 1000\"\n",
       "r.toml:3: [sinks.c] command must be a list"},
      {"[sinks.c]\ntype = \"command\"\ncommand = [\"\"]\n", "r.toml:1: [sinks.c] needs command = ["},
      {"[[rule]]\nname = \"a\"\nmetric = \"utilization.gpu\"\ncondition = \"< 3\"\ncooldown = "
       "\"99999999d\"\n",
       "r.toml:5: 'cooldown' must be a duration"},
      {"[[rule]]\nname = \"a\"\nmetric = \"utilization.gpu\"\ncondition = \"< 3\"\nfor = 1e300\n",
       "r.toml:5: 'for' must be a duration"},
      {"[defaults]\ncooldown = \"36501d\"\n", "r.toml:2: 'cooldown' must be a duration"},
      {"# rules\n\n[[rule]]\nmetric = \"utilization.gpu\"\nname = \"\"\ncondition = \"< 3\"\n",
       "r.toml:5: the rule needs name"},
      {"rule = [\n  { name = \"a\", metric = \"utilization.gpu\", condition = \"< 3\" },\n  { name = \"\" "
       "},\n]\n",
       "r.toml:3: the rule needs name"},
      {"[[rule]]\nname = \"a\"\nmetric = \"utilization.gpu\"\ncondition = \"< 3\"\n\n[[rule]]\nmetric = "
       "\"utilization.gpu\"\ncondition = \"< 3\"\n",
       "r.toml:6: the rule needs name"},
      {"[sinks.h]\ntype = \"webhook\"\nurl = \"http://127.0.0.1:9/x\"\nrate_per_hour = nan\n",
       "r.toml:4: 'rate_per_hour' must be > 0"},
      {"[[rule]\n", "r.toml:1: "},
      {"a = \"unterminated\n", "r.toml:1: "},
  };
  for (const auto& c : cases) {
    auto rs = parse_rules(c.text, "r.toml");
    ASSERT_FALSE(rs) << c.text;
    EXPECT_EQ(rs.error().domain, ErrorDomain::usage);
    EXPECT_TRUE(rs.error().message.starts_with(c.expect)) << rs.error().message << "\n  wanted: " << c.expect;
  }
}

TEST(AlertRules, Conditions) {
  auto c = parse_condition(" <= 30.5 ");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->op, Op::le);
  EXPECT_TRUE(c->holds(30.5));
  EXPECT_FALSE(c->holds(31));
  EXPECT_TRUE(parse_condition(">95")->holds(96));
  EXPECT_FALSE(parse_condition(">95")->holds(95));
  EXPECT_TRUE(parse_condition("!= 0")->holds(1));
  EXPECT_TRUE(parse_condition("== 79")->holds(79));
  EXPECT_FALSE(parse_condition("30"));
  EXPECT_FALSE(parse_condition("< "));
  EXPECT_FALSE(parse_condition("< 3x"));
  EXPECT_FALSE(parse_condition("< nan"));
}

TEST(AlertRules, Durations) {
  EXPECT_EQ(parse_duration_s("60s"), 60);
  EXPECT_EQ(parse_duration_s("1m"), 60);
  EXPECT_EQ(parse_duration_s("1h30m"), 5400);
  EXPECT_EQ(parse_duration_s("500ms"), 0.5);
  EXPECT_EQ(parse_duration_s("90"), 90);
  EXPECT_EQ(parse_duration_s("0"), 0);
  EXPECT_FALSE(parse_duration_s(""));
  EXPECT_FALSE(parse_duration_s("5 parsecs"));
  EXPECT_FALSE(parse_duration_s("1m30"));
  EXPECT_EQ(parse_duration_s("36500d"), 36500.0 * 86400);  // the command-line limit
  EXPECT_FALSE(parse_duration_s("36501d"));
  EXPECT_FALSE(parse_duration_s("99999999d"));
  EXPECT_FALSE(parse_duration_s("1.2.3s"));
}

TEST(AlertRules, EveryMetricIsKnownOnce) {
  for (const auto& m : metric_table()) EXPECT_EQ(find_metric(m.name), &m);
  EXPECT_EQ(find_metric("nope"), nullptr);
}

}  // namespace
}  // namespace trainmon::alerts
