// SPDX-License-Identifier: Apache-2.0
#include "trainmon/sampler/gpu_process_join.h"

#include <gtest/gtest.h>

using namespace trainmon;

namespace {
GpuProcessSample gpu(unsigned index, std::uint32_t pid, std::uint64_t mem) {
  GpuProcessSample g;
  g.gpu_index = index;
  g.pid = pid;
  g.used_memory_bytes = Reading<std::uint64_t>::of(mem);
  return g;
}
ProcessSample host(std::uint32_t pid, double start_s, char state = 'S') {
  ProcessSample p;
  p.pid = pid;
  p.start_time_ticks = static_cast<std::uint64_t>(start_s * 100);
  p.start_time_boot_s = start_s;
  p.state = state;
  p.comm = "python";
  return p;
}
}  // namespace

TEST(JoinGpuProcesses, VisibleZombieAndNotVisible) {
  GpuJoinMemory mem;
  std::vector<GpuProcessSample> g = {gpu(0, 100, 1000), gpu(1, 100, 500), gpu(0, 200, 10), gpu(1, 4242, 7)};
  std::vector<ProcessSample> h = {host(100, 50), host(200, 60, 'Z')};
  const auto s = join_gpu_processes(g, h, mem, 1000.0);
  EXPECT_EQ(g[0].host, HostVisibility::visible);
  EXPECT_EQ(g[1].host, HostVisibility::visible);
  EXPECT_EQ(g[2].host, HostVisibility::zombie);
  EXPECT_EQ(g[3].host, HostVisibility::not_visible);  // another PID namespace or exited: kept, marked
  EXPECT_EQ(s.visible, 2u);
  EXPECT_EQ(s.zombie, 1u);
  EXPECT_EQ(s.not_visible, 1u);
  EXPECT_EQ(g[0].process_name, Reading<std::string>::of("python"));  // filled from comm
  EXPECT_EQ(h[0].gpu_indices, (std::vector<unsigned>{0, 1}));
  EXPECT_EQ(h[0].gpu_memory_bytes, Reading<std::uint64_t>::of(1500));
}

TEST(JoinGpuProcesses, LocalProcessStartedAfterFirstSightingIsNotTheGpuProcess) {
  GpuJoinMemory mem;
  std::vector<GpuProcessSample> g = {gpu(0, 300, 1)};
  std::vector<ProcessSample> none;
  join_gpu_processes(g, none, mem, 1000.0);  // listed by NVML, not visible here (container)
  EXPECT_EQ(g[0].host, HostVisibility::not_visible);
  // Two ticks later an unrelated local process gets pid 300 (started at 1001.5 s).
  std::vector<ProcessSample> h = {host(300, 1001.5)};
  const auto s = join_gpu_processes(g, h, mem, 1002.0);
  EXPECT_EQ(g[0].host, HostVisibility::not_visible);
  EXPECT_EQ(s.pid_reused, 1u);
  EXPECT_TRUE(h[0].gpu_indices.empty());  // never attributed
}

TEST(JoinGpuProcesses, BoundStartTimeCatchesReuseAfterExit) {
  GpuJoinMemory mem;
  std::vector<GpuProcessSample> g = {gpu(0, 400, 1)};
  std::vector<ProcessSample> h = {host(400, 10)};
  join_gpu_processes(g, h, mem, 1000.0);
  EXPECT_EQ(g[0].host, HostVisibility::visible);
  // NVML still lists 400 (stale context) but the local 400 is now a different process that started
  // before the *next* tick's time yet after the first sighting + tolerance.
  std::vector<ProcessSample> h2 = {host(400, 1000.5)};
  join_gpu_processes(g, h2, mem, 1001.0);
  EXPECT_EQ(g[0].host, HostVisibility::not_visible);  // start time differs from the bound one
}

TEST(JoinGpuProcesses, TolerancesAndForgetting) {
  GpuJoinMemory mem;
  std::vector<GpuProcessSample> g = {gpu(0, 500, 1)};
  // Started 0.5 s after our first sighting: within the 1 s tolerance (NVML call vs /proc read).
  std::vector<ProcessSample> h = {host(500, 1000.5)};
  join_gpu_processes(g, h, mem, 1000.0);
  EXPECT_EQ(g[0].host, HostVisibility::visible);
  // Gone from NVML for longer than forget_after_s: the entry is dropped ...
  std::vector<GpuProcessSample> empty;
  join_gpu_processes(empty, h, mem, 1020.0);
  EXPECT_TRUE(mem.entries.empty());
  // ... and a new GPU process at the same pid is judged afresh.
  std::vector<ProcessSample> h2 = {host(500, 1019.0)};
  join_gpu_processes(g, h2, mem, 1020.0);
  EXPECT_EQ(g[0].host, HostVisibility::visible);
}

TEST(JoinGpuProcesses, ChildPidNamespaceMeansNothingIsVisible) {
  GpuJoinMemory mem;
  GpuJoinOptions o;
  o.host_pid_namespace = false;
  std::vector<GpuProcessSample> g = {gpu(0, 1, 1)};
  std::vector<ProcessSample> h = {host(1, 0)};
  join_gpu_processes(g, h, mem, 1000.0, o);
  EXPECT_EQ(g[0].host, HostVisibility::not_visible);
  EXPECT_FALSE(detect_host_pid_namespace("/nonexistent").has_value());
}
