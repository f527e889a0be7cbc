// SPDX-License-Identifier: Apache-2.0
// Files kept open across ticks (procfs / sysfs read again with pread), the cheap existence check of
// pids in our own PID namespace, and the options that leave out what `top` does not show.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "host/file_reader.h"
#include "host/process_reader.h"
#include "host_fixture_util.h"
#include "trainmon/host/host_collector.h"
#include "trainmon/host/parse_system.h"

using namespace trainmon;
using trainmon::test::find_pid;
using trainmon::test::host_fixture;
using trainmon::test::TempDir;

namespace {

/// A child that waits to be killed; killed and reaped by the destructor if still there.
struct Child {
  pid_t pid = ::fork();
  Child() {
    if (pid == 0) {
      ::pause();
      ::_exit(0);
    }
  }
  ~Child() { stop(); }
  void stop() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    pid = -1;
  }
};

/// A pid nobody uses now (kill answers ESRCH), counting down from a high number.
std::uint32_t unused_pid() {
  for (std::uint32_t p = 4000000; p > 1000; --p)
    if (::kill(static_cast<pid_t>(p), 0) != 0 && errno == ESRCH) return p;
  return 0;
}

}  // namespace

TEST(HostKeptFiles, ProcfsFilesStayOpenAndGiveFreshText) {
  host_detail::FileReader r;
  host_detail::KeptFile kept;
  ASSERT_EQ(r.read_kept(kept, "/proc/uptime", 256, true), 0);
  EXPECT_TRUE(kept.is_open());
  const auto first = parse_uptime(r.text());
  ASSERT_TRUE(first.has_value());
  ::usleep(30000);
  ASSERT_EQ(r.read_kept(kept, "/proc/uptime", 256, true), 0);
  const auto second = parse_uptime(r.text());
  ASSERT_TRUE(second.has_value());
  EXPECT_GT(*second, *first);  // regenerated, not the text of the first read
  // A file of many records (one read stops at every page of them) comes whole.
  host_detail::KeptFile maps;
  ASSERT_EQ(r.read_kept(maps, "/proc/self/maps"), 0);
  const std::string once(r.text());
  ASSERT_EQ(r.read_kept(maps, "/proc/self/maps"), 0);
  EXPECT_GT(once.size(), 1000u);
  EXPECT_EQ(once.back(), '\n');
  EXPECT_EQ(r.text().back(), '\n');
}

TEST(HostKeptFiles, RegularFilesAreOpenedOnEveryRead) {
  // A fixture file may be replaced between two ticks (a test renames the new one over it).
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const std::string path = tmp.path() + "/uptime";
  std::ofstream(path) << "100.00 50.00\n";
  host_detail::FileReader r;
  host_detail::KeptFile kept;
  ASSERT_EQ(r.read_kept(kept, path, 256, true), 0);
  EXPECT_FALSE(kept.is_open());
  EXPECT_EQ(r.text(), "100.00 50.00\n");
  std::ofstream(tmp.path() + "/next") << "102.00 51.00\n";
  std::filesystem::rename(tmp.path() + "/next", path);
  ASSERT_EQ(r.read_kept(kept, path, 256, true), 0);
  EXPECT_EQ(r.text(), "102.00 51.00\n");
  std::filesystem::remove(path);
  EXPECT_EQ(r.read_kept(kept, path, 256, true), ENOENT);
  EXPECT_TRUE(r.text().empty());
}

TEST(HostKeptFiles, TwoTicksOnTheLiveProcGiveRates) {
  HostCollector c{HostOptions{}};
  HostSample h;
  std::vector<ProcessSample> ps;
  c.collect(h, ps, {});
  ASSERT_TRUE(h.uptime_s.ok());
  const double up = *h.uptime_s;
  volatile double x = 0;
  for (int i = 0; i < 5000000; ++i) x = x + i * 0.5;
  ::usleep(20000);
  c.collect(h, ps, {});
  ASSERT_TRUE(h.uptime_s.ok());
  EXPECT_GT(*h.uptime_s, up);
  EXPECT_GT(h.interval_s, 0.0);
  EXPECT_GT(h.cpu_total.busy_pct + h.cpu_total.idle_pct, 0.0);  // counters moved between the two
  EXPECT_FALSE(h.hostname.empty());
  char name[256] = {};
  ASSERT_EQ(::gethostname(name, sizeof name - 1), 0);
  EXPECT_EQ(h.hostname, name);
  EXPECT_TRUE(h.memory.total_bytes.ok());
}

TEST(HostKeptFiles, ExitedProcessDisappearsAndUnknownPidsAreGone) {
  Child child;
  ASSERT_GT(child.pid, 0);
  const std::uint32_t nobody = unused_pid();
  ASSERT_NE(nobody, 0u);
  HostCollector c{HostOptions{}};
  HostSample h;
  std::vector<ProcessSample> ps;
  const std::uint32_t pids[] = {static_cast<std::uint32_t>(child.pid), nobody};
  c.collect(h, ps, pids);
  ASSERT_NE(find_pid(ps, pids[0]), nullptr);
  EXPECT_EQ(find_pid(ps, nobody), nullptr);
  EXPECT_EQ(h.processes_unreadable, 0u);
  c.collect(h, ps, pids);  // through the kept stat descriptor
  ASSERT_NE(find_pid(ps, pids[0]), nullptr);
  EXPECT_EQ(find_pid(ps, pids[0])->ppid, static_cast<std::uint32_t>(::getpid()));
  child.stop();
  c.collect(h, ps, pids);
  EXPECT_EQ(find_pid(ps, pids[0]), nullptr);
  EXPECT_EQ(h.processes_unreadable, 0u);
}

TEST(HostKeptFiles, ProcessReaderKeepsAtMostItsLimit) {
  Child a, b;
  ASSERT_GT(a.pid, 0);
  ASSERT_GT(b.pid, 0);
  host_detail::ProcessReader reader("", 1);
  const int root = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(root, 0);
  host_detail::ProcessReadContext ctx;
  ctx.proc_root = "/proc";
  ctx.proc_root_fd = root;
  ctx.keep_stat_fds = true;
  ctx.own_procfs = true;
  ProcessSample p;
  for (int tick = 0; tick < 3; ++tick) {
    EXPECT_EQ(reader.read(static_cast<std::uint32_t>(a.pid), ctx, p), host_detail::ProcessReadResult::ok);
    EXPECT_EQ(p.pid, static_cast<std::uint32_t>(a.pid));
    EXPECT_EQ(reader.read(static_cast<std::uint32_t>(b.pid), ctx, p), host_detail::ProcessReadResult::ok);
    EXPECT_EQ(p.pid, static_cast<std::uint32_t>(b.pid));
    EXPECT_EQ(p.ppid, static_cast<std::uint32_t>(::getpid()));
    EXPECT_EQ(reader.kept_stat_fds(), 1u);
    reader.sweep();
  }
  a.stop();
  EXPECT_EQ(reader.read(static_cast<std::uint32_t>(a.pid), ctx, p), host_detail::ProcessReadResult::gone);
  reader.sweep();  // a was not read this tick: its entry and descriptor go
  EXPECT_EQ(reader.kept_stat_fds(), 0u);
  ::close(root);
}

TEST(HostKeptFiles, StatusOncePerProcessKeepsTheUser) {
  HostOptions o;
  o.process_status_every_tick = false;
  o.requested_process_details = false;
  HostCollector c(o);
  HostSample h;
  std::vector<ProcessSample> ps;
  const std::uint32_t self[] = {static_cast<std::uint32_t>(::getpid())};
  for (int tick = 0; tick < 3; ++tick) {
    c.collect(h, ps, self);
    ASSERT_EQ(ps.size(), 1u);
    EXPECT_EQ(ps[0].uid, ::getuid());
    EXPECT_FALSE(ps[0].user.empty());
    EXPECT_FALSE(ps[0].nspid.empty());
    EXPECT_EQ(ps[0].status_file, ReadStatus::ok);
    EXPECT_EQ(ps[0].shared_bytes.status, ReadStatus::not_collected);  // only read with status every tick
    EXPECT_EQ(ps[0].read_bytes.status, ReadStatus::not_collected);    // no io without details
    EXPECT_EQ(ps[0].cgroup.status, ReadStatus::not_collected);
    EXPECT_TRUE(ps[0].rss_bytes.ok());
    EXPECT_NE(ps[0].cmdline.find(program_invocation_short_name), std::string::npos);
  }
}

TEST(HostKeptFiles, NoFrequenciesWhenNotAsked) {
  HostOptions o;
  o.proc_root = host_fixture("cpu_online_files") + "/proc";
  o.sys_root = host_fixture("cpu_online_files") + "/sys";
  o.cpu_frequency = false;
  HostCollector c(o);
  HostSample h;
  std::vector<ProcessSample> ps;
  c.collect(h, ps, {});
  ASSERT_EQ(h.cpus.size(), 4u);
  EXPECT_EQ(h.cpus[0].frequency_mhz.status, ReadStatus::not_collected);
  EXPECT_EQ(h.cpus[3].frequency_mhz.status, ReadStatus::not_collected);
  EXPECT_EQ(h.cpus[2].frequency_mhz.status, ReadStatus::not_available);  // offline
  EXPECT_EQ(h.cpu_count_online, 3u);
  EXPECT_EQ(h.cpu_temperature_c, Reading<double>::of(61.25));
}
