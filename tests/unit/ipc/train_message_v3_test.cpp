// SPDX-License-Identifier: Apache-2.0
// Protocol version 3 (docs/python.md "Collective wait"): `steps.comm_s`, `steps.total.comm_s`, the
// phases collective and optimizer, and `steps.coll` (the collective a rank is inside).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "trainmon/diagnose/train_message.h"

using namespace trainmon;
using namespace trainmon::diagnose;  // the training-event parser (diagnose/train_message.h)

namespace {

// The example of docs/python.md, as the package sends it.
constexpr const char* kBatchEnd =
    R"({"v":3,"type":"batch_end","t":1718000004.2,"mt":81234.6,"seq":245,"pid":4242,"framework":"torch",)"
    R"("rank":0,"epoch":3,"steps":{"n":12,"samples":1536,"span_s":4.93,)"
    R"("step_s":{"sum":4.93,"min":0.39,"max":0.47,"p50":0.41,"p90":0.45,"p99":0.47},)"
    R"("data_s":{"sum":0.61,"min":0.02,"max":0.09,"p50":0.05,"p90":0.08,"p99":0.09},)"
    R"("comm_s":{"sum":1.85,"min":0.11,"max":0.2,"p50":0.15,"p90":0.19,"p99":0.2},)"
    R"("total":{"steps":1200,"samples":153600,"step_s":480.2,"data_s":96.1,"comm_s":180.5},)"
    R"("last_step_t":1718000004.2,"last_step_mt":81234.6,"phase":"collective","phase_mt":81234.5,)"
    R"("coll":{"op":"all_reduce","seq":5120,"pg":"0","bytes":4194304}}})";

RejectReason reason_of(const std::string& text) {
  auto r = parse_train_event(text);
  EXPECT_FALSE(r.has_value()) << text;
  return r ? RejectReason::queue_full : reject_reason_of(r.error());
}

std::string with_steps(const std::string& steps, int v = 3) {
  return R"({"v":)" + std::to_string(v) + R"(,"type":"batch_end","t":1718000004.2,"steps":)" + steps + "}";
}

}  // namespace

TEST(IpcParseV3, CollectiveWaitAndTheCollectiveAreReadAndRoundTrip) {
  auto m = parse_train_event(kBatchEnd);
  ASSERT_TRUE(m.has_value()) << m.error().message;
  EXPECT_EQ(m->version, 3);
  const auto& s = *m->steps;
  EXPECT_DOUBLE_EQ(s.comm_s.sum, 1.85);
  EXPECT_DOUBLE_EQ(s.comm_s.p90, 0.19);
  EXPECT_DOUBLE_EQ(s.total_comm_s, 180.5);
  EXPECT_EQ(s.phase, "collective");
  EXPECT_EQ(s.coll_op, "all_reduce");
  EXPECT_EQ(s.coll_seq, 5120);
  EXPECT_EQ(s.coll_pg, "0");
  EXPECT_DOUBLE_EQ(s.coll_bytes, 4194304);
  auto back = parse_train_event(to_json(*m));
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(*back, *m);
  EXPECT_NE(to_json(*m).find(R"("coll":{"bytes":4194304,"op":"all_reduce","pg":"0","seq":5120})"),
            std::string::npos)
      << to_json(*m);
}

TEST(IpcParseV3, WindowOfFillsCommTotalsAndTheCollective) {
  auto m = parse_train_event(kBatchEnd);
  ASSERT_TRUE(m.has_value());
  RunClock clock{1718000000.0, 81230.0};
  auto w = window_of(*m, clock);
  ASSERT_TRUE(w.has_value());
  EXPECT_FLOAT_EQ(w->comm.sum, 1.85f);
  EXPECT_FLOAT_EQ(w->comm.max, 0.2f);
  EXPECT_DOUBLE_EQ(w->total_comm_s, 180.5);
  EXPECT_EQ(w->phase, diagnose::TrainPhase::collective);
  EXPECT_NEAR(w->phase_t, 4.5, 1e-9);
  EXPECT_EQ(w->coll.op, "all_reduce");
  EXPECT_EQ(w->coll.seq, 5120);
  EXPECT_EQ(w->coll.group, "0");
  EXPECT_DOUBLE_EQ(w->coll.bytes, 4194304);
  // A heartbeat in the optimizer: no steps, so no stats; totals and phase kept; no collective.
  auto hb = parse_train_event(
      R"({"v":3,"type":"heartbeat","t":1718000005,"mt":81235,"steps":{"n":0,"total":{"steps":3,"step_s":1.5,)"
      R"("comm_s":0.25},"phase":"optimizer","phase_mt":81234.9}})");
  ASSERT_TRUE(hb.has_value()) << hb.error().message;
  auto hw = window_of(*hb, clock);
  ASSERT_TRUE(hw.has_value());
  EXPECT_EQ(hw->steps, 0u);
  EXPECT_TRUE(std::isnan(hw->comm.sum));
  EXPECT_DOUBLE_EQ(hw->total_comm_s, 0.25);
  EXPECT_EQ(hw->phase, diagnose::TrainPhase::optimizer);
  EXPECT_TRUE(hw->coll.op.empty());
}

TEST(IpcParseV3, OlderVersionsAreStillReadAndLeaveCommUnknown) {
  auto m =
      parse_train_event(with_steps(R"({"n":1,"step_s":{"sum":0.5},"total":{"steps":1,"step_s":0.5}})", 2));
  ASSERT_TRUE(m.has_value()) << m.error().message;
  EXPECT_EQ(m->version, 2);
  EXPECT_TRUE(std::isnan(m->steps->comm_s.sum));
  EXPECT_TRUE(std::isnan(m->steps->total_comm_s));
  auto w = window_of(*m, RunClock{});
  EXPECT_TRUE(std::isnan(w->comm.sum));
  EXPECT_TRUE(std::isnan(w->total_comm_s));
  EXPECT_TRUE(w->coll.op.empty());
  EXPECT_TRUE(parse_train_event(R"({"v":1,"type":"hello","t":1718000000})").has_value());
  EXPECT_EQ(reason_of(R"({"v":4,"type":"hello","t":1718000000})"), RejectReason::bad_version);
}

TEST(IpcParseV3, EachBadV3FieldRejectsTheMessage) {
  const char* bad[] = {
      R"({"n":1,"comm_s":{"sum":-1}})",
      R"({"n":1,"comm_s":{"max":1e8}})",
      R"({"n":1,"comm_s":[1]})",
      R"({"n":1,"comm_s":{"p50":"0.1"}})",
      R"({"n":0,"total":{"comm_s":-0.5}})",
      R"({"n":0,"total":{"comm_s":2e12}})",
      R"({"n":0,"phase":"allreduce"})",
      R"({"n":0,"coll":"all_reduce"})",
      R"({"n":0,"coll":{"seq":1}})",
      R"({"n":0,"coll":{"op":""}})",
      R"({"n":0,"coll":{"op":7}})",
      R"({"n":0,"coll":{"op":"all\nreduce"}})",
      R"({"n":0,"coll":{"op":"all_reduce","seq":-1}})",
      R"({"n":0,"coll":{"op":"all_reduce","seq":1.5}})",
      R"({"n":0,"coll":{"op":"all_reduce","pg":3}})",
      R"({"n":0,"coll":{"op":"all_reduce","bytes":-1}})",
      R"({"n":0,"coll":{"op":"all_reduce","bytes":1e300}})",
  };
  for (const char* steps : bad) {
    EXPECT_EQ(reason_of(with_steps(steps)), RejectReason::bad_field) << steps;
  }
  // Absent and null fields are not sent; extra fields inside `coll` are ignored (forward compatible).
  auto ok = parse_train_event(with_steps(R"({"n":0,"comm_s":null,"coll":{"op":"barrier","future":[1]}})"));
  ASSERT_TRUE(ok.has_value()) << ok.error().message;
  EXPECT_EQ(ok->steps->coll_op, "barrier");
  EXPECT_EQ(ok->steps->coll_seq, -1);
  EXPECT_TRUE(std::isnan(ok->steps->coll_bytes));
}

TEST(IpcParseV3, CollectiveWaitAboveTheStepIsClampedAndCounted) {
  // 0.5 s of collective per 0.1 s step (10 steps): the window and the totals are lowered to the
  // step time, data wait first; each lowered figure counts. The example message needs none.
  auto m = parse_train_event(
      with_steps(R"({"n":10,"step_s":{"sum":1.0,"min":0.1,"max":0.1,"p50":0.1,"p90":0.1,"p99":0.1},)"
                 R"("data_s":{"sum":0.2,"min":0.02,"max":0.02,"p50":0.02,"p90":0.02,"p99":0.02},)"
                 R"("comm_s":{"sum":5.0,"min":0.5,"max":0.5,"p50":0.5,"p90":0.5,"p99":0.5},)"
                 R"("total":{"steps":100,"step_s":11.1,"data_s":2.0,"comm_s":28.5}})"));
  ASSERT_TRUE(m.has_value()) << m.error().message;
  const auto& s = *m->steps;
  EXPECT_DOUBLE_EQ(s.comm_s.sum, 0.8);  // step 1.0 - data 0.2
  EXPECT_DOUBLE_EQ(s.data_s.sum, 0.2);
  EXPECT_DOUBLE_EQ(s.comm_s.max, 0.1);
  EXPECT_DOUBLE_EQ(s.comm_s.p50, 0.1);
  EXPECT_NEAR(s.total_comm_s, 9.1, 1e-12);  // 11.1 - 2.0
  EXPECT_EQ(s.corrected, 1 + 5 + 1);        // sum, five points, total
  auto ok = parse_train_event(kBatchEnd);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->steps->corrected, 0);
  EXPECT_DOUBLE_EQ(ok->steps->comm_s.sum, 1.85);
}
