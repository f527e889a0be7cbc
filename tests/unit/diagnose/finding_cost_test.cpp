// SPDX-License-Identifier: Apache-2.0
// What a finding costs (JSON, text) and the order findings are shown in (rank_findings); parsing
// faulthandler's stacks (stacks.h).
#include <gtest/gtest.h>

#include "trainmon/diagnose/finding.h"
#include "trainmon/diagnose/stacks.h"

namespace trainmon::diagnose {
namespace {

Finding with_cost(std::string code, Severity sev, double t0, double t1, std::optional<double> share) {
  Finding f = make_finding(code, sev, t0, t1);
  if (share) set_cost(f, *share, "measured");
  return f;
}

TEST(DiagCost, ShareGivesTheSpeedupAndSurvivesJson) {
  Finding f = with_cost("D25", Severity::warning, 10, 100, 0.41);
  ASSERT_TRUE(f.cost);
  EXPECT_NEAR(f.cost->speedup, 1 / 0.59, 1e-9);
  EXPECT_EQ(cost_text(f), "costs 41 % of throughput; up to 1.7x samples/s if fixed");
  EXPECT_NE(to_text(f).find("; costs 41 % of throughput; up to 1.7x samples/s if fixed -> "),
            std::string::npos);
  const nlohmann::json j = f;
  EXPECT_DOUBLE_EQ(j["cost"]["share"].get<double>(), 0.41);
  EXPECT_EQ(j["cost"]["basis"], "measured");
  EXPECT_EQ(j.get<Finding>(), f);
  // no cost: no key, and an old finding without one reads back without one
  Finding g = make_finding("D10", Severity::critical, 0, 1);
  const nlohmann::json k = g;
  EXPECT_FALSE(k.contains("cost"));
  EXPECT_FALSE(k.get<Finding>().cost.has_value());
  // a hang costs everything: unbounded speed-up, written as 0
  Finding h = with_cost("D23", Severity::critical, 0, 1, 1.0);
  EXPECT_EQ(h.cost->speedup, 0);
  EXPECT_EQ(cost_text(h), "costs all of the throughput (no step completes)");
  // out-of-range shares are clamped, NaN gives none
  Finding n = make_finding("D4", Severity::warning, 0, 1);
  set_cost(n, std::nan(""), "estimated");
  EXPECT_FALSE(n.cost);
  set_cost(n, -0.2, "estimated");
  EXPECT_EQ(n.cost->share, 0);
  EXPECT_EQ(n.cost->speedup, 1);
}

TEST(DiagCost, RankedCriticalFirstThenByWhatEachCostsOverTheRun) {
  std::vector<Finding> v = {
      with_cost("D11", Severity::info, 0, 1000, 0.3),             // info: last
      with_cost("D25", Severity::warning, 0, 1000, 0.2),          // 20 % over the whole run: 0.20
      with_cost("D24", Severity::warning, 0, 200, 0.5),           // 50 % for a fifth of it: 0.10
      with_cost("D3", Severity::warning, 0, 1000, std::nullopt),  // no cost: after those with one
      with_cost("D10", Severity::critical, 900, 901, std::nullopt),
      with_cost("D26", Severity::warning, 500, 1000, 0.6),  // 0.30
  };
  rank_findings(v, 1000);
  std::vector<std::string> codes;
  for (const auto& f : v) codes.push_back(f.code);
  EXPECT_EQ(codes, (std::vector<std::string>{"D10", "D26", "D25", "D24", "D3", "D11"}));
  EXPECT_NEAR(cost_weight(v[1], 1000), 0.3, 1e-12);
}

TEST(DiagStacks, ParsesFaulthandlerAndFindsTheMainThread) {
  const std::string text =
      "Thread 0x00007fba01c216c0 (most recent call first):\n"
      "  File \"/usr/lib/python3.11/threading.py\", line 324 in wait\n"
      "  File \"/tmp/fh2.py\", line 5 in inner\n"
      "  File \"/usr/lib/python3.11/threading.py\", line 975 in run\n"
      "  File \"/usr/lib/python3.11/threading.py\", line 995 in _bootstrap\n"
      "\n"
      "Current thread 0x00007fba01edc040 (most recent call first):\n"
      "  File \"/usr/lib/python3.11/threading.py\", line 324 in wait\n"
      "  File \"/usr/lib/python3/dist-packages/trainmon/_auto.py\", line 40 in step\n"
      "  File \"/home/u/my train.py\", line 7 in <module>\n";
  const auto th = parse_faulthandler(text);
  ASSERT_EQ(th.size(), 2u);
  EXPECT_EQ(th[0].id, "0x00007fba01c216c0");
  EXPECT_FALSE(th[0].current);
  EXPECT_TRUE(th[1].current);
  ASSERT_EQ(th[1].frames.size(), 3u);
  EXPECT_EQ(th[1].frames[2].file, "/home/u/my train.py");
  EXPECT_EQ(th[1].frames[2].line, 7);
  EXPECT_EQ(th[1].frames[2].func, "<module>");
  const auto* m = main_thread(th);
  ASSERT_EQ(m, &th[1]);
  const auto at = stuck_at(*m);
  EXPECT_EQ(at.where, "threading.py:324 in wait");
  EXPECT_EQ(at.caller, "my train.py:7 in <module>");  // the package's own frame is skipped too
  // a dump where the signal landed on another thread: the main one is still the non-bootstrap thread
  const std::string other =
      "Current thread 0x1 (most recent call first):\n"
      "  File \"/usr/lib/python3.11/threading.py\", line 324 in wait\n"
      "  File \"/usr/lib/python3.11/threading.py\", line 995 in _bootstrap\n"
      "Thread 0x2 (most recent call first):\n"
      "  File \"/x/ddp.py\", line 12 in run\n"
      "  File \"<string>\", line 1 in <module>\n";
  const auto o = parse_faulthandler(other);
  ASSERT_EQ(o.size(), 2u);
  EXPECT_EQ(stuck_at(*main_thread(o)).where, "ddp.py:12 in run");
  // a rank waiting in all_reduce under the collective timing: torch's frame, not our wrappers
  const auto coll = parse_faulthandler(
      "Current thread 0x1 (most recent call first):\n"
      "  File \"/run/trainmon/py/trainmon/_collectives.py\", line 269 in wait\n"
      "  File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", line 1536 in "
      "all_reduce\n"
      "  File \"/run/trainmon/py/trainmon/_collectives.py\", line 199 in wrapper\n"
      "  File \"/x/hang.py\", line 33 in run\n");
  ASSERT_EQ(coll.size(), 1u);
  const auto in_coll = stuck_at(coll[0]);
  EXPECT_EQ(in_coll.where, "torch/distributed/distributed_c10d.py:1536 in all_reduce");
  EXPECT_EQ(in_coll.caller, "hang.py:33 in run");
  EXPECT_EQ(collective_of(coll[0]), "all_reduce");
  // garbage, partial writes and truncation
  EXPECT_TRUE(parse_faulthandler("").empty());
  EXPECT_TRUE(parse_faulthandler("hello\nworld\n").empty());
  const auto cut = parse_faulthandler(
      "Thread 0x3 (most recent call first):\n  File \"a.py\", line 9 in f\n  ...\n  File \"b");
  ASSERT_EQ(cut.size(), 1u);
  EXPECT_TRUE(cut[0].truncated);
  EXPECT_EQ(cut[0].frames.size(), 1u);
  const auto noline = parse_faulthandler("Thread 0x3 (most recent call first):\n  File \"???\" in ???\n");
  ASSERT_EQ(noline.size(), 1u);
  EXPECT_EQ(frame_text(noline[0].frames[0]), "??? in ???");
}

}  // namespace
}  // namespace trainmon::diagnose
