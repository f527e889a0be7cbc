// SPDX-License-Identifier: Apache-2.0
// Invalid values, MIG, process-list growth and events, through open_nvml_backend() and the fake.
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

TEST(NvmlInvalidValues, SentinelsAndImpossibleValuesNeverShowAsNumbers) {
  auto b = open_fake(device_scenario("invalid-values.json"), 30);
  auto t = tick(*b);
  ASSERT_EQ(t.gpus.size(), 1u);
  const GpuSample& s = t.gpus[0];
  EXPECT_TRUE(s.responsive.ok());
  EXPECT_EQ(s.temperature_gpu_c.status, ReadStatus::not_available);  // 0xFFFFFFFF
  EXPECT_EQ(s.temperature_gpu_c.value, 0u);
  EXPECT_EQ(s.clocks_graphics_mhz.status, ReadStatus::not_available);  // 0xFFFFFFFF
  // The fake clamps used to total (it cannot script used > total); that case is covered directly
  // in nvml_validate_test (MemoryUsedAboveTotalIsInvalid).
  EXPECT_EQ(s.memory_used_bytes.value, 1073741824u);
  EXPECT_EQ(s.memory_total_bytes.value, 1073741824u);
  EXPECT_EQ(s.power_limit_mw.status, ReadStatus::invalid_value);  // limit of 0
  EXPECT_EQ(s.enforced_power_limit_mw.status, ReadStatus::invalid_value);
  EXPECT_EQ(s.fan_speed_pct.status, ReadStatus::invalid_value);  // 250 %
  EXPECT_EQ(s.pstate.status, ReadStatus::not_available);         // 32 = unknown
  EXPECT_EQ(s.power_draw_mw.value, 300000u);                     // the sane ones still read
  EXPECT_EQ(s.total_energy_mj.value, 900000u);
  EXPECT_EQ(s.ecc_corrected_volatile.value, 10u);
}

TEST(NvmlInvalidValues, CountersGoingBackwardsAreInvalidForOneTick) {
  auto b = open_fake(device_scenario("invalid-values.json"), 30);
  auto t1 = tick(*b);
  EXPECT_EQ(t1.gpus[0].total_energy_mj.value, 900000u);
  setenv("TRAINMON_FAKE_NVML_TIME_S", "60", 1);  // energy 900000 → 1000, ECC 10 → 3
  auto t2 = tick(*b);
  EXPECT_EQ(t2.gpus[0].total_energy_mj.status, ReadStatus::invalid_value);
  EXPECT_EQ(t2.gpus[0].ecc_corrected_volatile.status, ReadStatus::invalid_value);
  auto t3 = tick(*b);  // the new base is accepted from then on (a driver reload resets counters)
  EXPECT_EQ(t3.gpus[0].total_energy_mj.value, 1000u);
  EXPECT_EQ(t3.gpus[0].ecc_corrected_volatile.value, 3u);
}

TEST(NvmlMig, InstancesAndTheirProcesses) {
  auto b = open_fake(device_scenario("mig-1gpu.json"), 30);
  auto t = tick(*b);
  ASSERT_EQ(t.gpus.size(), 1u);
  const GpuSample& s = t.gpus[0];
  EXPECT_EQ(s.mig_mode_current.value, 1u);
  EXPECT_EQ(s.utilization_gpu_pct.status, ReadStatus::not_supported);  // device util N/A on MIG
  ASSERT_EQ(s.mig_devices.size(), 2u);
  EXPECT_EQ(s.mig_devices[0].index, 0u);
  EXPECT_EQ(s.mig_devices[0].gpu_instance_id.value, 1u);
  EXPECT_EQ(s.mig_devices[0].compute_instance_id.value, 0u);
  EXPECT_EQ(s.mig_devices[0].uuid.value, "MIG-11111111-2222-5333-8444-555555555501");
  EXPECT_EQ(s.mig_devices[0].memory_total_bytes.value, 42949672960u);
  EXPECT_EQ(s.mig_devices[0].memory_used_bytes.value, 123731968u);
  EXPECT_EQ(s.mig_devices[0].memory_free_bytes.value, 42949672960u - 123731968u - 1048576u);  // - reserved
  EXPECT_EQ(s.mig_devices[1].gpu_instance_id.value, 2u);
  EXPECT_EQ(s.mig_devices[1].memory_used_bytes.value, 2147483648u);
  ASSERT_EQ(t.processes.size(), 2u);
  EXPECT_EQ(t.processes[0].pid, 5001u);
  EXPECT_EQ(t.processes[0].gpu_instance_id.value, 1u);
  EXPECT_EQ(t.processes[0].compute_instance_id.value, 0u);
  EXPECT_EQ(t.processes[1].gpu_instance_id.value, 2u);
  EXPECT_EQ(t.processes[0].sm_util_pct.status, ReadStatus::not_supported);  // per-process util N/A on MIG
  EXPECT_EQ(s.mig_devices[0].memory_reserved_bytes.value, 1048576u);
  EXPECT_EQ(s.mig_devices[0].gpm_graphics_util_pct.status, ReadStatus::not_available);  // first GPM sample
}

TEST(NvmlMig, GpmPerGpuInstance) {
  auto b = open_fake(device_scenario("mig-1gpu.json"), 30);
  tick(*b);
  auto t = tick(*b);
  const GpuSample& s = t.gpus[0];
  ASSERT_EQ(s.mig_devices.size(), 2u);
  // nvmlGpmMigSampleGet per GPU instance: instance 1 has its own values, instance 2 none
  EXPECT_EQ(s.mig_devices[0].gpm_graphics_util_pct.value, 40.0);
  EXPECT_EQ(s.mig_devices[0].gpm_sm_util_pct.value, 35.0);
  EXPECT_EQ(s.mig_devices[0].gpm_tensor_util_pct.status, ReadStatus::not_supported);
  EXPECT_EQ(s.mig_devices[1].gpm_graphics_util_pct.status, ReadStatus::not_supported);
  // the whole GPU's GPM: the scenario gives none
  EXPECT_EQ(s.gpm_graphics_util_pct.status, ReadStatus::not_supported);
}

TEST(NvmlProcesses, ListGrowingBetweenCallsIsRetried) {
  auto b = open_fake(device_scenario("process-growth.json"), 30);
  auto t = tick(*b);
  // 2 scripted + 20 added by the first buffer call (INSUFFICIENT_SIZE: 22 > 2*2+5) + 20 by the retry
  ASSERT_EQ(t.processes.size(), 42u);
  EXPECT_EQ(t.processes[0].pid, 6001u);
  EXPECT_EQ(t.processes[1].pid, 6002u);
  EXPECT_EQ(t.processes[2].pid, 4100000u);
  EXPECT_EQ(t.processes[41].pid, 4100039u);
  EXPECT_EQ(t.processes[41].used_memory_bytes.value, 256u << 20);
  auto t2 = tick(*b);  // growth is over: the list is stable
  EXPECT_EQ(t2.processes.size(), 42u);
}

TEST(NvmlEvents, XidAndEccEventsDeliveredWithCodes) {
  auto b = open_fake(device_scenario("events-2gpu.json"), 10);
  (void)tick(*b);  // each GPU registers for events in its first tick
  EXPECT_EQ(testing::as_nvml(*b).events_status(), "");
  // That tick's poll may have run after the registrations.
  std::vector<GpuEvent> events = b->drain_events();
  auto deadline = std::chrono::steady_clock::now() + 3s;
  // Events are read from the driver by each tick's poll: none before a tick.
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(b->drain_events().empty());
  while (events.size() < 3 && std::chrono::steady_clock::now() < deadline) {
    (void)tick(*b);
    for (auto& e : b->drain_events()) events.push_back(e);
    std::this_thread::sleep_for(20ms);
  }
  std::this_thread::sleep_for(300ms);  // nothing more may come (PState was not registered)
  (void)tick(*b);
  for (auto& e : b->drain_events()) events.push_back(e);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].gpu_index, 1u);
  EXPECT_EQ(events[0].event_type, 0x8u);
  EXPECT_EQ(events[0].xid, 79u);
  EXPECT_EQ(events[1].gpu_index, 0u);
  EXPECT_EQ(events[1].xid, 48u);
  EXPECT_EQ(events[2].gpu_index, 0u);
  EXPECT_EQ(events[2].event_type, 0x2u);
  EXPECT_EQ(events[2].xid, 0u);
  EXPECT_GT(events[0].time_unix_ns, 0);
  EXPECT_TRUE(b->drain_events().empty());
}

TEST(NvmlEvents, ShutdownIsPrompt) {
  auto b = open_fake(device_scenario("events-2gpu.json"), 0);
  auto start = std::chrono::steady_clock::now();
  b.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 500ms);
}

}  // namespace
}  // namespace trainmon
