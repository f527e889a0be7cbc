// SPDX-License-Identifier: Apache-2.0
#include "trainmon/host/cgroup.h"

#include <gtest/gtest.h>

#include "host_fixture_util.h"
#include "trainmon/runner/oom.h"

#include <filesystem>
#include <fstream>

using namespace trainmon;
using trainmon::test::host_fixture;

TEST(CgroupParse, LimitsAndSentinels) {
  EXPECT_EQ(parse_cgroup_memory_limit("max\n")->unlimited, true);
  EXPECT_EQ(parse_cgroup_memory_limit("9223372036854771712\n")->unlimited, true);  // v1, 4 KiB pages
  EXPECT_EQ(parse_cgroup_memory_limit("9223372036854710272\n")->unlimited, true);  // v1, 64 KiB pages
  const auto l = parse_cgroup_memory_limit("2147483648\n");
  ASSERT_TRUE(l.has_value());
  EXPECT_FALSE(l->unlimited);
  EXPECT_EQ(l->bytes, 2147483648u);
  EXPECT_FALSE(parse_cgroup_memory_limit("lots").has_value());
  EXPECT_EQ(parse_oom_kill_count("low 0\nhigh 0\nmax 3\noom 1\noom_kill 7\n"), 7u);
  EXPECT_FALSE(parse_oom_kill_count("oom_kill_disable 0\nunder_oom 0\n").has_value());
}

TEST(CgroupMemory, V2EffectiveLimitFromAnAncestor) {
  const std::string root = host_fixture("cgroup_v2");
  const auto m = read_cgroup_memory(100, root + "/proc", root + "/sys");
  ASSERT_TRUE(m.has_value()) << m.error().message;
  EXPECT_EQ(m->version, 2);
  EXPECT_EQ(m->path, "/kubepods/burstable/pod1/abc");
  EXPECT_EQ(m->limit_bytes, Reading<std::uint64_t>::of(8589934592u));  // burstable's memory.max
  EXPECT_FALSE(m->unlimited);
  EXPECT_EQ(m->usage_bytes, Reading<std::uint64_t>::of(1073741824u));
  EXPECT_EQ(m->peak_bytes, Reading<std::uint64_t>::of(2147483648u));
  EXPECT_EQ(m->oom_kill_count, Reading<std::uint64_t>::of(1u));
}

TEST(CgroupMemory, V2UnlimitedEverywhere) {
  const std::string root = host_fixture("cgroup_v2");
  const auto m = read_cgroup_memory(200, root + "/proc", root + "/sys");
  ASSERT_TRUE(m.has_value());
  EXPECT_TRUE(m->unlimited);
  EXPECT_EQ(m->limit_bytes.status, ReadStatus::not_available);
  EXPECT_EQ(m->usage_bytes, Reading<std::uint64_t>::of(52428800u));
  EXPECT_EQ(m->peak_bytes.status, ReadStatus::not_supported);  // memory.peak is 5.19+
  EXPECT_EQ(m->oom_kill_count, Reading<std::uint64_t>::of(0u));
}

TEST(CgroupMemory, V1DockerUnlimitedSentinel) {
  const std::string root = host_fixture("cgroup_v1");
  const auto m = read_cgroup_memory(100, root + "/proc", root + "/sys");
  ASSERT_TRUE(m.has_value()) << m.error().message;
  EXPECT_EQ(m->version, 1);
  EXPECT_TRUE(m->unlimited);
  EXPECT_EQ(m->limit_bytes.status, ReadStatus::not_available);
  EXPECT_EQ(m->usage_bytes, Reading<std::uint64_t>::of(734003200u));
  EXPECT_EQ(m->peak_bytes, Reading<std::uint64_t>::of(900000000u));
  EXPECT_EQ(m->oom_kill_count, Reading<std::uint64_t>::of(2u));
}

TEST(CgroupMemory, V1PathFoundBySuffixInAContainerMount) {
  const std::string root = host_fixture("cgroup_v1");
  const auto m = read_cgroup_memory(101, root + "/proc", root + "/sys");
  ASSERT_TRUE(m.has_value());
  EXPECT_TRUE(m->directory.ends_with("/memory/job42"));
  EXPECT_EQ(m->limit_bytes, Reading<std::uint64_t>::of(4294967296u));
  EXPECT_EQ(m->oom_kill_count.status, ReadStatus::not_supported);  // kernel < 4.13
}

TEST(CgroupMemory, GoneProcessIsAnError) {
  const std::string root = host_fixture("cgroup_v2");
  const auto m = read_cgroup_memory(4242, root + "/proc", root + "/sys");
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().name, "ENOENT");
}

TEST(CgroupParse, CpuMaxAndKeyedCounts) {
  const auto l = parse_cgroup_cpu_max("150000 100000\n");
  ASSERT_TRUE(l.has_value());
  EXPECT_FALSE(l->unlimited);
  EXPECT_EQ(l->quota_us, 150000u);
  EXPECT_EQ(l->period_us, 100000u);
  EXPECT_TRUE(parse_cgroup_cpu_max("max 100000\n")->unlimited);
  EXPECT_FALSE(parse_cgroup_cpu_max("150000 0").has_value());
  EXPECT_FALSE(parse_cgroup_cpu_max("150000").has_value());
  EXPECT_FALSE(parse_cgroup_cpu_max("lots 100000").has_value());
  EXPECT_EQ(parse_keyed_count("low 0\nmax 3\noom 1\noom_kill 7\n", "oom"), 1u);
  EXPECT_EQ(parse_keyed_count("low 0\nmax 3\noom 1\noom_kill 7\n", "max"), 3u);
  EXPECT_FALSE(parse_keyed_count("oom_kill 7\n", "oom").has_value());
}

TEST(CgroupMemory, TheLimitingLevelItsHitsAndPeak) {
  const std::string v2 = host_fixture("cgroup_v2");
  auto m = read_cgroup_memory(100, v2 + "/proc", v2 + "/sys");
  ASSERT_TRUE(m.has_value());
  EXPECT_TRUE(m->limit_directory.ends_with("/fs/cgroup/kubepods/burstable")) << m->limit_directory;
  EXPECT_TRUE(m->mount.ends_with("/fs/cgroup"));
  EXPECT_EQ(m->limit_hit_count, Reading<std::uint64_t>::of(2u));  // burstable's memory.events "oom"
  EXPECT_EQ(m->limit_peak_bytes, Reading<std::uint64_t>::of(8589930496u));
  m = read_cgroup_memory(200, v2 + "/proc", v2 + "/sys");
  ASSERT_TRUE(m.has_value());
  EXPECT_TRUE(m->limit_directory.empty());
  EXPECT_EQ(m->limit_hit_count.status, ReadStatus::not_available);
  const std::string v1 = host_fixture("cgroup_v1");
  m = read_cgroup_memory(101, v1 + "/proc", v1 + "/sys");
  ASSERT_TRUE(m.has_value());
  EXPECT_TRUE(m->limit_directory.ends_with("/memory/job42"));
  EXPECT_EQ(m->limit_hit_count, Reading<std::uint64_t>::of(17u));  // memory.failcnt
  EXPECT_EQ(m->limit_peak_bytes, Reading<std::uint64_t>::of(4294967296u));
  EXPECT_STREQ(cgroup_memory_limit_file(1), "memory.limit_in_bytes");
  EXPECT_STREQ(cgroup_memory_limit_file(2), "memory.max");
}

TEST(CgroupCpu, V2TightestQuotaOverTheAncestors) {
  const std::string root = host_fixture("cgroup_v2");
  const auto c = read_cgroup_cpu(100, root + "/proc", root + "/sys");
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_EQ(c->version, 2);
  EXPECT_EQ(c->limit_cpus, Reading<double>::of(1.5));  // pod1's 150000/100000, tighter than burstable's 2
  EXPECT_FALSE(c->unlimited);
  EXPECT_TRUE(c->limit_directory.ends_with("/kubepods/burstable/pod1")) << c->limit_directory;
  EXPECT_STREQ(cgroup_cpu_limit_file(2), "cpu.max");
  const auto none = read_cgroup_cpu(200, root + "/proc", root + "/sys");  // no cpu.max anywhere
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->unlimited);
  EXPECT_EQ(none->limit_cpus.status, ReadStatus::not_available);
}

TEST(CgroupCpu, V1CfsQuotaUnderTheCombinedMount) {
  const std::string root = host_fixture("cgroup_v1");
  const auto c = read_cgroup_cpu(100, root + "/proc", root + "/sys");
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_EQ(c->version, 1);
  EXPECT_EQ(c->limit_cpus, Reading<double>::of(0.5));
  EXPECT_TRUE(c->directory.find("/cpu,cpuacct/docker/") != std::string::npos) << c->directory;
  EXPECT_STREQ(cgroup_cpu_limit_file(1), "cpu.cfs_quota_us");
  const auto missing = read_cgroup_cpu(101, root + "/proc", root + "/sys");  // no cpu line
  EXPECT_FALSE(missing.has_value());
}

TEST(CgroupOomWatch, LimitsOfTheJobAndWhetherTheLimitWasHit) {
  // A copy of the v2 tree, so the counters can move during the "run".
  trainmon::test::TempDir tmp;
  std::filesystem::copy(host_fixture("cgroup_v2"), tmp.path(), std::filesystem::copy_options::recursive);
  runner::OomWatch w(tmp.path() + "/proc", tmp.path() + "/sys");
  w.observe(100);
  auto l = w.limits();
  EXPECT_EQ(l.version, 2);
  EXPECT_EQ(l.path, "/kubepods/burstable/pod1/abc");
  EXPECT_EQ(l.memory_limit_bytes, 8589934592u);
  EXPECT_EQ(l.memory_limit_file, "memory.max");
  EXPECT_EQ(l.memory_limit_path, "/kubepods/burstable");
  EXPECT_EQ(l.memory_peak_bytes, 8589930496u);
  EXPECT_TRUE(l.memory_limit_reached);  // peak within 2 % of the limit
  EXPECT_FALSE(l.memory_limit_oom);     // its "oom" count has not moved since the start
  EXPECT_EQ(l.cpu_limit_cpus, 1.5);
  EXPECT_EQ(l.cpu_limit_file, "cpu.max");
  EXPECT_EQ(l.cpu_limit_path, "/kubepods/burstable/pod1");
  EXPECT_EQ(w.kills_since_start(), 0u);
  // The limit invokes the OOM killer, which kills a process of the job.
  const std::string burstable = tmp.path() + "/sys/fs/cgroup/kubepods/burstable";
  std::ofstream(burstable + "/memory.events") << "low 0\nhigh 0\nmax 10\noom 3\noom_kill 3\n";
  std::ofstream(burstable + "/pod1/abc/memory.events") << "low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n";
  l = w.limits();
  EXPECT_TRUE(l.memory_limit_oom);
  EXPECT_EQ(w.kills_since_start(), 1u);
  // A job in a cgroup without limits: nothing to show.
  runner::OomWatch free_job(tmp.path() + "/proc", tmp.path() + "/sys");
  free_job.observe(200);
  EXPECT_EQ(free_job.limits().version, 2);
  EXPECT_FALSE(free_job.limits().any());
}
