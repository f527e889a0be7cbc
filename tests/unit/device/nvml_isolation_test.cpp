// SPDX-License-Identifier: Apache-2.0
// Isolation: one failing field, one lost GPU, one GPU failing every call, one GPU hanging — none
// of them blanks or delays the others. Through open_nvml_backend() and the fake driver.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "nvml_test_util.h"

namespace trainmon {
namespace {

using namespace std::chrono_literals;
using testing::device_scenario;
using testing::open_fake;
using testing::tick;

TEST(NvmlIsolation, OneFailingFieldKeepsTheRow) {
  auto b = open_fake(device_scenario("isolation-3gpu.json"), 30);
  auto t = tick(*b);
  ASSERT_EQ(t.gpus.size(), 3u);
  const GpuSample& s = t.gpus[0];
  EXPECT_TRUE(s.responsive.ok());
  EXPECT_EQ(s.power_draw_mw.status, ReadStatus::no_permission);
  EXPECT_EQ(s.power_draw_mw.code, 4);
  EXPECT_EQ(s.utilization_gpu_pct.value, 90u);
  EXPECT_EQ(s.temperature_gpu_c.value, 60u);
  EXPECT_EQ(s.memory_used_bytes.value, 1073741824u);
}

TEST(NvmlIsolation, OneGpuLostWhileTheOthersReadFine) {
  auto b = open_fake(device_scenario("isolation-3gpu.json"), 30);
  auto t1 = tick(*b);
  ASSERT_EQ(t1.gpus.size(), 3u);
  EXPECT_TRUE(t1.gpus[1].responsive.ok());
  EXPECT_EQ(t1.gpus[1].utilization_gpu_pct.value, 90u);

  setenv("TRAINMON_FAKE_NVML_TIME_S", "150", 1);  // GPU 1 falls off the bus at t = 100 s
  auto t2 = tick(*b);
  ASSERT_EQ(t2.gpus.size(), 3u);
  const GpuSample& lost = t2.gpus[1];
  EXPECT_EQ(lost.index, 1u);
  EXPECT_EQ(lost.responsive.status, ReadStatus::gpu_lost);
  EXPECT_EQ(lost.responsive.code, 15);
  EXPECT_EQ(lost.utilization_gpu_pct.status, ReadStatus::gpu_lost);
  EXPECT_EQ(lost.memory_used_bytes.status, ReadStatus::gpu_lost);
  EXPECT_EQ(lost.temperature_gpu_c.value, 0u);
  ASSERT_NE(lost.info, nullptr);  // the static facts read before the loss are kept
  EXPECT_EQ(lost.info->uuid.value, "GPU-00000000-0000-4000-8000-000000000001");
  // the others are untouched
  EXPECT_TRUE(t2.gpus[0].responsive.ok());
  EXPECT_EQ(t2.gpus[0].utilization_gpu_pct.value, 90u);
  // processes: GPU 1's are gone, GPU 0's are there
  bool saw0 = false;
  for (const auto& p : t2.processes) {
    EXPECT_NE(p.gpu_index, 1u);
    saw0 = saw0 || p.pid == 3001;
  }
  EXPECT_TRUE(saw0);
}

TEST(NvmlIsolation, GpuFailingEveryCallIsReportedAsFailed) {
  auto b = open_fake(device_scenario("isolation-3gpu.json"), 30);
  auto t = tick(*b);
  ASSERT_EQ(t.gpus.size(), 3u);
  const GpuSample& s = t.gpus[2];
  EXPECT_EQ(s.responsive.status, ReadStatus::failed);
  EXPECT_EQ(s.responsive.code, 999);
  EXPECT_EQ(s.utilization_gpu_pct.status, ReadStatus::failed);
  EXPECT_EQ(s.utilization_gpu_pct.code, 999);
  EXPECT_EQ(s.info->name.status, ReadStatus::failed);
  EXPECT_TRUE(t.gpus[0].responsive.ok());
  EXPECT_TRUE(t.gpus[1].responsive.ok());
}

TEST(NvmlIsolation, HangingGpuDoesNotDelayTheOthers) {
  // A private copy of the fake: the hung call outlives this test and must not share state.
  const std::string lib = testing::isolated_fake_copy("fake_nvml");
  BackendOptions o;
  o.device_timeout = 300ms;
  o.watch_events = false;
  auto b = open_fake(device_scenario("hang-2gpu.json"), 30, o, lib);
  ASSERT_TRUE(b->driver_info().loaded) << b->driver_info().error;

  auto start = std::chrono::steady_clock::now();
  auto t1 = tick(*b);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, 300ms + 250ms);  // bounded by the timeout, not by the 5 s hang
  EXPECT_GE(took, 290ms);
  ASSERT_EQ(t1.gpus.size(), 2u);
  EXPECT_TRUE(t1.gpus[0].responsive.ok());
  EXPECT_EQ(t1.gpus[0].temperature_gpu_c.value, 60u);
  EXPECT_EQ(t1.gpus[0].utilization_gpu_pct.value, 90u);
  EXPECT_EQ(t1.gpus[1].responsive.status, ReadStatus::timeout);
  EXPECT_EQ(t1.gpus[1].utilization_gpu_pct.status, ReadStatus::timeout);
  EXPECT_NE(t1.gpus[1].info, nullptr);

  // Still stuck: reported as timeout at once, no new work queued behind the hung call.
  start = std::chrono::steady_clock::now();
  auto t2 = tick(*b);
  took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, 250ms);
  EXPECT_EQ(t2.gpus[1].responsive.status, ReadStatus::timeout);
  EXPECT_TRUE(t2.gpus[0].responsive.ok());

  // Shutdown does not wait for the hung call (bounded join, then detach).
  start = std::chrono::steady_clock::now();
  b.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms);
}

TEST(NvmlIsolation, StaticFieldThatFailedIsReprobed) {
  auto b = open_fake(device_scenario("isolation-3gpu.json"), 30);
  auto t1 = tick(*b);
  // GPU 2 fails every call: static info all failed, re-probed (and failing again) every tick
  EXPECT_EQ(t1.gpus[2].info->uuid.status, ReadStatus::failed);
  // GPU 0's BAR1 and serial are not in the scenario: not_supported, kept as such
  EXPECT_EQ(t1.gpus[0].info->serial.status, ReadStatus::not_supported);
  EXPECT_EQ(t1.gpus[0].info->uuid.value, "GPU-00000000-0000-4000-8000-000000000000");
  auto t2 = tick(*b);
  EXPECT_EQ(t2.gpus[0].info, t1.gpus[0].info);  // nothing to re-probe: the same shared facts
}

}  // namespace
}  // namespace trainmon
