// SPDX-License-Identifier: Apache-2.0
// A driver that hangs slows nothing else: nvmlInit, the device count, the handle look-ups, the event
// set and each device's event registration run on workers under deadlines, so the caller (its host
// sampling, its signals) never waits for them longer than BackendOptions says; a GPU that hangs from
// the start never stretches a tick, and a shutdown never waits for a call known to hang. Through
// open_nvml_backend() into private copies of the fake driver (hang_ms rules, docs/fake-nvml.md): the
// hung calls outlive each test. Short timeouts keep every test under a few seconds.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "nvml_test_util.h"

namespace trainmon {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::as_nvml;
using testing::open_fake;
using testing::tick;

/// Three GPUs; `errors` is the scenario's error-rule array (JSON).
std::string three_gpus(const std::string& errors) {
  std::string devices;
  for (int i = 0; i < 3; ++i)
    devices += (i ? "," : "") + std::string(R"({"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-h-)") +
               std::to_string(i) + R"(", "memory_total": 85520809984, "supported_event_types": "0x1F",
                  "metrics": {"utilization_gpu": 9)" +
               std::to_string(i) + R"(, "memory_used": 1073741824}})";
  static int n = 0;
  const auto path = std::filesystem::temp_directory_path() /
                    ("trainmon-startup-" + std::to_string(::getpid()) + "-" + std::to_string(n++) + ".json");
  std::ofstream(path) << R"({"name": "startup", "devices": [)" + devices +
                             R"(], "processes": [{"pid": 7001, "gpu": 0, "used_memory": 1073741824}],
                             "events": [{"t": 1, "gpu": 2, "type": "xid", "xid": 79}], "errors": )" +
                             errors + "}";
  return path.string();
}

BackendOptions quick(std::chrono::milliseconds device_timeout, std::chrono::milliseconds tick_wait = 0ms) {
  BackendOptions o;
  o.device_timeout = device_timeout;
  o.tick_wait = tick_wait;
  o.init_wait = device_timeout;
  o.collect_pcie_throughput = false;
  return o;
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

TEST(NvmlStartup, HungInitLeavesTheBackendStartingAndTheCallerFree) {
  const std::string lib = testing::isolated_fake_copy("fake_nvml");
  const std::string scn = three_gpus(R"([{"function": "nvmlInit_v2", "hang_ms": 1200}])");
  auto start = Clock::now();
  auto b = open_fake(scn, 30, quick(150ms), lib);
  EXPECT_LT(seconds_since(start), 0.6);  // init_wait, not the hang
  DriverInfo d = b->driver_info();
  EXPECT_FALSE(d.loaded);
  EXPECT_TRUE(d.starting);
  EXPECT_NE(d.error.find("NVML is not answering: nvmlInit_v2 has not returned"), std::string::npos)
      << d.error;
  EXPECT_EQ(b->device_count(), 0u);
  // sample() does not wait for it: the caller's own work runs, no GPU is reported.
  bool host_read = false;
  std::vector<GpuSample> gpus;
  std::vector<GpuProcessSample> procs;
  start = Clock::now();
  b->sample(gpus, procs, [&] { host_read = true; });
  EXPECT_LT(seconds_since(start), 0.1);
  EXPECT_TRUE(host_read);
  EXPECT_TRUE(gpus.empty());
  // Once nvmlInit returns, the GPUs join at the next ticks.
  start = Clock::now();
  while (!b->driver_info().loaded && seconds_since(start) < 10) {
    (void)tick(*b);
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(b->driver_info().loaded) << b->driver_info().error;
  EXPECT_FALSE(b->driver_info().starting);
  testing::Tick t;
  for (int i = 0; i < 20 && (t.gpus.size() != 3 || !t.gpus[2].responsive.ok()); ++i) t = tick(*b);
  ASSERT_EQ(t.gpus.size(), 3u);
  EXPECT_EQ(t.gpus[2].utilization_gpu_pct.value, 92u);
  EXPECT_EQ(t.processes.size(), 1u);
}

TEST(NvmlStartup, StopRequestedEndsTheWaitForInitAndTheShutdownWaitsForNothing) {
  const std::string lib = testing::isolated_fake_copy("fake_nvml");
  const std::string scn = three_gpus(R"([{"function": "nvmlInit_v2", "hang_ms": 5000}])");
  std::atomic<bool> stop{false};
  BackendOptions o = quick(100ms);  // inside nvmlInit for longer than this: hung
  o.init_wait = 20000ms;            // a one-shot command's patience
  o.stop_requested = [&] { return stop.load(); };
  std::thread signal([&] {
    std::this_thread::sleep_for(150ms);
    stop = true;
  });
  auto start = Clock::now();
  auto b = open_fake(scn, 30, o, lib);
  signal.join();
  EXPECT_LT(seconds_since(start), 0.5);
  EXPECT_TRUE(b->driver_info().starting);
  start = Clock::now();
  b.reset();  // the start-up worker is inside nvmlInit: detached, not waited for
  EXPECT_LT(seconds_since(start), 0.1);
}

TEST(NvmlStartup, GpuHungFromTheStartNeverStretchesATick) {
  // GPU 1 hangs in every call, its handle look-up included, from the first one on.
  const std::string lib = testing::isolated_fake_copy("fake_nvml");
  const std::string scn = three_gpus(R"([{"function": "*", "gpu": 1, "hang_ms": 3000}])");
  auto start = Clock::now();
  auto b = open_fake(scn, 30, quick(400ms, 120ms), lib);
  EXPECT_LT(seconds_since(start), 0.3);  // no handle look-up in the constructor
  ASSERT_TRUE(b->driver_info().loaded) << b->driver_info().error;
  bool timed_out = false;
  for (int i = 0; i < 8; ++i) {
    start = Clock::now();
    auto t = tick(*b);
    EXPECT_LT(seconds_since(start), 0.12 + 0.15) << "tick " << i;
    ASSERT_EQ(t.gpus.size(), 3u);
    EXPECT_TRUE(t.gpus[0].responsive.ok()) << "tick " << i;
    EXPECT_TRUE(t.gpus[2].responsive.ok()) << "tick " << i;
    EXPECT_EQ(t.gpus[2].utilization_gpu_pct.value, 92u);
    const auto st = t.gpus[1].responsive.status;
    // Younger than device_timeout: not collected yet; older: not responding ("timeout").
    EXPECT_TRUE(st == ReadStatus::not_collected || st == ReadStatus::timeout) << read_status_name(st);
    if (st == ReadStatus::timeout) {
      timed_out = true;
      EXPECT_EQ(t.gpus[1].process_count.status, ReadStatus::timeout);  // its processes unknown
    } else {
      EXPECT_FALSE(timed_out) << "a GPU that was not responding does not become 'not collected'";
    }
    ASSERT_EQ(t.processes.size(), 1u);
    EXPECT_EQ(t.processes[0].pid, 7001u);
    std::this_thread::sleep_for(40ms);
  }
  EXPECT_TRUE(timed_out);
  start = Clock::now();
  b.reset();  // GPU 1's worker is known to be hung: nothing waits for it
  EXPECT_LT(seconds_since(start), 0.15);
}

TEST(NvmlStartup, HungEventRegistrationIsOnlyThatGpusProblem) {
  const std::string lib = testing::isolated_fake_copy("fake_nvml");
  const std::string scn =
      three_gpus(R"([{"function": "nvmlDeviceRegisterEvents", "gpu": 2, "hang_ms": 3000}])");
  auto b = open_fake(scn, 30, quick(300ms, 100ms), lib);
  ASSERT_TRUE(b->driver_info().loaded);
  auto start = Clock::now();
  auto t = tick(*b);  // GPU 2's values come before its registration
  EXPECT_LT(seconds_since(start), 0.25);
  ASSERT_EQ(t.gpus.size(), 3u);
  EXPECT_TRUE(t.gpus[2].responsive.ok());
  EXPECT_EQ(as_nvml(*b).events_status(), "");  // GPU 0 and 1 registered
  std::this_thread::sleep_for(350ms);
  t = tick(*b);
  EXPECT_TRUE(t.gpus[0].responsive.ok());
  EXPECT_TRUE(t.gpus[1].responsive.ok());
  EXPECT_EQ(t.gpus[2].responsive.status, ReadStatus::timeout);  // stuck in the registration
}

TEST(NvmlStartup, HungEventSetCreationHoldsUpNoGpu) {
  const std::string lib = testing::isolated_fake_copy("fake_nvml");
  const std::string scn = three_gpus(R"([{"function": "nvmlEventSetCreate", "hang_ms": 3000}])");
  auto start = Clock::now();
  auto b = open_fake(scn, 30, quick(300ms, 100ms), lib);
  EXPECT_LT(seconds_since(start), 0.6);
  ASSERT_TRUE(b->driver_info().loaded) << b->driver_info().error;
  auto t = tick(*b);
  ASSERT_EQ(t.gpus.size(), 3u);
  for (const auto& g : t.gpus) EXPECT_TRUE(g.responsive.ok()) << "GPU " << g.index;
  EXPECT_NE(as_nvml(*b).events_status().find("not watched yet"), std::string::npos)
      << as_nvml(*b).events_status();
  start = Clock::now();
  b.reset();
  EXPECT_LT(seconds_since(start), 0.15);
}

TEST(NvmlStartup, EventStatusSaysWhyNothingIsWatched) {
  {
    auto b = open_fake(testing::device_scenario("zero-gpus.json"), 30, quick(300ms));
    EXPECT_EQ(as_nvml(*b).events_status(), "events not watched: no devices");
  }
  std::string scn = three_gpus("[]");
  {
    // Registration waits for each GPU's first tick; none supports the wanted types.
    std::ifstream in(scn);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (auto at = text.find("\"0x1F\""); at != std::string::npos; at = text.find("\"0x1F\""))
      text.replace(at, 6, "\"0x4\"");  // PState only
    std::ofstream(scn) << text;
  }
  auto b = open_fake(scn, 30, quick(300ms));
  EXPECT_NE(as_nvml(*b).events_status().find("not watched yet"), std::string::npos);
  (void)tick(*b);
  EXPECT_EQ(as_nvml(*b).events_status(), "events not watched: no device supports Xid/ECC/clock events");
}

TEST(NvmlStartup, StopRequestedCutsATickShort) {
  const std::string lib = testing::isolated_fake_copy("fake_nvml");
  const std::string scn =
      three_gpus(R"([{"function": "nvmlDeviceGetTemperature", "gpu": 1, "hang_ms": 3000}])");
  std::atomic<bool> stop{false};
  BackendOptions o = quick(2000ms);  // a tick would wait 2 s for GPU 1
  o.stop_requested = [&] { return stop.load(); };
  auto b = open_fake(scn, 30, o, lib);
  ASSERT_TRUE(b->driver_info().loaded);
  std::thread signal([&] {
    std::this_thread::sleep_for(150ms);
    stop = true;
  });
  auto start = Clock::now();
  auto t = tick(*b);
  signal.join();
  EXPECT_LT(seconds_since(start), 0.45);
  ASSERT_EQ(t.gpus.size(), 3u);
  EXPECT_TRUE(t.gpus[0].responsive.ok());
  EXPECT_EQ(t.gpus[1].responsive.status, ReadStatus::not_collected);  // 150 ms < device_timeout
}

TEST(NvmlStartup, ALateAnswerIsTheNextTicksSample) {
  // GPU 1 takes 250 ms a tick, longer than the tick's wait (100 ms) but well inside device_timeout:
  // it is never "not responding", and its answers show one tick late instead of never.
  const std::string lib = testing::isolated_fake_copy("fake_nvml");
  const std::string scn =
      three_gpus(R"([{"function": "nvmlDeviceGetTemperature", "gpu": 1, "hang_ms": 250}])");
  auto b = open_fake(scn, 30, quick(2000ms, 100ms), lib);
  ASSERT_TRUE(b->driver_info().loaded);
  int answered = 0;
  for (int i = 0; i < 8; ++i) {
    auto start = Clock::now();
    auto t = tick(*b);
    EXPECT_LT(seconds_since(start), 0.25);
    ASSERT_EQ(t.gpus.size(), 3u);
    EXPECT_NE(t.gpus[1].responsive.status, ReadStatus::timeout) << "tick " << i;
    if (t.gpus[1].responsive.ok()) {
      ++answered;
      EXPECT_EQ(t.gpus[1].utilization_gpu_pct.value, 91u);
    }
    std::this_thread::sleep_for(200ms);  // a 300 ms interval, as a loop would sleep
  }
  EXPECT_GE(answered, 5);
}

}  // namespace
}  // namespace trainmon
