// SPDX-License-Identifier: Apache-2.0
// Writes a synthetic /proc + /sys + etc/passwd tree (a training box: init, kernel threads, torchrun
// jobs with DDP ranks and DataLoader workers, user shells) for the 256-CPU tests, the host benchmark
// and bench/compare_host_psutil.sh. File shapes are copied from a live Linux 6.x machine, including
// statm (which psutil reads and trainmon does not). `tick` advances every counter deterministically:
// per tick each CPU line gains 100 ticks, of which user = 10 × (cpu % 4 + 1).
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

namespace trainmon::test {

struct SyntheticTreeOptions {
  unsigned cpus = 8;
  unsigned processes = 1000;
  unsigned tick = 0;
};

namespace synthetic_detail {

inline bool put(const std::string& path, const std::string& text) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  return std::fclose(f) == 0 && ok;
}

inline std::string fmt(const char* format, auto... args) {
  char buf[4096];
  const int n = std::snprintf(buf, sizeof buf, format, args...);
  return std::string(buf, n > 0 ? static_cast<std::size_t>(n < 4096 ? n : 4095) : 0);
}

struct Proc {
  unsigned pid, ppid, uid, threads;
  const char* comm;
  std::string cmdline;  // NUL-separated
  bool kernel;
  std::uint64_t rss_pages, vsize, start, cpu;
};

inline std::string stat_line(const Proc& p, unsigned tick) {
  const std::uint64_t ut = p.cpu + tick * (p.kernel ? 0 : p.pid % 7), st = p.cpu / 4;
  return fmt(
      "%u (%s) %c %u %u %u 0 -1 %u 12345 0 67 0 %llu %llu 0 0 20 0 %u 0 %llu %llu %llu 18446744073709551615 "
      "94000000000000 94000000100000 140000000000000 0 0 0 0 4096 17663 0 0 0 17 %u 0 0 0 0 0 "
      "94000000200000 94000000300000 94000000400000 140000000500000 140000000600000 140000000600000 "
      "140000000700000 0\n",
      p.pid, p.comm, p.kernel ? 'I' : (p.pid % 5 == 0 ? 'R' : 'S'), p.ppid, p.pid, p.pid,
      p.kernel ? 2129984u : 4194560u, static_cast<unsigned long long>(ut),
      static_cast<unsigned long long>(st), p.threads, static_cast<unsigned long long>(p.start),
      static_cast<unsigned long long>(p.vsize), static_cast<unsigned long long>(p.rss_pages), p.pid % 8);
}

inline std::string status_text(const Proc& p) {
  std::string s =
      fmt("Name:\t%s\nUmask:\t0022\nState:\t%s\nTgid:\t%u\nNgid:\t0\nPid:\t%u\nPPid:\t%u\nTracerPid:\t0\n"
          "Uid:\t%u\t%u\t%u\t%u\nGid:\t%u\t%u\t%u\t%u\nFDSize:\t256\nGroups:\t%u \nNStgid:\t%u\nNSpid:\t%u\n"
          "NSpgid:\t%u\nNSsid:\t%u\nKthread:\t%d\n",
          p.comm, p.kernel ? "I (idle)" : "S (sleeping)", p.pid, p.pid, p.ppid, p.uid, p.uid, p.uid, p.uid,
          p.uid, p.uid, p.uid, p.uid, p.uid, p.pid, p.pid, p.pid, p.pid, p.kernel ? 1 : 0);
  if (!p.kernel) {
    const auto kb = p.rss_pages * 4;
    s += fmt(
        "VmPeak:\t%8llu kB\nVmSize:\t%8llu kB\nVmLck:\t       0 kB\nVmPin:\t       0 kB\nVmHWM:\t%8llu kB\n"
        "VmRSS:\t%8llu kB\nRssAnon:\t%8llu kB\nRssFile:\t%8llu kB\nRssShmem:\t%8llu kB\nVmData:\t%8llu kB\n"
        "VmStk:\t     132 kB\nVmExe:\t    2800 kB\nVmLib:\t   35000 kB\nVmPTE:\t     400 kB\nVmSwap:\t       "
        "0 kB\n"
        "HugetlbPages:\t       0 kB\nCoreDumping:\t0\nTHP_enabled:\t1\nuntag_mask:\t0xffffffffffffffff\n",
        static_cast<unsigned long long>(p.vsize / 1024), static_cast<unsigned long long>(p.vsize / 1024),
        static_cast<unsigned long long>(kb), static_cast<unsigned long long>(kb),
        static_cast<unsigned long long>(kb * 7 / 10), static_cast<unsigned long long>(kb * 25 / 100),
        static_cast<unsigned long long>(kb * 5 / 100), static_cast<unsigned long long>(p.vsize / 2048));
  }
  s +=
      fmt("Threads:\t%u\nSigQ:\t0/96364\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n"
          "SigBlk:\t0000000000000000\nSigIgn:\t0000000001001000\nSigCgt:\t0000000180004002\n"
          "CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n"
          "CapBnd:\t000001ffffffffff\nCapAmb:\t0000000000000000\nNoNewPrivs:\t0\nSeccomp:\t0\nSeccomp_"
          "filters:\t0\n"
          "Speculation_Store_Bypass:\tthread vulnerable\nSpeculationIndirectBranch:\tconditional enabled\n"
          "Cpus_allowed:\tffffffff\nCpus_allowed_list:\t0-31\nMems_allowed:\t00000000,00000001\n"
          "Mems_allowed_list:\t0\nvoluntary_ctxt_switches:\t%u\nnonvoluntary_ctxt_switches:\t%u\n",
          p.threads, p.pid * 3, p.pid);
  return s;
}

}  // namespace synthetic_detail

/// Writes the tree under `root` (root/proc, root/sys, root/etc/passwd). False on any I/O error.
inline bool write_synthetic_tree(const std::string& root, const SyntheticTreeOptions& o) {
  using namespace synthetic_detail;
  const std::string proc = root + "/proc", sys = root + "/sys";
  const unsigned t = o.tick;
  bool ok = true;
  // ---- machine-wide files
  std::string stat;
  unsigned long long tu = 0, ti = 0;
  std::string lines;
  for (unsigned c = 0; c < o.cpus; ++c) {
    const unsigned long long u = 5000 + c * 3 + 10ull * t * (c % 4 + 1);
    const unsigned long long i = 900000 + c * 11 + 10ull * t * (10 - (c % 4 + 1));
    tu += u;
    ti += i;
    lines += fmt("cpu%u %llu 12 %u %llu 150 0 30 0 0 0\n", c, u, 800 + c, i);
  }
  stat = fmt("cpu  %llu %u %u %llu %u 0 %u 0 0 0\n", tu, 12 * o.cpus, 800 * o.cpus, ti, 150 * o.cpus,
             30 * o.cpus) +
         lines +
         "intr 123456789 0 9 0 0\nctxt 987654321\nbtime 1700000000\nprocesses 123456\nprocs_running 3\n"
         "procs_blocked 0\nsoftirq 1 2 3 4 5 6 7 8 9 10 11\n";
  ok &= put(proc + "/stat", stat);
  ok &= put(proc + "/uptime", fmt("%u.%02u 80000.00\n", 10000 + t, 0));
  ok &= put(proc + "/loadavg", "12.50 11.75 10.00 14/1203 654321\n");
  ok &= put(proc + "/sys/kernel/hostname", "synthetic\n");
  ok &= put(proc + "/meminfo",
            fmt("MemTotal:       1056000000 kB\nMemFree:        200000000 kB\nMemAvailable:   800000000 kB\n"
                "Buffers:          500000 kB\nCached:         550000000 kB\nSwapCached:            0 kB\n"
                "Active:         300000000 kB\nInactive:       250000000 kB\nActive(anon):   150000000 kB\n"
                "Inactive(anon):  10000000 kB\nActive(file):   150000000 kB\nInactive(file): 240000000 kB\n"
                "Unevictable:      100000 kB\nMlocked:               0 kB\nSwapTotal:       8000000 kB\n"
                "SwapFree:        8000000 kB\nZswap:                 0 kB\nZswapped:              0 kB\n"
                "Dirty:              %u kB\nWriteback:             0 kB\nAnonPages:      160000000 kB\n"
                "Mapped:          2000000 kB\nShmem:           3000000 kB\nKReclaimable:    9000000 kB\n"
                "Slab:           12000000 kB\nSReclaimable:    9000000 kB\nSUnreclaim:      3000000 kB\n"
                "KernelStack:       60000 kB\nPageTables:       400000 kB\nCommitLimit:   536000000 kB\n"
                "Committed_AS:  300000000 kB\nVmallocTotal:   34359738367 kB\nHugePages_Total:       0\n"
                "Hugepagesize:       2048 kB\nDirectMap4k:     1000000 kB\n",
                1000 + t));
  ok &= put(proc + "/pressure/cpu",
            "some avg10=1.00 avg60=0.50 avg300=0.20 total=1000000\n"
            "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
  ok &= put(proc + "/pressure/memory",
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=10\n"
            "full avg10=0.00 avg60=0.00 avg300=0.00 total=5\n");
  ok &= put(proc + "/pressure/io",
            "some avg10=0.20 avg60=0.10 avg300=0.00 total=300\n"
            "full avg10=0.10 avg60=0.00 avg300=0.00 total=100\n");
  std::string disks;
  for (unsigned d = 0; d < 8; ++d) {
    disks += fmt(" 259 %u nvme%un1 %u 0 %u 100 %u 0 %u 90 0 150 190 0 0 0 0 0 0\n", d * 2, d, 5000 + d,
                 64000 + t * 2048, 3000 + d, 20000 + t * 4096);
    disks += fmt(" 259 %u nvme%un1p1 400 0 60000 90 250 0 1800 80 0 140 170 0 0 0 0 0 0\n", d * 2 + 1, d);
  }
  ok &= put(proc + "/diskstats", "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n" + disks);
  std::string net =
      "Inter-|   Receive                                                |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo "
      "colls carrier "
      "compressed\n"
      "    lo:    3267      29    0    0    0     0          0         0     3267      29    0    0    0     "
      "0       0 "
      "         0\n";
  for (unsigned n = 0; n < 4; ++n) {
    net += fmt("  ib%u: %llu 2110 0 0 0 0 0 0 %llu 1202 0 0 0 0 0 0\n", n, 99519312ull + 1000000ull * t,
               96727ull + 500000ull * t);
  }
  ok &= put(proc + "/net/dev", net);
  ok &= put(sys + "/devices/system/cpu/online", fmt("0-%u\n", o.cpus - 1));
  ok &= put(sys + "/devices/system/cpu/present", fmt("0-%u\n", o.cpus - 1));
  for (unsigned c = 0; c < o.cpus; ++c) {
    ok &= put(sys + fmt("/devices/system/cpu/cpu%u/cpufreq/scaling_cur_freq", c),
              fmt("%u\n", 2000000 + c * 1000));
  }
  ok &= put(sys + "/class/hwmon/hwmon0/name", "coretemp\n");
  ok &= put(sys + "/class/hwmon/hwmon0/temp1_label", "Package id 0\n");
  ok &= put(sys + "/class/hwmon/hwmon0/temp1_input", "55000\n");
  ok &= put(root + "/etc/passwd",
            "root:x:0:0:root:/root:/bin/bash\ntrain:x:1000:1000::/home/train:/bin/bash\n");

  // ---- processes: init, kthreadd + kernel threads, torchrun jobs (1 + 8 ranks + 32 workers), shells
  std::vector<Proc> ps;
  ps.push_back(
      {1, 0, 0, 1, "systemd", std::string("/sbin/init\0splash\0", 18), false, 3000, 170000000, 1, 900});
  ps.push_back({2, 0, 0, 1, "kthreadd", "", true, 0, 0, 1, 5});
  unsigned pid = 3;
  for (unsigned k = 0; k < 60 && ps.size() < o.processes; ++k, ++pid) {
    ps.push_back({pid, 2, 0, 1, "kworker/0:1-events", "", true, 0, 0, 2, 10});
  }
  unsigned job = 0;
  while (ps.size() < o.processes) {
    const unsigned launcher = pid++;
    const std::string job_cmd =
        std::string("/usr/bin/python3\0-m\0torch.distributed.run\0--nproc_per_node=8\0train.py\0", 70);
    ps.push_back({launcher, 1, 1000, 4, "torchrun", job_cmd, false, 20000, 900000000, 500 + job, 3000});
    for (unsigned r = 0; r < 8 && ps.size() < o.processes; ++r) {
      const unsigned rank = pid++;
      ps.push_back({rank, launcher, 1000, 40, "python3",
                    std::string("/usr/bin/python3\0-u\0train.py\0--local-rank=0\0", 44), false, 2000000,
                    40000000000, 600 + job, 500000});
      for (unsigned w = 0; w < 4 && ps.size() < o.processes; ++w) {
        ps.push_back({pid++, rank, 1000, 2, "pt_data_worker",
                      std::string("/usr/bin/python3\0-u\0train.py\0", 28), false, 300000, 20000000000,
                      700 + job, 20000});
      }
    }
    ++job;
    if (job % 4 == 0) {
      for (unsigned s = 0; s < 40 && ps.size() < o.processes; ++s) {
        ps.push_back({pid++, 1, s % 2 ? 1000u : 0u, 1, "bash", std::string("-bash\0", 6), false, 1500,
                      12000000, 800, 20});
      }
    }
  }
  const std::string cg =
      "0::/system.slice/docker-3f4e5d6c7b8a99881726354453627180a1b2c3d4e5f60718293a4b5c6d7e8f90.scope\n";
  for (const Proc& p : ps) {
    const std::string dir = proc + "/" + std::to_string(p.pid);
    ok &= put(dir + "/stat", stat_line(p, t));
    ok &= put(dir + "/status", status_text(p));
    ok &= put(
        dir + "/statm",
        fmt("%llu %llu %llu 700 0 %llu 0\n", static_cast<unsigned long long>(p.vsize / 4096),
            static_cast<unsigned long long>(p.rss_pages), static_cast<unsigned long long>(p.rss_pages / 4),
            static_cast<unsigned long long>(p.vsize / 8192)));
    ok &= put(dir + "/cmdline", p.cmdline);
    ok &=
        put(dir + "/io", fmt("rchar: %u\nwchar: %u\nsyscr: 100\nsyscw: 50\nread_bytes: %u\nwrite_bytes: %u\n"
                             "cancelled_write_bytes: 0\n",
                             p.pid * 1000 + t * 4096, p.pid * 500, p.pid * 512 + t * 4096, p.pid * 256));
    ok &= put(dir + "/cgroup", p.kernel ? "0::/\n" : cg);
  }
  return ok;
}

}  // namespace trainmon::test
