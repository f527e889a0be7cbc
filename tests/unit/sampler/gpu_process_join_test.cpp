// SPDX-License-Identifier: Apache-2.0
#include "trainmon/sampler/gpu_process_join.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

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
  // pid 1 is listed by NVML (a host pid) and exists here (our namespace's init); pid 4242 is listed
  // and does not exist here (the job's own process under its host pid, or one that exited).
  std::vector<GpuProcessSample> g = {gpu(0, 1, 1), gpu(0, 4242, 7), gpu(1, 77, 9)};
  g[0].process_name = Reading<std::string>::of("python");      // NVML read it from *our* /proc/1
  g[2].process_name = Reading<std::string>::of("trainer.py");  // another name than the local 77's
  std::vector<ProcessSample> h = {host(1, 0), host(77, 0)};
  const auto s = join_gpu_processes(g, h, mem, 1000.0, o);
  EXPECT_EQ(g[0].host, HostVisibility::not_visible);
  EXPECT_EQ(g[1].host, HostVisibility::not_visible);  // never "exited": we cannot see the host
  EXPECT_EQ(g[2].host, HostVisibility::not_visible);
  EXPECT_EQ(s.not_visible, 3u);
  EXPECT_EQ(s.exited, 0u);
  EXPECT_EQ(g[0].process_name.status, ReadStatus::not_available);  // the local pid 1's name: dropped
  EXPECT_EQ(g[2].process_name, Reading<std::string>::of("trainer.py"));
  for (const auto& p : h) {  // nothing attributed to the local processes with those numbers
    EXPECT_TRUE(p.gpu_indices.empty());
    EXPECT_FALSE(p.gpu_memory_bytes.ok());
  }
}

TEST(JoinGpuProcesses, InitialNamespaceMissingOrReusedPidHasExited) {
  GpuJoinMemory mem;
  GpuJoinOptions o;
  o.host_pid_namespace = true;
  std::vector<GpuProcessSample> g = {gpu(0, 600, 1), gpu(0, 601, 1), gpu(0, 602, 1)};
  std::vector<ProcessSample> h = {host(601, 10), host(602, 10, 'X')};
  auto s = join_gpu_processes(g, h, mem, 1000.0, o);
  EXPECT_EQ(g[0].host, HostVisibility::exited);  // not in a /proc that shows every process
  EXPECT_EQ(g[1].host, HostVisibility::visible);
  EXPECT_EQ(g[2].host, HostVisibility::exited);  // state X: dead
  EXPECT_EQ(s.exited, 2u);
  // 601 exits and an unrelated "bash" takes the number; NVML's name came from that bash.
  ProcessSample bash = host(601, 1000.5);
  bash.comm = "bash";
  bash.cmdline = "/bin/bash -l";
  std::vector<ProcessSample> h2 = {bash};
  g[1].process_name = Reading<std::string>::of("/bin/bash");
  s = join_gpu_processes(g, h2, mem, 1001.0, o);
  EXPECT_EQ(g[1].host, HostVisibility::exited);
  EXPECT_EQ(s.pid_reused, 1u);
  EXPECT_EQ(g[1].process_name.status, ReadStatus::not_available);
  EXPECT_TRUE(h2[0].gpu_indices.empty());
}

TEST(JoinGpuProcesses, ProbeTellsHiddenFromGone) {
  // hidepid: a pid missing from /proc that kill(2) still finds exists, hidden: not_visible, not gone.
  GpuJoinMemory mem;
  GpuJoinOptions o;
  o.host_pid_namespace = true;
  o.probe_missing_pids = true;
  const auto self = static_cast<std::uint32_t>(::getpid());
  std::vector<GpuProcessSample> g = {gpu(0, self, 1), gpu(0, 0x7ffffff0u, 1)};  // the second: > pid_max
  std::vector<ProcessSample> none;
  const auto s = join_gpu_processes(g, none, mem, 1000.0, o);
  EXPECT_EQ(g[0].host, HostVisibility::not_visible);
  EXPECT_EQ(g[1].host, HostVisibility::exited);
  EXPECT_EQ(s.not_visible, 1u);
  EXPECT_EQ(s.exited, 1u);
}

TEST(JoinGpuProcesses, UnknownNamespaceNeverCallsAPidGone) {
  GpuJoinMemory mem;
  std::vector<GpuProcessSample> g = {gpu(0, 4242, 1)};
  std::vector<ProcessSample> none;
  join_gpu_processes(g, none, mem, 1000.0);  // host_pid_namespace nullopt (a fixture tree)
  EXPECT_EQ(g[0].host, HostVisibility::not_visible);
}

namespace {
/// A /proc-like tree with `1/ns/pid` -> init_link and `self/status` holding `nspid`.
std::string ns_tree(const std::string& name, const char* init_link, const char* self_link,
                    const char* nspid) {
  const auto root = std::filesystem::temp_directory_path() / ("tm-ns-" + name + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "1" / "ns");
  std::filesystem::create_directories(root / "self" / "ns");
  if (init_link) std::filesystem::create_symlink(init_link, root / "1" / "ns" / "pid");
  if (self_link) std::filesystem::create_symlink(self_link, root / "self" / "ns" / "pid");
  if (nspid) std::ofstream(root / "self" / "status") << "Name:\tx\n" << nspid << "\nUid:\t0\n";
  return root.string();
}
}  // namespace

TEST(DetectProcPidNamespace, InitialChildAndUnknown) {
  // The host: pid 1's namespace is the initial one, NSpid has one entry.
  auto t = ns_tree("host", "pid:[4026531836]", "pid:[4026531836]", "NSpid:\t4711");
  auto ns = detect_proc_pid_namespace(t);
  EXPECT_EQ(ns.initial, true);
  EXPECT_TRUE(ns.own);
  // A container's /proc (unshare --pid --mount-proc): another inode, our own tree.
  t = ns_tree("child", "pid:[4026532179]", "pid:[4026532179]", "NSpid:\t3");
  ns = detect_proc_pid_namespace(t);
  EXPECT_EQ(ns.initial, false);
  EXPECT_TRUE(ns.own);
  // The host's /proc seen from a child namespace (unshare --pid without --mount-proc): NSpid has two
  // entries (the tree's numbering is an ancestor's), pid 1 says initial, so NVML's numbers are ours.
  t = ns_tree("ancestor", "pid:[4026531836]", "pid:[4026532179]", "NSpid:\t9000\t3");
  ns = detect_proc_pid_namespace(t);
  EXPECT_EQ(ns.initial, true);
  EXPECT_FALSE(ns.own);  // kill(2) numbers differ from the tree's: no probing
  // Pid 1's link unreadable (not root): self decides only for our own tree.
  t = ns_tree("noperm1", nullptr, "pid:[4026532179]", "NSpid:\t3");
  EXPECT_EQ(detect_proc_pid_namespace(t).initial, false);
  t = ns_tree("noperm2", nullptr, "pid:[4026532179]", "NSpid:\t9000\t3");
  EXPECT_FALSE(detect_proc_pid_namespace(t).initial.has_value());
  EXPECT_FALSE(detect_proc_pid_namespace("/nonexistent").initial.has_value());
  EXPECT_FALSE(detect_proc_pid_namespace("/nonexistent").own);
}

TEST(DetectProcPidNamespace, LiveProcAgreesWithTheKernel) {
  char buf[64] = {};
  const ssize_t n = ::readlink("/proc/self/ns/pid", buf, sizeof buf - 1);
  if (n <= 0) GTEST_SKIP() << "no /proc/self/ns/pid";
  const auto ns = detect_proc_pid_namespace("/proc");
  EXPECT_TRUE(ns.own);  // our own /proc
  ASSERT_TRUE(ns.initial.has_value());
  EXPECT_EQ(*ns.initial, std::string_view(buf, static_cast<std::size_t>(n)) == "pid:[4026531836]");
}
