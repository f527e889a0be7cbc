// SPDX-License-Identifier: Apache-2.0
// AlertEngine tick by tick: `for`, cooldown under flapping, repeat, resolved, Xid events, findings,
// selectors; message templates.
#include <gtest/gtest.h>

#include <memory>

#include "trainmon/alerts/engine.h"
#include "trainmon/alerts/template.h"

namespace trainmon::alerts {
namespace {

constexpr std::int64_t kT0 = 1'700'000'000'000'000'000;

Snapshot snap(double t, std::vector<unsigned> util, double mem_pct = 50) {
  Snapshot s;
  s.time_unix_ns = kT0 + static_cast<std::int64_t>(t * 1e9);
  for (unsigned i = 0; i < util.size(); ++i) {
    GpuSample g;
    g.index = i;
    g.info = std::make_shared<GpuStaticInfo>();
    g.responsive = Reading<bool>::of(true);
    g.utilization_gpu_pct = Reading<unsigned>::of(util[i]);
    g.memory_total_bytes = Reading<std::uint64_t>::of(100ull << 30);
    g.memory_used_bytes =
        Reading<std::uint64_t>::of(static_cast<std::uint64_t>(mem_pct / 100 * (100ull << 30)));
    s.gpus.push_back(g);
  }
  return s;
}

Rule util_rule(double for_s, double cooldown_s) {
  Rule r;
  r.name = "low";
  r.metric = "utilization.gpu";
  r.condition = {Op::lt, 30};
  r.for_s = for_s;
  r.cooldown_s = cooldown_s;
  r.sinks = {"log"};
  r.message = "{target} {value}% {condition} for {for}";
  return r;
}

AlertEngine engine(std::vector<Rule> rules) {
  return AlertEngine(std::move(rules), {"record", 7, "job", "host1"});
}

TEST(AlertEngine, FiresOnlyAfterForAndResolves) {
  auto e = engine({util_rule(60, 600)});
  for (double t = 0; t < 60; t += 1) EXPECT_TRUE(e.evaluate(snap(t, {10}), {}, t).empty()) << t;
  auto n = e.evaluate(snap(60, {12}), {}, 60);
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].state, "firing");
  EXPECT_EQ(n[0].target, "gpu0");
  EXPECT_EQ(n[0].value, 12);
  EXPECT_EQ(n[0].message, "gpu0 12% < 30 for 1m");
  EXPECT_EQ(n[0].run_id, 7);
  EXPECT_EQ(n[0].hostname, "host1");
  EXPECT_EQ(n[0].time_unix_ns, kT0 + 60'000'000'000);
  EXPECT_TRUE(e.evaluate(snap(61, {12}), {}, 61).empty());  // no repeat by default
  n = e.evaluate(snap(62, {80}), {}, 62);
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].state, "resolved");
  EXPECT_EQ(n[0].message, "resolved: gpu0 80% < 30 for 1m");
}

TEST(AlertEngine, AnInterruptionRestartsTheForClock) {
  auto e = engine({util_rule(10, 0)});
  for (double t = 0; t < 9; t += 1) EXPECT_TRUE(e.evaluate(snap(t, {10}), {}, t).empty());
  EXPECT_TRUE(e.evaluate(snap(9, {50}), {}, 9).empty());  // never fired: no resolved either
  for (double t = 10; t < 20; t += 1) EXPECT_TRUE(e.evaluate(snap(t, {10}), {}, t).empty()) << t;
  EXPECT_EQ(e.evaluate(snap(20, {10}), {}, 20).size(), 1u);
}

TEST(AlertEngine, FlappingIsLimitedByTheCooldown) {
  auto e = engine({util_rule(0, 30)});
  int firing = 0, resolved = 0;
  std::vector<double> fired_at;
  for (int t = 0; t < 100; ++t) {  // 10 % / 90 % every other second for 100 s
    for (const auto& n : e.evaluate(snap(t, {t % 2 ? 90u : 10u}), {}, t)) {
      if (n.state == "firing") {
        ++firing;
        fired_at.push_back(t);
      } else {
        ++resolved;
      }
    }
  }
  EXPECT_EQ(fired_at, (std::vector<double>{0, 30, 60, 90}));
  EXPECT_EQ(resolved, firing);  // each notified firing is resolved once
}

TEST(AlertEngine, StillFiringAfterAQuietCooldownIsNotified) {
  auto e = engine({util_rule(0, 30)});
  EXPECT_EQ(e.evaluate(snap(0, {10}), {}, 0).size(), 1u);
  EXPECT_EQ(e.evaluate(snap(1, {90}), {}, 1).size(), 1u);  // resolved
  for (double t = 2; t < 30; t += 1) EXPECT_TRUE(e.evaluate(snap(t, {10}), {}, t).empty()) << t;
  auto n = e.evaluate(snap(30, {10}), {}, 30);
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].state, "firing");
}

TEST(AlertEngine, RepeatWhileFiring) {
  Rule r = util_rule(0, 0);
  r.repeat_s = 10;
  auto e = engine({r});
  int n = 0;
  for (double t = 0; t <= 35; t += 1) n += static_cast<int>(e.evaluate(snap(t, {10}), {}, t).size());
  EXPECT_EQ(n, 4);  // 0, 10, 20, 30
}

TEST(AlertEngine, ResolvedCanBeOff) {
  Rule r = util_rule(0, 0);
  r.send_resolved = false;
  auto e = engine({r});
  EXPECT_EQ(e.evaluate(snap(0, {10}), {}, 0).size(), 1u);
  EXPECT_TRUE(e.evaluate(snap(1, {90}), {}, 1).empty());
}

TEST(AlertEngine, PerGpuTargetsAndSelectors) {
  Rule r = util_rule(0, 600);
  r.gpus = {1, 2};
  auto e = engine({r});
  auto n = e.evaluate(snap(0, {10, 10, 90}), {}, 0);
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].target, "gpu1");
  Rule other = util_rule(0, 600);
  other.runs = {"other-*"};
  auto e2 = engine({other});
  EXPECT_TRUE(e2.evaluate(snap(0, {10}), {}, 0).empty());
}

TEST(AlertEngine, MemoryPercentAndUnreadableValues) {
  Rule r;
  r.name = "mem";
  r.metric = "memory.used_pct";
  r.condition = {Op::gt, 95};
  r.message = "{value}";
  auto e = engine({r});
  auto n = e.evaluate(snap(0, {90}, 97), {}, 0);
  ASSERT_EQ(n.size(), 1u);
  EXPECT_NEAR(n[0].value, 97, 0.01);
  Snapshot lost = snap(1, {90}, 97);
  lost.gpus[0].memory_used_bytes = Reading<std::uint64_t>::fail(ReadStatus::gpu_lost);
  EXPECT_TRUE(e.evaluate(lost, {}, 1).empty());  // unreadable: no resolved, state kept
  EXPECT_TRUE(e.evaluate(snap(2, {90}, 97), {}, 2).empty());
  EXPECT_EQ(e.evaluate(snap(3, {90}, 50), {}, 3).at(0).state, "resolved");
}

TEST(AlertEngine, XidEventsFireAtOnceWithoutResolved) {
  auto rules = builtin_rules({"log"});
  std::erase_if(rules, [](const Rule& r) { return r.name != "xid"; });
  auto e = engine(rules);
  Snapshot s = snap(5, {90, 90});
  s.events.push_back(GpuEvent{kT0, 1, 0x8, 79});
  s.events.push_back(GpuEvent{kT0, 1, 0x2, 0});  // an ECC event is not an Xid
  auto n = e.evaluate(s, {}, 5);
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].target, "gpu1");
  EXPECT_EQ(n[0].value, 79);
  EXPECT_EQ(n[0].message, "GPU gpu1: Xid 79 reported by the driver");
  EXPECT_TRUE(e.evaluate(snap(6, {90, 90}), {}, 6).empty());
  Snapshot again = snap(7, {90, 90});
  again.events.push_back(GpuEvent{kT0, 1, 0x8, 79});
  EXPECT_TRUE(e.evaluate(again, {}, 7).empty());  // within the 60 s cooldown
  again.time_unix_ns += 100'000'000'000;
  EXPECT_EQ(e.evaluate(again, {}, 107).size(), 1u);
}

TEST(AlertEngine, CriticalFindingsFireAndResolve) {
  auto rules = builtin_rules({"log"});
  std::erase_if(rules, [](const Rule& r) { return r.name != "critical-finding"; });
  auto e = engine(rules);
  auto f = diagnose::make_finding("D10", diagnose::Severity::critical, 3, 5);
  f.gpus = {0};
  f.evidence = "volatile uncorrected ECC 1";
  auto warn = diagnose::make_finding("D4", diagnose::Severity::warning, 3, 5);
  std::vector<diagnose::Finding> active{f, warn};
  auto n = e.evaluate(snap(5, {90}), active, 5);
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].target, "D10 gpu0");
  EXPECT_EQ(n[0].severity, "critical");
  EXPECT_NE(n[0].message.find("volatile uncorrected ECC 1"), std::string::npos) << n[0].message;
  EXPECT_TRUE(e.evaluate(snap(6, {90}), active, 6).empty());
  n = e.evaluate(snap(7, {90}), {}, 7);
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].state, "resolved");
}

TEST(AlertTemplate, RendersKnownNamesAndKeepsTheRest) {
  std::map<std::string, std::string, std::less<>> vars{{"a", "1"}, {"b", "two"}};
  EXPECT_EQ(render_template("{a}-{b} {c} {{a}} {", vars), "1-two {c} {a} {");
  Notification n;
  n.value = 96.456;
  n.for_s = 90;
  n.time_unix_ns = kT0;
  auto v = template_vars(n);
  EXPECT_EQ(v["value"], "96.5");
  EXPECT_EQ(v["for"], "90s");
  EXPECT_EQ(v["time"], "2023-11-14T22:13:20Z");
  EXPECT_TRUE(is_template_var("host"));
  EXPECT_FALSE(is_template_var("nope"));
}

}  // namespace
}  // namespace trainmon::alerts
