// SPDX-License-Identifier: Apache-2.0
#include "trainmon/host/cgroup.h"

#include <gtest/gtest.h>

#include "host_fixture_util.h"

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
