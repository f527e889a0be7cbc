// SPDX-License-Identifier: Apache-2.0
// A 256-CPU machine with a thousand processes, generated at test time.
#include <gtest/gtest.h>

#include "host_fixture_util.h"
#include "synthetic_proc_tree.h"
#include "trainmon/host/host_collector.h"
#include "trainmon/host/process_tree.h"

using namespace trainmon;
using namespace trainmon::test;

namespace {
/// Every process of the synthetic tree under `dir`.
HostOptions all_processes_of(const TempDir& dir) {
  HostOptions o;
  o.all_processes = true;
  o.proc_root = dir.path() + "/proc";
  o.sys_root = dir.path() + "/sys";
  return o;
}
}  // namespace

TEST(HostSynthetic, TwoHundredFiftySixCpusAndThreeHundredProcesses) {
  TempDir a, b;
  ASSERT_TRUE(write_synthetic_tree(a.path(), {256, 300, 0}));
  ASSERT_TRUE(write_synthetic_tree(b.path(), {256, 300, 1}));
  const HostOptions o = all_processes_of(a);
  HostCollector first(o);
  HostSample h;
  std::vector<ProcessSample> ps;
  first.collect(h, ps, {});
  ASSERT_EQ(h.cpus.size(), 256u);
  EXPECT_EQ(h.cpu_count_online, 256u);
  EXPECT_EQ(h.cpus[255].frequency_mhz, Reading<unsigned>::of(2255));
  EXPECT_EQ(ps.size(), 300u);
  EXPECT_EQ(h.process_count, 300u);
  EXPECT_EQ(h.disks.size(), 8u);  // partitions and loop0 skipped
  EXPECT_EQ(h.cpu_temperature_c, Reading<double>::of(55.0));
  const auto tree = process_tree_indices(ps, 63);  // the first torchrun: 1 + 8 ranks + 32 workers
  EXPECT_EQ(tree.size(), 41u);
}

TEST(HostSynthetic, PerCoreShareOnTwoHundredFiftySixCpus) {
  // One collector, tree rewritten in place between the ticks.
  TempDir d;
  ASSERT_TRUE(write_synthetic_tree(d.path(), {256, 20, 0}));
  const HostOptions o = all_processes_of(d);
  HostCollector c(o);
  HostSample h;
  std::vector<ProcessSample> ps;
  c.collect(h, ps, {});
  ASSERT_TRUE(write_synthetic_tree(d.path(), {256, 20, 1}));
  c.collect(h, ps, {});
  ASSERT_EQ(h.cpus.size(), 256u);
  EXPECT_DOUBLE_EQ(h.interval_s, 1.0);
  for (unsigned cpu = 0; cpu < 256; ++cpu) {
    // Per tick: user + 10 × (cpu % 4 + 1), idle + the rest of 100.
    EXPECT_NEAR(h.cpus[cpu].times.user_pct, 10.0 * (cpu % 4 + 1), 1e-9) << "cpu" << cpu;
    EXPECT_NEAR(h.cpus[cpu].times.idle_pct, 100 - 10.0 * (cpu % 4 + 1), 1e-9) << "cpu" << cpu;
  }
  EXPECT_NEAR(h.cpu_total.user_pct, 25.0, 1e-9);  // mean of 10, 20, 30, 40
  ASSERT_FALSE(h.disks.empty());
  EXPECT_DOUBLE_EQ(h.disks[0].read_bytes_per_s, 2048.0 * 512);
  const ProcessSample* init = find_pid(ps, 1);
  ASSERT_NE(init, nullptr);
  EXPECT_NEAR(*init->cpu_pct, 1.0, 1e-9);  // utime + pid % 7 (= 1) tick per 1 s tick
}

TEST(HostSynthetic, CommandLineIsCachedPerProcessUntilCommChangesOrTheRefresh) {
  // The command line is read once per (pid, start time) and comm; a changed cmdline with the same
  // comm shows after kCmdlineRefreshReads (30) reads at the latest, a changed comm at once.
  TempDir d;
  ASSERT_TRUE(write_synthetic_tree(d.path(), {4, 20, 0}));
  const HostOptions o = all_processes_of(d);
  HostCollector c(o);
  HostSample h;
  std::vector<ProcessSample> ps;
  c.collect(h, ps, {});
  const ProcessSample* init = find_pid(ps, 1);
  ASSERT_NE(init, nullptr);
  const std::string original = init->cmdline;
  ASSERT_FALSE(original.empty());
  const std::string stat_path = o.proc_root + "/1/stat";
  const std::string cmdline_path = o.proc_root + "/1/cmdline";
  auto put = [](const std::string& path, std::string_view text) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  };
  put(cmdline_path, std::string_view("renamed\0--by-setproctitle\0", 26));
  int reads_until_seen = 0;
  for (int i = 1; i <= 40; ++i) {
    c.collect(h, ps, {});
    if (find_pid(ps, 1)->cmdline != original) {
      reads_until_seen = i;
      break;
    }
  }
  EXPECT_EQ(find_pid(ps, 1)->cmdline, "renamed --by-setproctitle");
  EXPECT_GE(reads_until_seen, 20);  // cached meanwhile
  EXPECT_LE(reads_until_seen, 30);

  // exec: comm changes, the new command line shows on the next read.
  std::string stat;
  {
    std::FILE* f = std::fopen(stat_path.c_str(), "rb");
    ASSERT_NE(f, nullptr);
    char buf[4096];
    stat.assign(buf, std::fread(buf, 1, sizeof buf, f));
    std::fclose(f);
  }
  const auto open = stat.find('('), close = stat.rfind(')');
  ASSERT_NE(open, std::string::npos);
  put(stat_path, stat.substr(0, open + 1) + "python3" + stat.substr(close));
  put(cmdline_path, std::string_view("python3\0train.py\0", 17));
  c.collect(h, ps, {});
  EXPECT_EQ(find_pid(ps, 1)->comm, "python3");
  EXPECT_EQ(find_pid(ps, 1)->cmdline, "python3 train.py");
}

TEST(HostSynthetic, AttributionOfRequestedProcessesFromEnvironCgroupAndKubeletDirs) {
  // pid 1: a Slurm job's environment and a kubelet cgroup; the pod's log directory names it. Read
  // for requested pids even without the io/cgroup details (top), cached until the refresh.
  TempDir d;
  ASSERT_TRUE(write_synthetic_tree(d.path(), {4, 20, 0}));
  const std::string uid = "8a1b2c3d-1111-2222-3333-444455556666";
  const std::string cid(64, 'c');
  ASSERT_TRUE(
      synthetic_detail::put(d.path() + "/proc/1/environ", std::string("SLURM_JOB_ID=77\0RANK=2\0", 23)));
  ASSERT_TRUE(synthetic_detail::put(d.path() + "/proc/1/cgroup",
                                    "0::/kubepods/besteffort/pod" + uid + "/" + cid + "\n"));
  ASSERT_TRUE(synthetic_detail::put(d.path() + "/log/pods/ns1_pod-a_" + uid + "/main/0.log", ""));
  HostOptions o = all_processes_of(d);
  o.all_processes = false;
  o.requested_process_details = false;
  o.pod_logs_root = d.path() + "/log/pods";
  HostCollector c(o);
  HostSample h;
  std::vector<ProcessSample> ps;
  const std::vector<std::uint32_t> pids{1, 2};
  c.collect(h, ps, pids);
  const ProcessSample* p = find_pid(ps, 1);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->attribution.slurm_job_id, "77");
  EXPECT_EQ(p->attribution.rank, 2);
  EXPECT_EQ(p->attribution.pod_uid, uid);
  EXPECT_EQ(p->attribution.pod_namespace, "ns1");
  EXPECT_EQ(p->attribution.pod_name, "pod-a");
  EXPECT_EQ(p->attribution.container_name, "main");
  EXPECT_EQ(p->attribution.container_id, cid);
  EXPECT_EQ(p->attribution.sources, kAttributionEnviron | kAttributionCgroup | kAttributionKubelet);
  EXPECT_EQ(p->cgroup.status, ReadStatus::not_collected);  // no details asked
  ASSERT_NE(find_pid(ps, 2), nullptr);
  EXPECT_TRUE(find_pid(ps, 2)->attribution.empty());  // no environ, no cgroup file: nothing, no error

  // Cached per (pid, start time): a changed environment shows after at most 30 reads.
  ASSERT_TRUE(synthetic_detail::put(d.path() + "/proc/1/environ", std::string("SLURM_JOB_ID=78\0", 16)));
  c.collect(h, ps, pids);
  EXPECT_EQ(find_pid(ps, 1)->attribution.slurm_job_id, "77");
  for (int i = 0; i < 30; ++i) c.collect(h, ps, pids);
  EXPECT_EQ(find_pid(ps, 1)->attribution.slurm_job_id, "78");

  // Turned off: nothing read.
  o.requested_process_attribution = false;
  HostCollector off(o);
  off.collect(h, ps, pids);
  EXPECT_TRUE(find_pid(ps, 1)->attribution.empty());
}
