// SPDX-License-Identifier: Apache-2.0
// Sampler::sample reads the host-wide values while the GPU workers run (DeviceBackend::sample's
// meanwhile) and the processes after: GPUs through the real loader into the fake driver, the host
// from the committed fixture trees, so every rate is exact.
#include <gtest/gtest.h>

#include <filesystem>

#include "trainmon/sampler/sampler.h"
#include "unit/device/nvml_test_util.h"
#include "unit/host/host_fixture_util.h"

namespace trainmon {
namespace {

namespace fs = std::filesystem;
using testing::ScopedEnv;
using trainmon::test::find_pid;
using trainmon::test::host_fixture;
using trainmon::test::point_to;
using trainmon::test::TempDir;

constexpr double kEps = 1e-9;

TEST(SamplerOverlap, HostRatesAndGpusFromOneTick) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  point_to(tmp.path(), host_fixture("machine/tick1"));
  SamplerOptions o;
  o.backend.library_path = TRAINMON_FAKE_NVML_PATH;
  o.backend.collect_pcie_throughput = false;
  o.host.proc_root = tmp.path() + "/proc";
  o.host.sys_root = tmp.path() + "/sys";
  o.host.all_processes = true;
  o.watch_pids = {100};
  ScopedEnv scenario("TRAINMON_FAKE_NVML_SCENARIO", testing::device_scenario("events-2gpu.json"));
  ScopedEnv frozen("TRAINMON_FAKE_NVML_TIME_S", "10");
  Sampler sampler(o);
  ASSERT_TRUE(sampler.driver_info().loaded) << sampler.driver_info().error;

  Snapshot first = sampler.sample();
  ASSERT_EQ(first.gpus.size(), 2u);
  EXPECT_EQ(first.host.interval_s, 0);
  ASSERT_NE(find_pid(first.processes, 100), nullptr);
  EXPECT_EQ(find_pid(first.processes, 100)->cpu_pct.status, ReadStatus::not_available);
  EXPECT_EQ(first.events.size(), 3u);  // polled in the tick (events-2gpu: Xid 79, Xid 48, DBE)

  point_to(tmp.path(), host_fixture("machine/tick2"));
  Snapshot s = sampler.sample();
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_TRUE(s.gpus[0].responsive.ok());
  EXPECT_EQ(s.gpus[0].temperature_gpu_c.value, 60u);
  // Host-wide rates over the fixture's 2 s, read while the GPUs were sampled.
  EXPECT_DOUBLE_EQ(s.host.interval_s, 2.0);
  ASSERT_EQ(s.host.cpus.size(), 4u);
  EXPECT_NEAR(s.host.cpus[0].times.busy_pct, 75, kEps);
  EXPECT_NEAR(s.host.cpu_total.idle_pct, 40, kEps);
  ASSERT_EQ(s.host.disks.size(), 3u);
  EXPECT_DOUBLE_EQ(s.host.disks[0].read_bytes_per_s, 1024000.0);
  ASSERT_EQ(s.host.nets.size(), 3u);
  EXPECT_DOUBLE_EQ(s.host.nets[1].rx_bytes_per_s, 10000.0);
  EXPECT_EQ(s.host.hostname, "gpubox");
  // The processes, read after the GPUs (they need the GPU pids), against the same uptime.
  EXPECT_EQ(s.host.process_count, 11u);
  const ProcessSample* p = find_pid(s.processes, 100);
  ASSERT_NE(p, nullptr);
  EXPECT_NEAR(*p->cpu_pct, 120.0, kEps);
  EXPECT_DOUBLE_EQ(*p->read_bytes_per_s, 1000000.0);
  EXPECT_TRUE(s.events.empty());
}

TEST(SamplerOverlap, HostOnlyWithoutGpus) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  point_to(tmp.path(), host_fixture("machine/tick1"));
  SamplerOptions o;
  o.collect_gpus = false;
  o.host.proc_root = tmp.path() + "/proc";
  o.host.sys_root = tmp.path() + "/sys";
  o.watch_pids = {100};
  Sampler sampler(o);
  (void)sampler.sample();
  point_to(tmp.path(), host_fixture("machine/tick2"));
  Snapshot s = sampler.sample();
  EXPECT_TRUE(s.gpus.empty());
  EXPECT_DOUBLE_EQ(s.host.interval_s, 2.0);
  EXPECT_NEAR(s.host.cpus[0].times.busy_pct, 75, kEps);
  ASSERT_EQ(s.processes.size(), 1u);  // only the watched pid without all_processes
  EXPECT_NEAR(*s.processes[0].cpu_pct, 120.0, kEps);
}

}  // namespace
}  // namespace trainmon
