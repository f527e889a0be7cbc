// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "trainmon/host/parse_system.h"

using namespace trainmon;

TEST(ParseMeminfo, ReadsKiBAsBytesAndLeavesMissingKeysEmpty) {
  const auto m = parse_meminfo(
      "MemTotal:       16316412 kB\nMemFree:          512 kB\nActive(file):     100 kB\n"
      "HugePages_Total:       4\ngarbage line\nDirty: x kB\n");
  EXPECT_EQ(m.mem_total, 16316412ULL * 1024);
  EXPECT_EQ(m.mem_free, 512ULL * 1024);
  EXPECT_EQ(m.active_file, 100ULL * 1024);
  EXPECT_FALSE(m.mem_available.has_value());
  EXPECT_FALSE(m.dirty.has_value());  // malformed value costs only that field
}

TEST(ParseMeminfo, ZoneinfoLowWatermarksAreSummed) {
  EXPECT_EQ(parse_zoneinfo_low_pages(
                "Node 0, zone DMA\n  pages free 3\n        min 5\n        low 6\n        high 7\n"
                "Node 0, zone Normal\n        low      41\n"),
            47u);
  EXPECT_FALSE(parse_zoneinfo_low_pages("Node 0, zone DMA\n  pages free 3\n").has_value());
}

TEST(ParseMeminfo, AvailableEstimateFollowsTheKernelFormula) {
  MeminfoValues m;
  m.mem_free = 1000;
  m.active_file = 600;
  m.inactive_file = 400;
  m.sreclaimable = 300;
  m.cached = 5000;
  // 1000 - 100 + (1000 - min(500, 100)) + (300 - min(150, 100)) = 900 + 900 + 200
  EXPECT_EQ(estimate_mem_available(m, 100), 2000u);
  // Large watermark: the halves are subtracted instead. 1000-4000 + 1000-500 + 300-150 = -2350 -> 0
  EXPECT_EQ(estimate_mem_available(m, 4000), 0u);
  // Without the LRU fields (kernel < 2.6.28): MemFree + Cached, as psutil does.
  m.active_file.reset();
  EXPECT_EQ(estimate_mem_available(m, 100), 6000u);
  m.mem_free.reset();
  EXPECT_FALSE(estimate_mem_available(m, 0).has_value());
}

TEST(ParseProcStat, ReadsAggregateCoresAndBootTime) {
  const auto s = parse_proc_stat(
      "cpu  5039 1 3734 104345 369 2 94 11 7 0\ncpu0 2169 0 1365 53196 41 0 13 3 0 0\n"
      "cpu3 1 2 3 4\ncpuX 1 2 3 4\ncpu7 1 2\nintr 1 2\nbtime 1796017680\nprocs_running 2\nprocs_blocked 1\n");
  ASSERT_TRUE(s.total.has_value());
  EXPECT_EQ(s.total->user, 5039u);
  EXPECT_EQ(s.total->guest, 7u);
  EXPECT_EQ(s.total->total(), 5039u + 1 + 3734 + 104345 + 369 + 2 + 94 + 11);
  ASSERT_EQ(s.cores.size(), 2u);  // cpuX and the short cpu7 line are skipped
  EXPECT_EQ(s.cores[0].cpu, 0u);
  EXPECT_EQ(s.cores[1].cpu, 3u);
  EXPECT_EQ(s.cores[1].counters.idle, 4u);
  EXPECT_EQ(s.cores[1].counters.steal, 0u);  // old kernels: missing trailing fields are 0
  EXPECT_EQ(s.boot_time_unix_s, 1796017680u);
  EXPECT_EQ(s.procs_running, 2u);
  EXPECT_EQ(s.procs_blocked, 1u);
}

TEST(ParseProcStat, CpuTimesBetweenSplitsStatesAndClampsBackwardCounters) {
  CpuCounters a{100, 10, 50, 800, 20, 5, 5, 0};
  CpuCounters b{160, 20, 70, 860, 40, 5, 15, 30};
  // user 60+10=70, system 20+0+10=30, idle 60, iowait 20, steal 30 -> total 210
  const CpuTimes t = cpu_times_between(a, b);
  EXPECT_NEAR(t.user_pct, 70 * 100.0 / 210, 1e-9);
  EXPECT_NEAR(t.system_pct, 30 * 100.0 / 210, 1e-9);
  EXPECT_NEAR(t.idle_pct, 60 * 100.0 / 210, 1e-9);
  EXPECT_NEAR(t.iowait_pct, 20 * 100.0 / 210, 1e-9);
  EXPECT_NEAR(t.steal_pct, 30 * 100.0 / 210, 1e-9);
  EXPECT_NEAR(t.busy_pct, 100 - 80 * 100.0 / 210, 1e-9);
  // Counters that went backwards (iowait on some kernels, VM migration) count as zero.
  CpuCounters c = b;
  c.idle = 10;
  c.user = b.user + 100;
  const CpuTimes back = cpu_times_between(b, c);
  EXPECT_DOUBLE_EQ(back.user_pct, 100);
  EXPECT_DOUBLE_EQ(back.idle_pct, 0);
  // Nothing elapsed: zeros, not NaN.
  const CpuTimes none = cpu_times_between(b, b);
  EXPECT_EQ(none.busy_pct, 0);
  EXPECT_EQ(none.idle_pct, 0);
}

TEST(ParseLoadavg, ReadsThreeAveragesAndTasks) {
  const auto l = parse_loadavg("0.71 0.21 0.08 2/99 9202\n");
  ASSERT_TRUE(l.has_value());
  EXPECT_DOUBLE_EQ(l->load1, 0.71);
  EXPECT_DOUBLE_EQ(l->load15, 0.08);
  EXPECT_EQ(l->running, 2u);
  EXPECT_EQ(l->total, 99u);
  EXPECT_EQ(l->last_pid, 9202u);
  EXPECT_FALSE(parse_loadavg("0.71 0.21 0.08 2/99\n")->last_pid.has_value());
  EXPECT_FALSE(parse_loadavg("0.71 0.21 0.08 2/99 x1\n")->last_pid.has_value());
  EXPECT_FALSE(parse_loadavg("0.71 zz 0.08\n").has_value());
  EXPECT_FALSE(parse_loadavg("").has_value());
}

TEST(ParseUptime, ReadsSeconds) {
  EXPECT_EQ(parse_uptime("569.86 1043.45\n"), 569.86);
  EXPECT_FALSE(parse_uptime("abc").has_value());
}

TEST(ParseCpuList, RangesSinglesAndErrors) {
  EXPECT_EQ(parse_cpu_list("0-3,5,7-8\n"), (std::vector<unsigned>{0, 1, 2, 3, 5, 7, 8}));
  EXPECT_EQ(parse_cpu_list("0\n"), (std::vector<unsigned>{0}));
  EXPECT_EQ(parse_cpu_list("\n"), (std::vector<unsigned>{}));
  EXPECT_EQ(parse_cpu_list("0-255")->size(), 256u);
  EXPECT_FALSE(parse_cpu_list("3-1").has_value());
  EXPECT_FALSE(parse_cpu_list("0-x").has_value());
  EXPECT_FALSE(parse_cpu_list("0-4000000000").has_value());
}

TEST(ParsePressure, SomeAndFullLines) {
  const auto p = parse_pressure(
      "some avg10=5.20 avg60=4.30 avg300=1.39 total=7548522\nfull avg10=0.10 avg60=0.00 avg300=0.00 "
      "total=12\n");
  ASSERT_TRUE(p.some && p.full);
  EXPECT_DOUBLE_EQ(p.some->avg10, 5.20);
  EXPECT_DOUBLE_EQ(p.some->avg60, 4.30);
  EXPECT_EQ(p.some->total_us, 7548522u);
  EXPECT_DOUBLE_EQ(p.full->avg10, 0.10);
  // cpu on kernels before 5.13 has only "some".
  const auto cpu = parse_pressure("some avg10=1.00 avg60=2.00 avg300=3.00 total=4\n");
  EXPECT_TRUE(cpu.some.has_value());
  EXPECT_FALSE(cpu.full.has_value());
  EXPECT_FALSE(parse_pressure("some avg10=x avg60=2.00 avg300=3.00 total=4\n").some.has_value());
}

TEST(ParseDiskstats, ReadsSectorsAndNamesPartitions) {
  const auto d = parse_diskstats(
      "   8       0 sda 100 5 1000 40 50 2 400 30 0 70 70 0 0 0 0 0 0\n"
      "   8       1 sda1 90 5 900 35 45 2 380 28 0 60 63\n"
      " 259       0 nvme0n1 500 0 64000 100 300 0 2000 90 0 150 190 0 0 0 0\n"
      " 259       1 nvme0n1p1 4 0 6 9 2 0 1 8 0 1 1\n"
      "   7       0 loop0 1 2 3\n");
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0].name, "sda");
  EXPECT_EQ(d[0].sectors_read, 1000u);
  EXPECT_EQ(d[0].sectors_written, 400u);
  EXPECT_EQ(d[0].io_ms, 70u);
  EXPECT_EQ(d[2].sectors_written, 2000u);
  const std::vector<std::string_view> names{"sda",     "sda1",      "nvme0n1", "nvme0n1p1",
                                            "mmcblk0", "mmcblk0p1", "md0"};
  EXPECT_FALSE(is_partition_name("sda", names));
  EXPECT_TRUE(is_partition_name("sda1", names));
  EXPECT_FALSE(is_partition_name("nvme0n1", names));
  EXPECT_TRUE(is_partition_name("nvme0n1p1", names));
  EXPECT_TRUE(is_partition_name("mmcblk0p1", names));
  EXPECT_FALSE(is_partition_name("md0", names));
  EXPECT_TRUE(is_virtual_block_device("loop3"));
  EXPECT_TRUE(is_virtual_block_device("ram0"));
  EXPECT_FALSE(is_virtual_block_device("dm-0"));
}

TEST(ParseNetDev, ReadsBytesPerInterface) {
  const auto n = parse_net_dev(
      "Inter-|   Receive                                                |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo "
      "colls "
      "carrier compressed\n"
      "    lo:    3267      29    0    0    0     0          0         0     3267      29    0    0    0     "
      "0  "
      "     0          0\n"
      "  eth0:99519312    2110    1    2    0     0          0         0    96727    1202    3    4    0     "
      "0 "
      "      0          0\n"
      "  bad: 1 2 3\n");
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[1].name, "eth0");  // no space after the colon on big counters
  EXPECT_EQ(n[1].rx_bytes, 99519312u);
  EXPECT_EQ(n[1].rx_errors, 1u);
  EXPECT_EQ(n[1].tx_bytes, 96727u);
  EXPECT_EQ(n[1].tx_dropped, 4u);
}

TEST(ParseCounterRate, NeverNegativeOrInfinite) {
  EXPECT_DOUBLE_EQ(counter_rate(100, 300, 2.0), 100.0);
  EXPECT_EQ(counter_rate(300, 100, 2.0), 0.0);  // went backwards
  EXPECT_EQ(counter_rate(100, 300, 0.0), 0.0);  // no elapsed time
  EXPECT_EQ(counter_rate(100, 300, -1.0), 0.0);
}
