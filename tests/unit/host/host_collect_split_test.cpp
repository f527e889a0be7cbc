// SPDX-License-Identifier: Apache-2.0
// HostCollector::collect_system + collect_processes (the sampler reads the host-wide half while the
// GPUs are sampled): the same values and rates as collect(), over the committed fixture trees.
#include <gtest/gtest.h>

#include <filesystem>

#include "host_fixture_util.h"
#include "trainmon/host/host_collector.h"

using namespace trainmon;
using trainmon::test::find_pid;
using trainmon::test::fixture_options;
using trainmon::test::host_fixture;
using trainmon::test::point_to;
using trainmon::test::TempDir;
namespace fs = std::filesystem;

namespace {

constexpr double kEps = 1e-9;

TEST(HostCollectSplit, TwoHalvesGiveTheRatesOfCollect) {
  TempDir whole_dir, split_dir;
  ASSERT_FALSE(whole_dir.path().empty());
  ASSERT_FALSE(split_dir.path().empty());
  point_to(whole_dir.path(), host_fixture("machine/tick1"));
  point_to(split_dir.path(), host_fixture("machine/tick1"));
  HostCollector whole(fixture_options(whole_dir.path()));
  HostCollector split(fixture_options(split_dir.path()));
  const std::uint32_t watched[] = {100};
  HostSample hw, hs;
  std::vector<ProcessSample> pw, ps = {ProcessSample{}};  // collect_processes clears what was there
  whole.collect(hw, pw, watched);
  split.collect_system(hs);
  EXPECT_EQ(hs.process_count, 0u);  // the processes are the other half
  split.collect_processes(hs, ps, watched);
  ASSERT_EQ(ps.size(), pw.size());

  point_to(whole_dir.path(), host_fixture("machine/tick2"));
  point_to(split_dir.path(), host_fixture("machine/tick2"));
  whole.collect(hw, pw, watched);
  split.collect_system(hs);
  split.collect_processes(hs, ps, watched);

  // The same exact rates as HostCollector.TwoTicksGiveExactRates, from the split collector.
  EXPECT_DOUBLE_EQ(hs.interval_s, 2.0);
  ASSERT_EQ(hs.cpus.size(), 4u);
  EXPECT_NEAR(hs.cpus[0].times.user_pct, 50, kEps);
  EXPECT_NEAR(hs.cpus[0].times.busy_pct, 75, kEps);
  EXPECT_NEAR(hs.cpu_total.idle_pct, 40, kEps);
  ASSERT_EQ(hs.disks.size(), 3u);
  EXPECT_DOUBLE_EQ(hs.disks[0].read_bytes_per_s, 1024000.0);
  EXPECT_DOUBLE_EQ(hs.disks[1].write_bytes_per_s, 1024000.0);
  ASSERT_EQ(hs.nets.size(), 3u);
  EXPECT_DOUBLE_EQ(hs.nets[1].rx_bytes_per_s, 10000.0);
  EXPECT_EQ(hs.process_count, 11u);
  const ProcessSample* p = find_pid(ps, 100);
  ASSERT_NE(p, nullptr);
  EXPECT_NEAR(*p->cpu_pct, 120.0, kEps);
  EXPECT_DOUBLE_EQ(*p->read_bytes_per_s, 1000000.0);
  EXPECT_NEAR(*find_pid(ps, 101)->cpu_pct, 50.0, kEps);

  // ...and everything else equal to collect()'s.
  EXPECT_EQ(hs.uptime_s, hw.uptime_s);
  EXPECT_EQ(hs.hostname, hw.hostname);
  EXPECT_EQ(hs.memory.used_bytes, hw.memory.used_bytes);
  EXPECT_EQ(hs.load1, hw.load1);
  EXPECT_EQ(hs.cpu_temperature_c, hw.cpu_temperature_c);
  EXPECT_EQ(hs.processes_unreadable, hw.processes_unreadable);
  ASSERT_EQ(ps.size(), pw.size());
  for (std::size_t i = 0; i < ps.size(); ++i) {
    EXPECT_EQ(ps[i].pid, pw[i].pid);
    EXPECT_EQ(ps[i].cpu_pct, pw[i].cpu_pct) << ps[i].pid;
    EXPECT_EQ(ps[i].mem_pct, pw[i].mem_pct) << ps[i].pid;
    EXPECT_EQ(ps[i].start_time_unix_s, pw[i].start_time_unix_s) << ps[i].pid;
  }
}

}  // namespace
