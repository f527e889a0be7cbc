// SPDX-License-Identifier: Apache-2.0
// Where the NVML event poll runs (NvmlBackend, EventWatcher): in the shared worker's job after the
// quick devices, so that a tick of quick GPUs wakes one worker thread; a hung nvmlEventSetWait never
// holds up the GPUs, and its worker is handed to the event watcher. And DeviceBackend::sample's
// `meanwhile`: the caller's own work runs while the devices are sampled.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "device/nvml/nvml_backend.h"
#include "nvml_test_util.h"

namespace trainmon {
namespace {

using namespace std::chrono_literals;
using testing::as_nvml;
using testing::device_scenario;
using testing::open_fake;
using testing::Tick;
using testing::tick;

/// Ticks until every GPU is on the shared worker (three quick ticks in a row; a loaded machine may
/// make a tick slow, so allow many).
void warm_up(DeviceBackend& b, unsigned gpus) {
  for (int i = 0; i < 40 && as_nvml(b).devices_on_shared_worker() < gpus; ++i) {
    auto t = tick(b);
    ASSERT_EQ(t.gpus.size(), gpus);
  }
  ASSERT_EQ(as_nvml(b).devices_on_shared_worker(), gpus);
}

TEST(NvmlEventPoll, EventsArriveThroughTheSharedWorker) {
  BackendOptions o;
  o.collect_pcie_throughput = false;                              // quick from the first tick
  auto b = open_fake(device_scenario("events-2gpu.json"), 0, o);  // events are due at 1..4 s
  ASSERT_TRUE(b->driver_info().loaded) << b->driver_info().error;
  EXPECT_EQ(as_nvml(*b).worker_threads(), 2u);  // a worker per GPU at the start; the watcher has none yet
  (void)tick(*b);
  EXPECT_EQ(as_nvml(*b).events_status(), "");   // each GPU registered itself in its first tick
  EXPECT_EQ(as_nvml(*b).worker_threads(), 3u);  // ...and the first ticks poll on the watcher's own
  warm_up(*b, 2);
  (void)tick(*b);
  // One thread for the devices and the event poll: the watcher's own worker is gone.
  EXPECT_EQ(as_nvml(*b).worker_threads(), 1u);
  EXPECT_TRUE(b->drain_events().empty());

  testing::ScopedEnv later("TRAINMON_FAKE_NVML_TIME_S", "10");  // all three are due now
  auto t = tick(*b);
  ASSERT_EQ(t.gpus.size(), 2u);
  EXPECT_TRUE(t.gpus[0].responsive.ok());
  EXPECT_TRUE(t.gpus[1].responsive.ok());
  const auto events = b->drain_events();  // polled in this tick, by the shared worker
  EXPECT_EQ(as_nvml(*b).worker_threads(), 1u);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].gpu_index, 1u);
  EXPECT_EQ(events[0].event_type, 0x8u);
  EXPECT_EQ(events[0].xid, 79u);
  EXPECT_EQ(events[1].gpu_index, 0u);
  EXPECT_EQ(events[1].xid, 48u);
  EXPECT_EQ(events[2].gpu_index, 0u);
  EXPECT_EQ(events[2].event_type, 0x2u);  // double-bit ECC
  EXPECT_GT(events[0].time_unix_ns, 0);
  (void)tick(*b);
  EXPECT_TRUE(b->drain_events().empty());  // each event once
}

TEST(NvmlEventPoll, EightQuickGpusAndTheEventsUseOneWorkerThread) {
  BackendOptions o;
  o.collect_pcie_throughput = false;
  auto b = open_fake(std::string(TRAINMON_SOURCE_DIR) + "/tests/scenarios/bench-8gpu-64proc.json", 30, o);
  ASSERT_TRUE(b->driver_info().loaded) << b->driver_info().error;
  warm_up(*b, 8);
  EXPECT_EQ(as_nvml(*b).events_status(), "");
  for (int i = 0; i < 3; ++i) {
    auto t = tick(*b);
    ASSERT_EQ(t.gpus.size(), 8u);
    for (const auto& g : t.gpus) EXPECT_TRUE(g.responsive.ok()) << "GPU " << g.index;
    EXPECT_EQ(t.processes.size(), 64u);
    EXPECT_EQ(as_nvml(*b).worker_threads(), 1u) << "tick " << i;
  }
}

TEST(NvmlEventPoll, HungEventWaitDoesNotHoldUpTheGpus) {
  // A private copy of the fake: the hung call outlives this test and must not share state.
  const std::string lib = testing::isolated_fake_copy("fake_nvml");
  BackendOptions o;
  o.device_timeout = 300ms;
  o.collect_pcie_throughput = false;
  auto b = open_fake(device_scenario("hang-events-2gpu.json"), 30, o, lib);
  ASSERT_TRUE(b->driver_info().loaded) << b->driver_info().error;
  warm_up(*b, 2);
  EXPECT_EQ(as_nvml(*b).events_status(), "");
  (void)tick(*b);
  ASSERT_EQ(as_nvml(*b).worker_threads(), 1u);

  // nvmlEventSetWait hangs for 1 s from now. The devices come first in the shared job: they answer,
  // and at the handover (half the timeout) the worker stuck in the poll goes to the event watcher.
  testing::ScopedEnv hang("TRAINMON_FAKE_NVML_TIME_S", "100");
  auto start = std::chrono::steady_clock::now();
  auto t = tick(*b);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 300ms + 250ms);
  ASSERT_EQ(t.gpus.size(), 2u);
  for (unsigned i : {0u, 1u}) {
    EXPECT_TRUE(t.gpus[i].responsive.ok()) << "GPU " << i;
    EXPECT_EQ(t.gpus[i].temperature_gpu_c.value, 60u);
  }
  EXPECT_EQ(as_nvml(*b).devices_on_shared_worker(), 2u);  // the GPUs were quick: they keep sharing
  EXPECT_EQ(as_nvml(*b).worker_threads(), 1u);            // the stuck one, now the watcher's

  // Still stuck: a new shared worker samples the GPUs, the poll is skipped (no new events this
  // tick), and nothing waits for the hung call.
  start = std::chrono::steady_clock::now();
  t = tick(*b);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 250ms);
  EXPECT_TRUE(t.gpus[0].responsive.ok());
  EXPECT_TRUE(t.gpus[1].responsive.ok());
  EXPECT_EQ(as_nvml(*b).devices_on_shared_worker(), 2u);
  EXPECT_EQ(as_nvml(*b).worker_threads(), 2u);  // the new shared worker + the stuck one

  // Past the hang: the Xid due at 150 s arrives, and the stuck worker, idle again, is let go.
  testing::ScopedEnv after("TRAINMON_FAKE_NVML_TIME_S", "200");
  std::vector<GpuEvent> events;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (events.empty() && std::chrono::steady_clock::now() < deadline) {
    t = tick(*b);
    EXPECT_TRUE(t.gpus[0].responsive.ok());
    EXPECT_TRUE(t.gpus[1].responsive.ok());
    events = b->drain_events();
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].gpu_index, 1u);
  EXPECT_EQ(events[0].xid, 79u);
  for (int i = 0; i < 40 && as_nvml(*b).worker_threads() > 1; ++i) {
    std::this_thread::sleep_for(50ms);
    (void)tick(*b);
  }
  EXPECT_EQ(as_nvml(*b).worker_threads(), 1u);
  EXPECT_EQ(as_nvml(*b).devices_on_shared_worker(), 2u);

  start = std::chrono::steady_clock::now();
  b.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms);
}

TEST(NvmlEventPoll, ShutdownDoesNotWaitForAHungEventWait) {
  const std::string lib = testing::isolated_fake_copy("fake_nvml");
  BackendOptions o;
  o.device_timeout = 300ms;
  o.collect_pcie_throughput = false;
  auto b = open_fake(device_scenario("hang-events-2gpu.json"), 30, o, lib);
  ASSERT_TRUE(b->driver_info().loaded) << b->driver_info().error;
  warm_up(*b, 2);
  testing::ScopedEnv hang("TRAINMON_FAKE_NVML_TIME_S", "300");  // the wait hangs for 3 s
  auto t = tick(*b);
  EXPECT_TRUE(t.gpus[0].responsive.ok());
  EXPECT_TRUE(t.gpus[1].responsive.ok());
  // Bounded join (clamp(device_timeout, 100 ms, 1 s) = 300 ms), then the stuck thread is detached.
  const auto start = std::chrono::steady_clock::now();
  b.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms);
}

TEST(NvmlEventPoll, HungEventWaitOnTheFirstTicksEndsTheTickByTheTimeout) {
  // No shared job yet: the poll runs on the watcher's own worker, as the GPUs run on theirs.
  const std::string lib = testing::isolated_fake_copy("fake_nvml");
  BackendOptions o;
  o.device_timeout = 300ms;
  o.collect_pcie_throughput = false;
  auto b = open_fake(device_scenario("hang-events-2gpu.json"), 100, o, lib);
  ASSERT_TRUE(b->driver_info().loaded) << b->driver_info().error;
  (void)tick(*b);  // the GPUs register for events in their first tick: the first poll is the next
  auto start = std::chrono::steady_clock::now();
  auto t = tick(*b);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 300ms + 250ms);
  EXPECT_TRUE(t.gpus[0].responsive.ok());
  EXPECT_TRUE(t.gpus[1].responsive.ok());
  start = std::chrono::steady_clock::now();
  t = tick(*b);  // the poll is skipped while the first one is stuck
  EXPECT_LT(std::chrono::steady_clock::now() - start, 250ms);
  EXPECT_TRUE(t.gpus[1].responsive.ok());
  start = std::chrono::steady_clock::now();
  b.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms);
}

/// fakeNvmlCallCount of the instance loaded from `lib` (the test hook of the current fake).
unsigned long long calls(const std::string& lib, const char* fn) {
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) return ~0ull;
  auto count = reinterpret_cast<unsigned long long (*)(const char*)>(dlsym(h, "fakeNvmlCallCount"));
  const unsigned long long n = count ? count(fn) : ~0ull;
  dlclose(h);
  return n;
}

TEST(NvmlMeanwhile, RunsOnTheCallersThreadWhileTheDevicesAreSampled) {
  const std::string lib = testing::isolated_fake_copy("fake_nvml");
  BackendOptions o;
  o.device_timeout = 5s;
  auto b = open_fake(device_scenario("slow-1gpu.json"), 30, o, lib);
  ASSERT_TRUE(b->driver_info().loaded) << b->driver_info().error;
  const std::string processes_fn = testing::bound(*b, "nvmlDeviceGetComputeRunningProcesses_v3");
  (void)tick(*b);

  // GPU 0's temperature query takes 1 s now; the process list is read after it.
  testing::ScopedEnv slow("TRAINMON_FAKE_NVML_TIME_S", "100");
  const auto before = calls(lib, processes_fn.c_str());
  int called = 0;
  std::thread::id on;
  unsigned long long during = 0;
  Tick t;
  b->sample(t.gpus, t.processes, [&] {
    ++called;
    on = std::this_thread::get_id();
    during = calls(lib, processes_fn.c_str());
    EXPECT_TRUE(t.gpus.empty());  // nothing handed out before the wait
  });
  EXPECT_EQ(called, 1);
  EXPECT_EQ(on, std::this_thread::get_id());
  EXPECT_EQ(during, before);  // the device was still inside its temperature query
  EXPECT_EQ(calls(lib, processes_fn.c_str()), before + 1);
  ASSERT_EQ(t.gpus.size(), 1u);
  EXPECT_TRUE(t.gpus[0].responsive.ok());
  EXPECT_EQ(t.gpus[0].temperature_gpu_c.value, 60u);
}

TEST(NvmlMeanwhile, RunsWithoutDevicesAndAfterAFailedLoad) {
  BackendOptions o;
  o.library_path = "/nonexistent/libnvidia-ml.so.1";
  auto b = open_nvml_backend(o);
  ASSERT_FALSE(b->driver_info().loaded);
  int called = 0;
  Tick t;
  b->sample(t.gpus, t.processes, [&] { ++called; });
  EXPECT_EQ(called, 1);
  EXPECT_TRUE(t.gpus.empty());
}

TEST(NvmlMeanwhile, ASlowMeanwhilePastTheHandoverStillHandsOver) {
  // GPU 0 hangs in the shared worker, and the caller's own work takes longer than the whole timeout:
  // the handover still happens (GPUs 1 and 2 on workers of their own), GPU 0 reports a timeout and
  // the next tick does not wait for it.
  const std::string lib = testing::isolated_fake_copy("fake_nvml");
  BackendOptions o;
  o.device_timeout = 300ms;
  o.watch_events = false;
  o.collect_pcie_throughput = false;
  auto b = open_fake(device_scenario("hang-shared-3gpu.json"), 30, o, lib);
  ASSERT_TRUE(b->driver_info().loaded) << b->driver_info().error;
  warm_up(*b, 3);
  testing::ScopedEnv later("TRAINMON_FAKE_NVML_TIME_S", "100");  // GPU 0's temperature hangs 3 s
  Tick t;
  b->sample(t.gpus, t.processes, [] { std::this_thread::sleep_for(400ms); });
  ASSERT_EQ(t.gpus.size(), 3u);
  EXPECT_EQ(t.gpus[0].responsive.status, ReadStatus::timeout);
  EXPECT_EQ(as_nvml(*b).devices_on_shared_worker(), 0u);  // handed over, each on its own now
  // GPUs 1 and 2 started on their workers after the deadline: give them an interval to finish.
  std::this_thread::sleep_for(200ms);
  auto start = std::chrono::steady_clock::now();
  auto next = tick(*b);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 250ms);
  EXPECT_EQ(next.gpus[0].responsive.status, ReadStatus::timeout);
  EXPECT_TRUE(next.gpus[1].responsive.ok());
  EXPECT_TRUE(next.gpus[2].responsive.ok());
  EXPECT_EQ(next.gpus[2].temperature_gpu_c.value, 62u);
  b.reset();
}

}  // namespace
}  // namespace trainmon
