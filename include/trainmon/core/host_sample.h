// SPDX-License-Identifier: Apache-2.0
// What the host looks like at one tick: CPU, memory, PSI, disks, network, processes.
// Units in names: bytes, percent, bytes per second, kHz/MHz, seconds. Percentages of CPU are on a
// per-core basis for processes (120 % = more than one core busy) and of the whole machine for totals.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainmon/core/attribution.h"
#include "trainmon/core/reading.h"

namespace trainmon {

/// Share of time over the last interval, percent of that CPU (or of all CPUs for the total).
struct CpuTimes {
  double user_pct = 0;    ///< user + nice
  double system_pct = 0;  ///< system + irq + softirq
  double iowait_pct = 0;
  double steal_pct = 0;
  double idle_pct = 0;
  double busy_pct = 0;  ///< 100 - idle - iowait
};

struct CpuCoreSample {
  unsigned cpu = 0;  ///< kernel CPU number (may be sparse)
  bool online = true;
  CpuTimes times;                   ///< zeros on the first tick (no previous counters)
  Reading<unsigned> frequency_mhz;  ///< scaling_cur_freq or /proc/cpuinfo "cpu MHz"
};

/// Pressure stall information (/proc/pressure/*): share of time some/all tasks stalled.
struct PressureSample {
  Reading<double> some_avg10_pct;
  Reading<double> some_avg60_pct;
  Reading<double> full_avg10_pct;  ///< not provided for cpu on older kernels
  Reading<double> full_avg60_pct;
};

struct DiskSample {
  std::string name;  ///< "nvme0n1"
  double read_bytes_per_s = 0;
  double write_bytes_per_s = 0;
  std::uint64_t read_bytes_total = 0;
  std::uint64_t write_bytes_total = 0;
};

struct NetSample {
  std::string name;  ///< "eth0"
  double rx_bytes_per_s = 0;
  double tx_bytes_per_s = 0;
  std::uint64_t rx_bytes_total = 0;
  std::uint64_t tx_bytes_total = 0;
};

struct MemorySample {
  Reading<std::uint64_t> total_bytes;
  Reading<std::uint64_t> free_bytes;
  Reading<std::uint64_t> available_bytes;  ///< MemAvailable, or estimated as the kernel does
  bool available_estimated = false;        ///< true on kernels without MemAvailable (< 3.14)
  Reading<std::uint64_t> buffers_bytes;
  Reading<std::uint64_t> cached_bytes;  ///< Cached + SReclaimable (free(1)'s "cache")
  Reading<std::uint64_t> shared_bytes;  ///< Shmem
  Reading<std::uint64_t> dirty_bytes;
  Reading<std::uint64_t> used_bytes;  ///< total - available (what "really" is in use)
  Reading<std::uint64_t> swap_total_bytes;
  Reading<std::uint64_t> swap_used_bytes;
};

struct HostSample {
  std::string hostname;
  unsigned cpu_count_online = 0;
  CpuTimes cpu_total;
  std::vector<CpuCoreSample> cpus;
  Reading<double> load1, load5, load15;
  Reading<double> cpu_temperature_c;  ///< hwmon package / Tctl, or thermal zone; N/A if none
  MemorySample memory;
  PressureSample pressure_cpu, pressure_memory, pressure_io;
  std::vector<DiskSample> disks;
  std::vector<NetSample> nets;
  Reading<double> uptime_s;
  // Added by the host collector (src/host):
  double interval_s = 0;                    ///< CLOCK_BOOTTIME seconds (/proc/uptime) since the previous
                                            ///< collect, the base of every rate; 0 on the first tick
  Reading<std::uint64_t> boot_time_unix_s;  ///< /proc/stat btime
  unsigned process_count = 0;               ///< processes listed this tick (all_processes only)
  unsigned processes_unreadable = 0;        ///< listed or requested pids whose stat was not readable
                                            ///< (hidepid, EACCES); they are not in the process list
  Reading<unsigned> procs_running;          ///< /proc/stat procs_running
  Reading<unsigned> procs_blocked;          ///< /proc/stat procs_blocked (waiting on I/O)
  /// The container trainmon itself runs in (64 hex digits from its own /proc/self/cgroup, when
  /// proc_root is its own procfs), else empty. Views do not name a process's job by a container
  /// that is this one: every process of a monitor in a container would carry it.
  std::string own_container_id;
};

/// One host process. Identified by (pid, start_time_ticks), never pid alone.
struct ProcessSample {
  std::uint32_t pid = 0;
  std::uint32_t ppid = 0;
  std::uint64_t start_time_ticks = 0;  ///< /proc/PID/stat field 22, clock ticks since boot
  double start_time_unix_s = 0;
  char state = '?';  ///< R S D Z T ...
  std::uint32_t uid = 0;
  std::string user;  ///< passwd name, or the numeric uid as text
  std::string comm;
  std::string cmdline;  ///< args joined by spaces, invalid UTF-8 replaced
  Reading<std::uint64_t> rss_bytes;
  Reading<std::uint64_t> vms_bytes;
  Reading<std::uint64_t> shared_bytes;
  Reading<unsigned> num_threads;
  Reading<double> cpu_pct;            ///< per-core basis; N/A on a process's first tick
  Reading<double> mem_pct;            ///< rss / MemTotal * 100
  Reading<std::uint64_t> read_bytes;  ///< /proc/PID/io (cumulative)
  Reading<std::uint64_t> write_bytes;
  Reading<double> read_bytes_per_s;
  Reading<double> write_bytes_per_s;
  Reading<std::string> cgroup;        ///< cgroup v2 path, or v1 memory controller path
  Reading<std::string> container_id;  ///< 64-hex id found in the cgroup path
  std::vector<std::uint32_t> nspid;   ///< NSpid chain (outermost first)
  double cpu_time_s = 0;              ///< utime + stime, seconds
  // Added by the host collector (src/host) and the GPU join (src/sampler/gpu_process_join):
  double start_time_boot_s = 0;  ///< start_time_ticks / USER_HZ: seconds after boot
  /// ps-style CPU %: cpu_time_s over the whole life (per-core basis). Available on the first tick;
  /// not_available for a process that started this very tick (no elapsed time).
  Reading<double> cpu_pct_lifetime;
  /// Result of reading /proc/PID/status: when not ok (the process exited between reading stat and
  /// status, or hidepid) uid is 0 and user empty (unknown), nspid empty, shared_bytes not ok.
  ReadStatus status_file = ReadStatus::not_collected;
  Reading<std::uint64_t> swap_bytes;        ///< VmSwap
  std::vector<unsigned> gpu_indices;        ///< GPUs on which the join found this process (ascending)
  Reading<std::uint64_t> gpu_memory_bytes;  ///< sum of used_memory_bytes over those GPUs
  /// argv as the process has it (parse_cmdline_args: an argument with a blank or a newline stays one
  /// element), for machine-readable outputs; `cmdline` is its display line. Empty when cmdline is.
  std::vector<std::string> args;
  /// Slurm job, Kubernetes pod, container and rank (core/attribution.h); read with the details
  /// (cgroup, environ), cached per (pid, start time). Empty fields: not known.
  ProcessAttribution attribution;
};

}  // namespace trainmon
