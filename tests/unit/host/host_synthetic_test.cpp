// SPDX-License-Identifier: Apache-2.0
// A 256-CPU machine with a thousand processes, generated at test time.
#include <gtest/gtest.h>

#include "host_fixture_util.h"
#include "synthetic_proc_tree.h"
#include "trainmon/host/host_collector.h"
#include "trainmon/host/process_tree.h"

using namespace trainmon;
using namespace trainmon::test;

TEST(HostSynthetic, TwoHundredFiftySixCpusAndThreeHundredProcesses) {
  TempDir a, b;
  ASSERT_TRUE(write_synthetic_tree(a.path(), {256, 300, 0}));
  ASSERT_TRUE(write_synthetic_tree(b.path(), {256, 300, 1}));
  HostOptions o;
  o.all_processes = true;
  o.proc_root = a.path() + "/proc";
  o.sys_root = a.path() + "/sys";
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
  HostOptions o;
  o.all_processes = true;
  o.proc_root = d.path() + "/proc";
  o.sys_root = d.path() + "/sys";
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
