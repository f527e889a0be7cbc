// SPDX-License-Identifier: Apache-2.0
// Protocol version 2 (docs/python.md "Step timing"): the rank's identity, `mt`, `steps`, heartbeats.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "trainmon/diagnose/train_message.h"

using namespace trainmon;
using namespace trainmon::diagnose;  // the training-event parser (diagnose/train_message.h)

namespace {

// The example of docs/python.md, as the package sends it.
constexpr const char* kBatchEnd =
    R"({"v":2,"type":"batch_end","t":1718000004.2,"mt":81234.6,"seq":245,"pid":4242,"framework":"torch",)"
    R"("rank":1,"epoch":3,"batch":120,"steps":{"n":12,"samples":1536,"span_s":4.93,)"
    R"("step_s":{"sum":4.93,"min":0.39,"max":0.47,"p50":0.41,"p90":0.45,"p99":0.47},)"
    R"("data_s":{"sum":0.61,"min":0.02,"max":0.09,"p50":0.05,"p90":0.08,"p99":0.09},)"
    R"("total":{"steps":1200,"samples":153600,"step_s":480.2,"data_s":96.1},)"
    R"("last_step_t":1718000004.2,"last_step_mt":81234.6,"phase":"data","phase_mt":81234.6}})";

RejectReason reason_of(const std::string& text) {
  auto r = parse_train_event(text);
  EXPECT_FALSE(r.has_value()) << text;
  return r ? RejectReason::queue_full : reject_reason_of(r.error());
}

std::string with_steps(const std::string& steps) {
  return R"({"v":2,"type":"batch_end","t":1718000004.2,"steps":)" + steps + "}";
}

}  // namespace

TEST(IpcParseV2, BatchEndWithStepsIsReadWhole) {
  auto m = parse_train_event(kBatchEnd);
  ASSERT_TRUE(m.has_value()) << m.error().message;
  EXPECT_EQ(m->version, 2);
  EXPECT_DOUBLE_EQ(m->mono_s, 81234.6);
  ASSERT_TRUE(m->steps.has_value());
  const auto& s = *m->steps;
  EXPECT_EQ(s.n, 12);
  EXPECT_DOUBLE_EQ(s.samples, 1536);
  EXPECT_DOUBLE_EQ(s.step_s.p90, 0.45);
  EXPECT_DOUBLE_EQ(s.data_s.sum, 0.61);
  EXPECT_DOUBLE_EQ(s.total_steps, 1200);
  EXPECT_DOUBLE_EQ(s.total_data_s, 96.1);
  EXPECT_EQ(s.phase, "data");
  // The canonical form round-trips, steps included; the stored form leaves them out.
  auto back = parse_train_event(to_json(*m));
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(*back, *m);
  EXPECT_EQ(to_json(*m, false).find("steps"), std::string::npos);
}

TEST(IpcParseV2, IdentityFieldsOfHello) {
  auto m = parse_train_event(
      R"({"v":2,"type":"hello","t":1718000000,"rank":3,"local_rank":1,"world_size":8,"node_rank":1,)"
      R"("host":"gpu-node-07","gpu":1,"gpu_uuid":"GPU-8f3a","cuda_visible_devices":"2,3",)"
      R"("cuda_device_order":"PCI_BUS_ID","stack_signal":40,"lines":30})");
  ASSERT_TRUE(m.has_value()) << m.error().message;
  auto r = rank_of(*m, 777);
  EXPECT_EQ(r.key, 3);
  EXPECT_EQ(r.pid, 777u);  // the kernel's pid (SO_PEERCRED), not the sender's word
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.world_size, 8);
  EXPECT_EQ(r.node_rank, 1);
  EXPECT_EQ(r.host, "gpu-node-07");
  EXPECT_EQ(r.cuda_device, 1);
  EXPECT_EQ(r.cuda_visible_devices, "2,3");
  EXPECT_EQ(r.stack_signal, 40);
  EXPECT_DOUBLE_EQ(r.lines_s, 30);
  auto back = parse_train_event(to_json(*m));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, *m);
}

TEST(IpcParseV2, VersionOneIsStillReadAndKeepsItsVersion) {
  auto m = parse_train_event(R"({"v":1,"type":"batch_end","t":1718000000,"batch":3})");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->version, 1);
  EXPECT_NE(to_json(*m).find("\"v\":1"), std::string::npos);
  EXPECT_EQ(reason_of(R"({"v":4,"type":"hello","t":1718000000})"), RejectReason::bad_version);
  EXPECT_EQ(reason_of(R"({"v":0,"type":"hello","t":1718000000})"), RejectReason::bad_version);
}

TEST(IpcParseV2, EveryBadStepsFieldRejectsTheMessage) {
  for (const std::string steps : {
           R"([1])",                                       // not an object
           R"({"samples":3})",                             // n missing
           R"({"n":-1})", R"({"n":1.5})", R"({"n":"3"})",  // n out of range / not whole
           R"({"n":1,"samples":-2})",                      //
           R"({"n":1,"span_s":-0.5})",                     //
           R"({"n":1,"step_s":{"p50":-0.1}})",             // negative duration
           R"({"n":1,"step_s":{"max":1e8}})",              // beyond 1e7 s
           R"({"n":1,"step_s":7})",                        // figures not an object
           R"({"n":1,"data_s":{"sum":"x"}})",              //
           R"({"n":1,"total":{"steps":-1}})",              //
           R"({"n":1,"total":3})",                         //
           R"({"n":1,"phase":"sleeping"})",                // unknown phase
           R"({"n":1,"phase":7})",                         //
           R"({"n":1,"last_step_t":5})",                   // not a Unix time
           R"({"n":1,"last_step_mt":-1})",                 //
       }) {
    EXPECT_EQ(reason_of(with_steps(steps)), RejectReason::bad_field) << steps;
  }
  // Identity fields too.
  EXPECT_EQ(reason_of(R"({"v":2,"type":"hello","t":1718000000,"world_size":0})"), RejectReason::bad_field);
  EXPECT_EQ(reason_of(R"({"v":2,"type":"hello","t":1718000000,"stack_signal":65})"), RejectReason::bad_field);
  EXPECT_EQ(reason_of(R"({"v":2,"type":"hello","t":1718000000,"host":"a\u001b[2Jb"})"),
            RejectReason::bad_field);
  EXPECT_EQ(reason_of(R"({"v":2,"type":"hello","t":1718000000,"cuda_visible_devices":")" +
                      std::string(1025, '1') + "\"}"),
            RejectReason::bad_field);
  EXPECT_TRUE(parse_train_event(R"({"v":2,"type":"hello","t":1718000000,"cuda_visible_devices":")" +
                                std::string(1024, '1') + "\"}")
                  .has_value());
}

TEST(IpcParseV2, WindowOnTheRunClockUsesMonotonicTimes) {
  auto m = parse_train_event(kBatchEnd);
  ASSERT_TRUE(m.has_value());
  // The run started at mono 81200 and at a wall time 1 h away from the sender's t: the wall clock
  // stepped, the monotonic one did not.
  const RunClock clock{1718000004.2 - 3600, 81200.0};
  auto w = window_of(*m, clock);
  ASSERT_TRUE(w.has_value());
  EXPECT_NEAR(w->t, 34.6, 1e-9);
  EXPECT_NEAR(w->last_step_t, 34.6, 1e-9);
  EXPECT_NEAR(w->phase_t, 34.6, 1e-9);
  EXPECT_EQ(w->steps, 12u);
  EXPECT_DOUBLE_EQ(w->samples, 1536);
  EXPECT_FLOAT_EQ(w->step.p50, 0.41f);
  EXPECT_FLOAT_EQ(w->data.sum, 0.61f);
  EXPECT_DOUBLE_EQ(w->total_samples, 153600);
  EXPECT_EQ(w->phase, diagnose::TrainPhase::data);
  // Offline (no monotonic start): the wall times.
  const RunClock wall{1718000000.0};
  auto w2 = window_of(*m, wall);
  EXPECT_NEAR(w2->t, 4.2, 1e-6);
  EXPECT_NEAR(w2->last_step_t, 4.2, 1e-6);
  EXPECT_TRUE(std::isnan(w2->phase_t));  // only a monotonic time was sent for it
}

TEST(IpcParseV2, HeartbeatIsAWindowWithoutSteps) {
  auto m = parse_train_event(
      R"({"v":2,"type":"heartbeat","t":1718000010,"mt":100,"steps":{"n":0,"total":{"steps":50},)"
      R"("last_step_t":1718000002,"last_step_mt":92,"phase":"compute","phase_mt":92.5}})");
  ASSERT_TRUE(m.has_value()) << m.error().message;
  EXPECT_EQ(m->type, EventType::heartbeat);
  auto w = window_of(*m, RunClock{1718000000, 90});
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->steps, 0u);
  EXPECT_TRUE(std::isnan(w->step.p50));
  EXPECT_DOUBLE_EQ(w->last_step_t, 2);
  EXPECT_DOUBLE_EQ(w->phase_t, 2.5);
  EXPECT_EQ(w->phase, diagnose::TrainPhase::compute);
  EXPECT_FALSE(
      window_of(*parse_train_event(R"({"v":2,"type":"memory","t":1718000010})"), RunClock{}).has_value());
}
