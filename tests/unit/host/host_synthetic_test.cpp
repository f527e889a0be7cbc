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
