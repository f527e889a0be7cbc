// SPDX-License-Identifier: Apache-2.0
// The shared worker (NvmlBackend::Device): quick devices are sampled one after the other by one
// thread; a device that blocks or hangs gets a worker of its own, and the devices after a hung one
// still answer in the same tick.
#include <gtest/gtest.h>

#include <chrono>

#include "device/nvml/nvml_backend.h"
#include "nvml_test_util.h"

namespace trainmon {
namespace {

using namespace std::chrono_literals;
using testing::as_nvml;
using testing::device_scenario;
using testing::open_fake;
using testing::tick;

TEST(NvmlSharedWorker, QuickDevicesShareOneWorkerAfterThreeTicks) {
  BackendOptions o;
  o.watch_events = false;
  auto b = open_fake(device_scenario("exact-2gpu.json"), std::nullopt, o);  // a running clock
  ASSERT_TRUE(b->driver_info().loaded) << b->driver_info().error;
  EXPECT_EQ(as_nvml(*b).devices_on_shared_worker(), 0u);  // first ticks: a worker each
  // Tick 1 reads PCIe with the blocking call (no counter value yet); the next ones are quick (three
  // in a row are needed; a loaded machine may make one slow, so allow a few more).
  for (int i = 0; i < 20 && as_nvml(*b).devices_on_shared_worker() == 0; ++i) {
    auto t = tick(*b);
    ASSERT_EQ(t.gpus.size(), 2u);
    EXPECT_TRUE(t.gpus[0].responsive.ok());
    EXPECT_TRUE(t.gpus[1].responsive.ok());
  }
  // GPU 0 reads its PCIe byte counters (quick); GPU 1's scenario has no PCIe throughput, so it keeps
  // asking nvmlDeviceGetPcieThroughput, which waits 20 ms before answering: it keeps its own worker.
  EXPECT_EQ(as_nvml(*b).devices_on_shared_worker(), 1u);
  auto t = tick(*b);  // sampled by the shared worker: same values, index order kept
  ASSERT_EQ(t.gpus.size(), 2u);
  EXPECT_EQ(t.gpus[0].index, 0u);
  EXPECT_EQ(t.gpus[1].index, 1u);
  EXPECT_TRUE(t.gpus[1].responsive.ok());
  EXPECT_TRUE(t.gpus[0].pcie_rx_kib_s.ok());
}

TEST(NvmlSharedWorker, BlockingDevicesKeepWorkersOfTheirOwn) {
  BackendOptions o;
  o.watch_events = false;
  // A frozen clock: GPU 0's PCIe counters never advance, so every tick makes the blocking call (20 ms
  // per direction in the fake), as GPU 1 does.
  auto b = open_fake(device_scenario("exact-2gpu.json"), 30, o);
  for (int i = 0; i < 6; ++i) (void)tick(*b);
  EXPECT_EQ(as_nvml(*b).devices_on_shared_worker(), 0u);
  // Without PCIe throughput nothing blocks: they share.
  o.collect_pcie_throughput = false;
  auto quiet = open_fake(device_scenario("exact-2gpu.json"), 30, o);
  for (int i = 0; i < 20 && as_nvml(*quiet).devices_on_shared_worker() < 2; ++i) (void)tick(*quiet);
  EXPECT_EQ(as_nvml(*quiet).devices_on_shared_worker(), 2u);
}

TEST(NvmlSharedWorker, DevicesAfterAHungOneStillAnswerInThatTick) {
  // A private copy of the fake: the hung call outlives this test and must not share state.
  const std::string lib = testing::isolated_fake_copy("fake_nvml");
  BackendOptions o;
  o.device_timeout = 300ms;
  o.watch_events = false;
  o.collect_pcie_throughput = false;  // quick from the first tick
  auto b = open_fake(device_scenario("hang-shared-3gpu.json"), 30, o, lib);
  ASSERT_TRUE(b->driver_info().loaded) << b->driver_info().error;
  for (int i = 0; i < 20 && as_nvml(*b).devices_on_shared_worker() < 3; ++i) {
    auto t = tick(*b);
    ASSERT_EQ(t.gpus.size(), 3u);
    EXPECT_TRUE(t.gpus[0].responsive.ok()) << "tick " << i;
  }
  ASSERT_EQ(as_nvml(*b).devices_on_shared_worker(), 3u);
  testing::ScopedEnv later("TRAINMON_FAKE_NVML_TIME_S", "100");  // GPU 0's temperature query hangs now

  auto start = std::chrono::steady_clock::now();
  auto hung = tick(*b);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, 300ms + 250ms);  // GPUs 1 and 2 on workers of their own after 150 ms: same deadline
  EXPECT_GE(took, 290ms);
  ASSERT_EQ(hung.gpus.size(), 3u);
  EXPECT_EQ(hung.gpus[0].responsive.status, ReadStatus::timeout);
  EXPECT_NE(hung.gpus[0].info, nullptr);
  for (unsigned i : {1u, 2u}) {
    EXPECT_TRUE(hung.gpus[i].responsive.ok()) << "GPU " << i;
    EXPECT_EQ(hung.gpus[i].temperature_gpu_c.value, 60u + i);
  }
  EXPECT_EQ(as_nvml(*b).devices_on_shared_worker(), 0u);

  // Still stuck: GPU 0 reports timeout at once (its own worker is the one inside the call), the
  // others answer without waiting for it.
  start = std::chrono::steady_clock::now();
  auto next = tick(*b);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 250ms);
  EXPECT_EQ(next.gpus[0].responsive.status, ReadStatus::timeout);
  EXPECT_TRUE(next.gpus[1].responsive.ok());
  EXPECT_TRUE(next.gpus[2].responsive.ok());

  // Shutdown does not wait for the hung call (bounded join, then detach).
  start = std::chrono::steady_clock::now();
  b.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms);
}

TEST(NvmlSharedWorker, TwoGpusHangingInOneTickCostOneTimeout) {
  const std::string lib = testing::isolated_fake_copy("fake_nvml");
  BackendOptions o;
  o.device_timeout = 300ms;
  o.watch_events = false;
  o.collect_pcie_throughput = false;
  auto b = open_fake(device_scenario("hang-shared-3gpu.json"), 30, o, lib);
  ASSERT_TRUE(b->driver_info().loaded) << b->driver_info().error;
  for (int i = 0; i < 20 && as_nvml(*b).devices_on_shared_worker() < 3; ++i) (void)tick(*b);
  ASSERT_EQ(as_nvml(*b).devices_on_shared_worker(), 3u);
  testing::ScopedEnv later("TRAINMON_FAKE_NVML_TIME_S", "200");  // GPUs 0 and 1 hang now

  // GPU 0 hangs in the shared worker; after half the timeout GPUs 1 and 2 get workers of their own,
  // where GPU 1 hangs too: the tick still ends at the timeout, not at two of them.
  auto start = std::chrono::steady_clock::now();
  auto t = tick(*b);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, 290ms);
  EXPECT_LT(took, 300ms + 250ms);
  ASSERT_EQ(t.gpus.size(), 3u);
  EXPECT_EQ(t.gpus[0].responsive.status, ReadStatus::timeout);
  EXPECT_EQ(t.gpus[1].responsive.status, ReadStatus::timeout);
  EXPECT_TRUE(t.gpus[2].responsive.ok());
  EXPECT_EQ(t.gpus[2].temperature_gpu_c.value, 62u);
  b.reset();
}

}  // namespace
}  // namespace trainmon
