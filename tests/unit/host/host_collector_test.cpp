// SPDX-License-Identifier: Apache-2.0
// HostCollector over the committed fixture trees (tests/fixtures/host, written by make_fixtures.py).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
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
const std::string kContainer = "3f4e5d6c7b8a99881726354453627180a1b2c3d4e5f60718293a4b5c6d7e8f90";

}  // namespace

TEST(HostCollector, OldKernelEstimatesAvailableFromZoneinfo) {
  HostCollector c(fixture_options(host_fixture("old_kernel")));
  HostSample h;
  std::vector<ProcessSample> ps;
  c.collect(h, ps, {});
  ASSERT_TRUE(h.memory.available_bytes.ok());
  EXPECT_TRUE(h.memory.available_estimated);
  // Hand-computed in make_fixtures.py: 1,024,000,000 - 65,536,000 + 2,048,000,000 - 65,536,000
  //                                    + 307,200,000 - 65,536,000
  EXPECT_EQ(*h.memory.available_bytes, 3182592000u);
  EXPECT_EQ(*h.memory.used_bytes, 8000000ull * 1024 - 3182592000u);
  EXPECT_EQ(*h.memory.cached_bytes, (2000000ull + 300000) * 1024);
  EXPECT_EQ(*h.memory.swap_used_bytes, 500000ull * 1024);
  EXPECT_EQ(*h.memory.dirty_bytes, 1234ull * 1024);
  EXPECT_EQ(h.pressure_cpu.some_avg10_pct.status, ReadStatus::not_supported);  // no PSI before 4.20
  EXPECT_EQ(h.pressure_memory.full_avg60_pct.status, ReadStatus::not_supported);
  EXPECT_EQ(h.cpu_temperature_c.status, ReadStatus::not_supported);
  EXPECT_EQ(h.hostname, "oldbox");
  EXPECT_EQ(h.cpu_count_online, 2u);
  ASSERT_EQ(ps.size(), 1u);
  EXPECT_EQ(ps[0].comm, "bash");
  EXPECT_EQ(ps[0].cmdline, "-bash");
  EXPECT_EQ(ps[0].user, "root");
  EXPECT_TRUE(ps[0].nspid.empty());  // NSpid appeared in 4.1
}

TEST(HostCollector, SparseAndOfflineCpus) {
  HostCollector c(fixture_options(host_fixture("sparse_cpus")));
  HostSample h;
  std::vector<ProcessSample> ps;
  c.collect(h, ps, {});
  ASSERT_EQ(h.cpus.size(), 8u);
  EXPECT_EQ(h.cpu_count_online, 5u);
  const bool online[8] = {true, true, false, false, true, false, true, true};
  for (unsigned i = 0; i < 8; ++i) {
    EXPECT_EQ(h.cpus[i].cpu, i);
    EXPECT_EQ(h.cpus[i].online, online[i]) << "cpu" << i;
  }
  EXPECT_EQ(h.cpus[2].frequency_mhz.status, ReadStatus::not_available);
  EXPECT_EQ(h.cpus[4].frequency_mhz, Reading<unsigned>::of(2400));
  EXPECT_EQ(h.cpus[7].frequency_mhz, Reading<unsigned>::of(2700));
  // x86_pkg_temp is preferred over acpitz even though acpitz is zone 0.
  EXPECT_EQ(h.cpu_temperature_c, Reading<double>::of(52.0));
  EXPECT_EQ(*h.memory.available_bytes, 3000000ull * 1024);
  EXPECT_FALSE(h.memory.available_estimated);
}

TEST(HostCollector, PerCpuOnlineFilesK10tempAndCpuinfoFrequency) {
  HostCollector c(fixture_options(host_fixture("cpu_online_files")));
  HostSample h;
  std::vector<ProcessSample> ps;
  c.collect(h, ps, {});
  ASSERT_EQ(h.cpus.size(), 4u);
  EXPECT_TRUE(h.cpus[0].online);  // cpu0 has no online file
  EXPECT_TRUE(h.cpus[1].online);
  EXPECT_FALSE(h.cpus[2].online);
  EXPECT_TRUE(h.cpus[3].online);
  EXPECT_EQ(h.cpu_count_online, 3u);
  EXPECT_EQ(h.cpus[0].frequency_mhz, Reading<unsigned>::of(3400));
  EXPECT_EQ(h.cpus[3].frequency_mhz, Reading<unsigned>::of(1800));    // 1799.600 rounded
  EXPECT_EQ(h.cpu_temperature_c, Reading<double>::of(61.25));         // k10temp Tctl, not the nvme chip
  EXPECT_EQ(h.memory.total_bytes.status, ReadStatus::not_supported);  // no meminfo in this tree
}

TEST(HostCollector, TwoTicksGiveExactRates) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  point_to(tmp.path(), host_fixture("machine/tick1"));
  HostOptions o = fixture_options(tmp.path());
  HostCollector c(o);
  HostSample h;
  std::vector<ProcessSample> ps;
  const std::uint32_t watched[] = {100};
  c.collect(h, ps, watched);

  // First tick: no rates yet.
  EXPECT_EQ(h.interval_s, 0);
  EXPECT_EQ(h.cpu_total.busy_pct, 0);
  ASSERT_NE(find_pid(ps, 100), nullptr);
  EXPECT_EQ(find_pid(ps, 100)->cpu_pct.status, ReadStatus::not_available);
  // ...but the lifetime average is there: 120 s of CPU over 1000 - 500 s.
  EXPECT_NEAR(find_pid(ps, 100)->cpu_pct_lifetime.value, 24.0, kEps);

  point_to(tmp.path(), host_fixture("machine/tick2"));
  c.collect(h, ps, watched);
  EXPECT_DOUBLE_EQ(h.interval_s, 2.0);
  ASSERT_EQ(h.cpus.size(), 4u);
  EXPECT_NEAR(h.cpus[0].times.user_pct, 50, kEps);
  EXPECT_NEAR(h.cpus[0].times.system_pct, 25, kEps);
  EXPECT_NEAR(h.cpus[0].times.idle_pct, 20, kEps);
  EXPECT_NEAR(h.cpus[0].times.iowait_pct, 5, kEps);
  EXPECT_NEAR(h.cpus[0].times.busy_pct, 75, kEps);
  EXPECT_NEAR(h.cpus[1].times.idle_pct, 100, kEps);
  EXPECT_NEAR(h.cpus[1].times.busy_pct, 0, kEps);
  EXPECT_NEAR(h.cpus[2].times.user_pct, 25, kEps);
  EXPECT_NEAR(h.cpus[2].times.steal_pct, 25, kEps);
  EXPECT_NEAR(h.cpus[2].times.idle_pct, 50, kEps);
  // cpu3's idle went backwards: clamped to 0, so the 100 user ticks are all of the interval.
  EXPECT_NEAR(h.cpus[3].times.user_pct, 100, kEps);
  EXPECT_NEAR(h.cpus[3].times.idle_pct, 0, kEps);
  // Aggregate line: user 250, system 50, idle 240, iowait 10, steal 50 of 600.
  EXPECT_NEAR(h.cpu_total.user_pct, 250 * 100.0 / 600, kEps);
  EXPECT_NEAR(h.cpu_total.idle_pct, 40, kEps);

  // Disks: partitions, loop devices skipped; dm-0 kept.
  ASSERT_EQ(h.disks.size(), 3u);
  EXPECT_EQ(h.disks[0].name, "sda");
  EXPECT_DOUBLE_EQ(h.disks[0].read_bytes_per_s, 1024000.0);
  EXPECT_EQ(h.disks[0].read_bytes_total, 5000u * 512);
  EXPECT_EQ(h.disks[1].name, "nvme0n1");
  EXPECT_DOUBLE_EQ(h.disks[1].write_bytes_per_s, 1024000.0);
  EXPECT_EQ(h.disks[2].name, "dm-0");
  // Network: eth1's counter was reset: 0, not 2^64.
  ASSERT_EQ(h.nets.size(), 3u);
  EXPECT_EQ(h.nets[1].name, "eth0");
  EXPECT_DOUBLE_EQ(h.nets[1].rx_bytes_per_s, 10000.0);
  EXPECT_DOUBLE_EQ(h.nets[1].tx_bytes_per_s, 0.0);
  EXPECT_EQ(h.nets[2].name, "eth1");
  EXPECT_DOUBLE_EQ(h.nets[2].rx_bytes_per_s, 0.0);

  // Host-wide values.
  EXPECT_EQ(h.hostname, "gpubox");
  EXPECT_EQ(h.load1, Reading<double>::of(1.25));
  EXPECT_EQ(h.boot_time_unix_s, Reading<std::uint64_t>::of(1700000000));
  EXPECT_EQ(h.procs_blocked, Reading<unsigned>::of(1));
  EXPECT_EQ(h.cpu_temperature_c, Reading<double>::of(47.0));  // coretemp "Package id 0", not "Core 0"
  EXPECT_EQ(h.cpus[0].frequency_mhz, Reading<unsigned>::of(3000));
  EXPECT_EQ(*h.memory.total_bytes, 16000000ull * 1024);
  EXPECT_EQ(*h.memory.available_bytes, 10000000ull * 1024);
  EXPECT_FALSE(h.memory.available_estimated);
  EXPECT_EQ(*h.memory.used_bytes, 6000000ull * 1024);
  EXPECT_EQ(*h.memory.cached_bytes, 6400000ull * 1024);
  EXPECT_EQ(*h.memory.swap_used_bytes, 1000000ull * 1024);
  EXPECT_EQ(h.pressure_cpu.some_avg10_pct, Reading<double>::of(12.5));
  EXPECT_EQ(h.pressure_cpu.full_avg10_pct.status, ReadStatus::not_supported);
  EXPECT_EQ(h.pressure_io.full_avg10_pct, Reading<double>::of(1.5));
  EXPECT_EQ(h.process_count, 11u);
  EXPECT_EQ(h.processes_unreadable, 0u);

  // The trainer: 240 ticks of CPU in 2 s = 120 % (more than one core).
  const ProcessSample* p = find_pid(ps, 100);
  ASSERT_NE(p, nullptr);
  EXPECT_NEAR(*p->cpu_pct, 120.0, kEps);
  EXPECT_EQ(p->ppid, 1u);
  EXPECT_EQ(p->state, 'R');
  EXPECT_EQ(p->uid, 1000u);
  EXPECT_EQ(p->user, "alice");
  EXPECT_EQ(p->comm, "python");
  EXPECT_EQ(p->cmdline, "python train.py --epochs 10");
  EXPECT_EQ(p->start_time_ticks, 50000u);
  EXPECT_DOUBLE_EQ(p->start_time_unix_s, 1700000500.0);
  EXPECT_EQ(*p->rss_bytes, 262144ull * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)));
  EXPECT_EQ(*p->vms_bytes, 8000000000u);
  EXPECT_EQ(*p->shared_bytes, (200000ull + 4096) * 1024);
  EXPECT_EQ(*p->swap_bytes, 512ull * 1024);
  EXPECT_EQ(*p->num_threads, 12u);
  EXPECT_EQ(p->nspid, (std::vector<std::uint32_t>{100, 1}));
  EXPECT_NEAR(*p->mem_pct, static_cast<double>(*p->rss_bytes) * 100 / (16000000.0 * 1024), kEps);
  EXPECT_DOUBLE_EQ(p->cpu_time_s, 122.4);
  EXPECT_EQ(*p->read_bytes, 3000000u);
  EXPECT_DOUBLE_EQ(*p->read_bytes_per_s, 1000000.0);
  EXPECT_DOUBLE_EQ(*p->write_bytes_per_s, 0.0);  // write_bytes went backwards
  EXPECT_EQ(*p->cgroup, "/system.slice/docker-" + kContainer + ".scope");
  EXPECT_EQ(*p->container_id, kContainer);
  EXPECT_EQ(p->status_file, ReadStatus::ok);

  // A worker: not requested, so io and cgroup were not read; 100 ticks in 2 s = 50 %.
  const ProcessSample* w = find_pid(ps, 101);
  ASSERT_NE(w, nullptr);
  EXPECT_NEAR(*w->cpu_pct, 50.0, kEps);
  EXPECT_EQ(w->read_bytes.status, ReadStatus::not_collected);
  EXPECT_EQ(w->cgroup.status, ReadStatus::not_collected);

  // Zombie.
  const ProcessSample* z = find_pid(ps, 200);
  ASSERT_NE(z, nullptr);
  EXPECT_EQ(z->state, 'Z');
  EXPECT_EQ(z->cmdline, "");
  EXPECT_EQ(*z->rss_bytes, 0u);
  EXPECT_EQ(z->shared_bytes.status, ReadStatus::not_supported);

  // No passwd entry: the number.
  ASSERT_NE(find_pid(ps, 300), nullptr);
  EXPECT_EQ(find_pid(ps, 300)->user, "4242");

  // Invalid UTF-8 and NUL padding; a comm with ") ".
  const ProcessSample* u = find_pid(ps, 400);
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->comm, "worker) x");
  EXPECT_EQ(u->cmdline, "nginx: worker \xEF\xBF\xBD process caf\xC3\xA9 \xEF\xBF\xBD\xEF\xBF\xBD");

  // Gone between stat and status: kept with what stat gave, identity unknown.
  const ProcessSample* g = find_pid(ps, 500);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->status_file, ReadStatus::not_available);
  EXPECT_EQ(g->user, "");
  EXPECT_EQ(g->cmdline, "");
  EXPECT_EQ(g->shared_bytes.status, ReadStatus::not_available);
  EXPECT_EQ(g->comm, "short");

  // Started this tick: no rate and no lifetime average (zero elapsed time), no division by zero.
  const ProcessSample* f = find_pid(ps, 700);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->cpu_pct.status, ReadStatus::not_available);
  EXPECT_EQ(f->cpu_pct_lifetime.status, ReadStatus::not_available);

  // Pid reused between the ticks: a new identity, so no CPU % against the old process's counters.
  const ProcessSample* r = find_pid(ps, 800);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->start_time_ticks, 99000u);
  EXPECT_EQ(r->cpu_pct.status, ReadStatus::not_available);
  EXPECT_NEAR(*r->cpu_pct_lifetime, 0.1 * 100 / (1002.0 - 990.0), kEps);
}

TEST(HostCollector, OnlyRequestedPidsWithoutAllProcesses) {
  HostOptions o = fixture_options(host_fixture("machine/tick1"));
  o.all_processes = false;
  HostCollector c(o);
  HostSample h;
  std::vector<ProcessSample> ps;
  const std::uint32_t pids[] = {300, 100, 100, 99999};  // duplicates and a pid that does not exist
  c.collect(h, ps, pids);
  ASSERT_EQ(ps.size(), 2u);
  EXPECT_EQ(ps[0].pid, 100u);
  EXPECT_EQ(ps[1].pid, 300u);
  EXPECT_EQ(h.process_count, 0u);
  EXPECT_EQ(h.processes_unreadable, 0u);  // a pid that is gone is not "unreadable"
}

TEST(HostCollector, MissingRootCostsValuesNotTheTick) {
  HostOptions o;
  o.proc_root = "/nonexistent/proc";
  o.sys_root = "/nonexistent/sys";
  o.all_processes = true;
  HostCollector c(o);
  HostSample h;
  std::vector<ProcessSample> ps;
  const std::uint32_t pids[] = {1};
  c.collect(h, ps, pids);
  EXPECT_TRUE(ps.empty());
  EXPECT_EQ(h.memory.total_bytes.status, ReadStatus::not_supported);
  EXPECT_EQ(h.load1.status, ReadStatus::not_supported);
  EXPECT_EQ(h.uptime_s.status, ReadStatus::not_supported);
  EXPECT_TRUE(h.cpus.empty());
}

// hidepid / EACCES: files the collector may not read. Runs the collector in a child that cannot
// bypass permissions (setuid nobody when the test runs as root) and reports back through a pipe.
TEST(HostCollector, UnreadableFilesCostOnlyTheirValues) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  fs::copy(host_fixture("machine/tick1"), tmp.path(), fs::copy_options::recursive);
  ::chmod(tmp.path().c_str(), 0755);
  for (const char* f : {"stat", "status", "cmdline", "io", "cgroup"}) {
    ::chmod((tmp.path() + "/proc/100/" + f).c_str(), 0);  // hidepid=1-like: nothing of 100 is readable
  }
  ::chmod((tmp.path() + "/proc/101/io").c_str(), 0);  // io of another user's process: EACCES
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(3);
    HostCollector c(fixture_options(tmp.path()));
    HostSample h;
    std::vector<ProcessSample> ps;
    const std::uint32_t pids[] = {100, 101};
    c.collect(h, ps, pids);
    const ProcessSample* w = find_pid(ps, 101);
    char buf[128];
    const int n = std::snprintf(buf, sizeof buf, "%d %u %d %d %zu", find_pid(ps, 100) != nullptr ? 1 : 0,
                                h.processes_unreadable, w ? static_cast<int>(w->read_bytes.status) : -1,
                                w ? static_cast<int>(w->cgroup.ok()) : -1, ps.size());
    if (::write(fds[1], buf, static_cast<std::size_t>(n)) != n) ::_exit(4);
    ::_exit(0);
  }
  ::close(fds[1]);
  char buf[128] = {};
  const ssize_t n = ::read(fds[0], buf, sizeof buf - 1);
  ::close(fds[0]);
  int wstatus = 0;
  ::waitpid(child, &wstatus, 0);
  ASSERT_TRUE(WIFEXITED(wstatus));
  ASSERT_EQ(WEXITSTATUS(wstatus), 0);
  ASSERT_GT(n, 0);
  int has100 = -1, io_status = -1, cgroup_ok = -1;
  unsigned unreadable = 0;
  std::size_t count = 0;
  ASSERT_EQ(std::sscanf(buf, "%d %u %d %d %zu", &has100, &unreadable, &io_status, &cgroup_ok, &count), 5);
  EXPECT_EQ(has100, 0);       // stat unreadable: skipped ...
  EXPECT_EQ(unreadable, 1u);  // ... and counted
  EXPECT_EQ(io_status, static_cast<int>(ReadStatus::no_permission));
  EXPECT_EQ(cgroup_ok, 1);  // the rest of 101 is there
  EXPECT_EQ(count, 9u);     // every other process of tick 1 still listed
}

namespace trainmon {
namespace {

bool lists(const std::vector<ProcessSample>& ps, pid_t pid) {
  return std::any_of(ps.begin(), ps.end(),
                     [&](const ProcessSample& p) { return p.pid == static_cast<std::uint32_t>(pid); });
}

// On this machine's own /proc the listing is redone only when /proc/loadavg's last pid moved: a
// process created between two ticks must still be listed at the next one, and one that exited must
// not be listed any more.
TEST(HostCollector, AllProcessesSeesNewAndExitedProcessesWithoutRelistingEveryTick) {
  HostOptions o;
  o.all_processes = true;
  HostCollector c(o);
  HostSample h;
  std::vector<ProcessSample> ps;
  c.collect(h, ps, {});
  ASSERT_TRUE(lists(ps, ::getpid()));
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  c.collect(h, ps, {});
  EXPECT_TRUE(lists(ps, child));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  c.collect(h, ps, {});
  EXPECT_FALSE(lists(ps, child));
  EXPECT_TRUE(lists(ps, ::getpid()));
}

}  // namespace
}  // namespace trainmon
