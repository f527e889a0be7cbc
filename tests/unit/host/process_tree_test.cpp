// SPDX-License-Identifier: Apache-2.0
#include "trainmon/host/process_tree.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "host_fixture_util.h"
#include "trainmon/host/host_collector.h"

using namespace trainmon;

namespace {
ProcessSample proc(std::uint32_t pid, std::uint32_t ppid, std::uint64_t start, std::uint64_t rss,
                   double cpu) {
  ProcessSample p;
  p.pid = pid;
  p.ppid = ppid;
  p.start_time_ticks = start;
  p.rss_bytes = Reading<std::uint64_t>::of(rss);
  p.cpu_pct = Reading<double>::of(cpu);
  p.num_threads = Reading<unsigned>::of(2);
  p.state = 'S';
  return p;
}
std::vector<std::uint32_t> pids_of(const std::vector<ProcessSample>& ps,
                                   const std::vector<std::size_t>& idx) {
  std::vector<std::uint32_t> out;
  for (auto i : idx) out.push_back(ps[i].pid);
  return out;
}
}  // namespace

TEST(ProcessTree, DescendantsBreadthFirst) {
  // launcher 10 -> ranks 11, 12 -> workers 13 (of 11), 14 (of 12) -> 15 (of 13); 20 unrelated.
  std::vector<ProcessSample> ps = {proc(20, 1, 5, 1, 1),       proc(15, 13, 400, 1, 1),
                                   proc(10, 1, 100, 100, 10),  proc(11, 10, 200, 200, 110),
                                   proc(12, 10, 200, 300, 90), proc(13, 11, 300, 50, 5),
                                   proc(14, 12, 300, 50, 5)};
  const auto idx = process_tree_indices(ps, 10);
  EXPECT_EQ(pids_of(ps, idx), (std::vector<std::uint32_t>{10, 11, 12, 13, 14, 15}));
  const auto t = process_tree_totals(ps, idx);
  EXPECT_EQ(t.process_count, 6u);
  EXPECT_EQ(t.rss_bytes, 100u + 200 + 300 + 50 + 50 + 1);
  EXPECT_DOUBLE_EQ(t.cpu_pct, 10 + 110 + 90 + 5 + 5 + 1);
  EXPECT_EQ(t.threads, 12u);
  EXPECT_EQ(t.io_missing, 6u);  // no io read: totals say so instead of reporting 0 as a fact
  EXPECT_TRUE(process_tree_indices(ps, 99).empty());
  EXPECT_TRUE(process_tree_indices(ps, 10, 101).empty());  // root pid reused
  EXPECT_EQ(process_tree_indices(ps, 10, 100).size(), 6u);
}

TEST(ProcessTree, OlderProcessIsNeverAdoptedAndCyclesEnd) {
  // 31 claims ppid 30 but started before 30: a stale ppid (pid reuse), not a child.
  std::vector<ProcessSample> ps = {proc(30, 1, 500, 1, 0), proc(31, 30, 100, 1, 0), proc(32, 33, 600, 1, 0),
                                   proc(33, 32, 600, 1, 0)};
  EXPECT_EQ(process_tree_indices(ps, 30).size(), 1u);
  EXPECT_EQ(process_tree_indices(ps, 32).size(), 2u);  // 32 <-> 33 cycle terminates
}

TEST(ProcessTree, FixtureTrainerTreeWithZombieAndGrandchild) {
  HostOptions o;
  o.proc_root = trainmon::test::host_fixture("machine/tick1") + "/proc";
  o.sys_root = trainmon::test::host_fixture("machine/tick1") + "/sys";
  o.all_processes = true;
  o.all_process_details = true;
  HostCollector c(o);
  HostSample h;
  std::vector<ProcessSample> ps;
  c.collect(h, ps, {});
  const auto idx = process_tree_indices(ps, 100);
  auto got = pids_of(ps, idx);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::uint32_t>{100, 101, 102, 150, 200}));
  const auto t = process_tree_totals(ps, idx);
  EXPECT_EQ(t.zombie_count, 1u);
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  EXPECT_EQ(t.rss_bytes, (262144u + 65536 * 2 + 256) * page);
  EXPECT_EQ(t.read_bytes, 1000000u + 1000 + 1000);  // 150 and 200 have no io file
  EXPECT_EQ(t.io_missing, 2u);
  EXPECT_EQ(t.cpu_missing, 5u);  // first tick: no rates yet
}
