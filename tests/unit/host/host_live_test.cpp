// SPDX-License-Identifier: Apache-2.0
// The collector on the real /proc of the machine running the tests.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "host_fixture_util.h"
#include "trainmon/host/host_collector.h"
#include "trainmon/host/parse_system.h"

using namespace trainmon;

namespace {
std::string slurp(const char* path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
}  // namespace

TEST(HostLive, AvailableMemoryMatchesMeminfo) {
  HostCollector c{HostOptions{}};
  HostSample h;
  std::vector<ProcessSample> ps;
  c.collect(h, ps, {});
  const auto m = parse_meminfo(slurp("/proc/meminfo"));
  ASSERT_TRUE(m.mem_available.has_value());
  ASSERT_TRUE(h.memory.available_bytes.ok());
  EXPECT_FALSE(h.memory.available_estimated);
  const double diff = static_cast<double>(*h.memory.available_bytes) - static_cast<double>(*m.mem_available);
  EXPECT_LT(std::abs(diff), 256.0 * 1024 * 1024);  // other processes allocate between the two reads
  EXPECT_EQ(*h.memory.total_bytes, *m.mem_total);
  EXPECT_EQ(h.cpu_count_online, static_cast<unsigned>(::sysconf(_SC_NPROCESSORS_ONLN)));
  EXPECT_TRUE(h.uptime_s.ok());
  EXPECT_TRUE(h.load1.ok());
}

TEST(HostLive, TheTestProcessItself) {
  HostCollector c{HostOptions{}};
  HostSample h;
  std::vector<ProcessSample> ps;
  const std::uint32_t self[] = {static_cast<std::uint32_t>(::getpid())};
  c.collect(h, ps, self);
  ASSERT_EQ(ps.size(), 1u);
  const ProcessSample& p = ps[0];
  EXPECT_EQ(p.pid, self[0]);
  EXPECT_EQ(p.ppid, static_cast<std::uint32_t>(::getppid()));
  EXPECT_EQ(p.uid, ::getuid());
  EXPECT_FALSE(p.user.empty());
  ASSERT_TRUE(p.rss_bytes.ok());
  EXPECT_GT(*p.rss_bytes, 1024u * 1024);  // a gtest binary is well over 1 MiB resident
  EXPECT_GT(*p.vms_bytes, *p.rss_bytes);
  EXPECT_EQ(p.state, 'R');
  EXPECT_NE(p.cmdline.find(program_invocation_short_name), std::string::npos) << p.cmdline;
  EXPECT_TRUE(p.read_bytes.ok());  // our own io file is always readable
  EXPECT_TRUE(p.cgroup.ok());
  EXPECT_FALSE(p.nspid.empty());
  EXPECT_GT(p.start_time_unix_s, 1.5e9);
  // Burn a little CPU, then the second tick has a rate.
  volatile double x = 0;
  for (int i = 0; i < 20000000; ++i) x = x + i * 0.5;
  ::usleep(20000);
  c.collect(h, ps, self);
  ASSERT_EQ(ps.size(), 1u);
  ASSERT_TRUE(ps[0].cpu_pct.ok());
  EXPECT_GT(*ps[0].cpu_pct, 0.0);
  EXPECT_GE(ps[0].cpu_time_s, p.cpu_time_s);
}
