// SPDX-License-Identifier: Apache-2.0
#include "trainmon/sampler/gpu_process_join.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <tuple>

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
  EXPECT_EQ(ns.self_depth, 0u);
  // The host's /proc seen from a child namespace (unshare --pid without --mount-proc): NSpid has two
  // entries (the tree's numbering is an ancestor's), pid 1 says initial, so NVML's numbers are ours.
  t = ns_tree("ancestor", "pid:[4026531836]", "pid:[4026532179]", "NSpid:\t9000\t3");
  ns = detect_proc_pid_namespace(t);
  EXPECT_EQ(ns.initial, true);
  EXPECT_FALSE(ns.own);          // kill(2) numbers differ from the tree's: no probing
  EXPECT_EQ(ns.self_depth, 1u);  // one level below: join rule 5 maps through NSpid
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

// ---- rule 5 (issue 33): trainmon one PID namespace below the /proc it reads, NSpid both ways ----

namespace {
/// A process of trainmon's namespace seen in the host's /proc: NSpid {host pid, pid in ours}.
ProcessSample ours(std::uint32_t host_pid, std::uint32_t own_pid, double start_s) {
  ProcessSample p = host(host_pid, start_s);
  p.nspid = {host_pid, own_pid};
  return p;
}
ProcessSample outside(std::uint32_t host_pid, double start_s, const char* comm) {
  ProcessSample p = host(host_pid, start_s);
  p.nspid = {host_pid};
  p.comm = comm;
  return p;
}
}  // namespace

TEST(JoinGpuProcesses, NspidMapsPidsNumberedInOurNamespaceAndKeepsHostNumbers) {
  for (const std::optional<bool> initial : {std::optional<bool>(true), std::optional<bool>(false)}) {
    GpuJoinMemory mem;
    GpuJoinOptions o;
    o.host_pid_namespace = initial;  // the host's /proc, or an intermediate namespace's
    o.own_level = 1;
    // The driver lists: 2 (our namespace's number of host 5002; host pid 2 is kthreadd), 5003 (a
    // host number of a process of ours), 7000 (a host number of a process outside), 4 (our number
    // of a process that started after the first sighting: not it), 9 (nothing anywhere).
    std::vector<GpuProcessSample> g = {gpu(0, 2, 100), gpu(1, 5003, 200), gpu(0, 7000, 300), gpu(1, 4, 400),
                                       gpu(0, 9, 500)};
    g[0].sm_util_pct = Reading<unsigned>::of(40);
    // 6002 is another container's process whose number there is 2 too: not ours, never mapped.
    std::vector<ProcessSample> h = {outside(2, 0.5, "kthreadd"),  ours(5002, 2, 900),  ours(5003, 3, 901),
                                    outside(7000, 100, "python"), ours(5004, 4, 1003), ours(6002, 2, 800)};
    o.own_namespace_pids = {5002, 5003, 5004};
    for (double now : {1000.0, 1001.0}) {  // the same on the next tick (bound by start time)
      SCOPED_TRACE(::testing::Message() << "initial " << initial.value_or(false) << " at " << now);
      for (auto& p : h) p.gpu_indices.clear(), p.gpu_memory_bytes = {};
      std::vector<GpuProcessSample> t = g;
      join_gpu_processes(t, h, mem, now, o);
      EXPECT_EQ(t[0].pid, 5002u);  // mapped: carries the /proc number from here on
      EXPECT_EQ(t[0].host, HostVisibility::visible);
      EXPECT_EQ(t[0].sm_util_pct.value, 40u);  // its utilisation kept
      EXPECT_TRUE(h[0].gpu_indices.empty()) << "kthreadd is never the GPU process";
      EXPECT_EQ(h[1].gpu_indices, (std::vector<unsigned>{0}));
      EXPECT_EQ(h[1].gpu_memory_bytes.value, 100u);
      if (initial == true) {  // host numbers are /proc's numbers only in the host's /proc
        EXPECT_EQ(t[1].pid, 5003u);
        EXPECT_EQ(t[1].host, HostVisibility::visible);
        EXPECT_EQ(t[2].host, HostVisibility::visible);
        EXPECT_EQ(h[3].gpu_indices, (std::vector<unsigned>{0}));
        EXPECT_EQ(t[4].host, HostVisibility::exited);
      } else {
        EXPECT_EQ(t[1].host, HostVisibility::not_visible);
        EXPECT_EQ(t[2].host, HostVisibility::not_visible);
        EXPECT_EQ(t[4].host, HostVisibility::not_visible);
      }
      EXPECT_EQ(t[3].pid, 4u);  // refused by the start-time rule: not renumbered, not attributed
      EXPECT_NE(t[3].host, HostVisibility::visible);
      EXPECT_TRUE(h[4].gpu_indices.empty());
      EXPECT_TRUE(h[5].gpu_indices.empty()) << "another container's pid 2";
    }
  }
}

TEST(JoinGpuProcesses, NspidIsNotUsedInOurOwnNamespacesProc) {
  // Level 0 (trainmon reads its own namespace's /proc): numbers are matched as /proc has them.
  GpuJoinMemory mem;
  GpuJoinOptions o;
  o.host_pid_namespace = true;
  std::vector<GpuProcessSample> g = {gpu(0, 2, 1)};
  std::vector<ProcessSample> h = {outside(2, 0.5, "kthreadd"), ours(5002, 2, 900)};
  join_gpu_processes(g, h, mem, 1000.0, o);
  EXPECT_EQ(g[0].pid, 2u);
  EXPECT_EQ(h[1].gpu_indices.size(), 0u);
}

TEST(ProcPidsByNspid, FindsTheProcessesOfOurNamespaceByTheirNumberThere) {
  const auto root = std::filesystem::temp_directory_path() / ("trainmon-nspid-" + std::to_string(::getpid()));
  // (pid, NSpid, ns/pid link): 6000 and 6002 are another namespace's at the same depth.
  for (auto [pid, nspid, ns] : {std::tuple{"1", "1", "pid:[4026531836]"},
                                {"2", "2", "pid:[4026531836]"},
                                {"5002", "5002\t2", "pid:[111]"},
                                {"5003", "5003\t3", "pid:[111]"},
                                {"6000", "6000\t7", "pid:[222]"},
                                {"6002", "6002\t2", "pid:[222]"}}) {
    std::filesystem::create_directories(root / pid / "ns");
    std::ofstream(root / pid / "status") << "Name:\tx\nNSpid:\t" << nspid << "\nUid:\t0\n";
    std::filesystem::create_symlink(ns, root / pid / "ns" / "pid");
  }
  std::filesystem::create_directories(root / "self" / "ns");
  std::filesystem::create_symlink("pid:[111]", root / "self" / "ns" / "pid");
  EXPECT_EQ(proc_pids_by_nspid(root.string(), 1, {2, 3, 9}), (std::vector<std::uint32_t>{5002, 5003}));
  EXPECT_TRUE(proc_pids_by_nspid(root.string(), 1, {7}).empty());  // 6000 is not ours
  EXPECT_TRUE(proc_pids_by_nspid(root.string(), 0, {2}).empty());
  EXPECT_TRUE(proc_pids_by_nspid((root / "missing").string(), 1, {2}).empty());
  std::filesystem::remove_all(root);
}
