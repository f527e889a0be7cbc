// SPDX-License-Identifier: Apache-2.0
// Pure parsers for the machine-wide files of /proc (and the CPU lists of /sys). Each takes the file's
// text and returns what it could read; a malformed line costs only the values on it. Never throw.
// File formats: proc(5), Documentation/filesystems/proc.rst, Documentation/accounting/psi.rst.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainmon/core/host_sample.h"

namespace trainmon {

// ---- /proc/meminfo -----------------------------------------------------------------------------

/// The /proc/meminfo fields we use, in bytes (the file's "kB" is KiB). A field missing from the file
/// (older kernel) is std::nullopt.
struct MeminfoValues {
  std::optional<std::uint64_t> mem_total, mem_free, mem_available, buffers, cached, swap_cached, active_file,
      inactive_file, shmem, sreclaimable, kreclaimable, dirty, swap_total, swap_free;
};

/// Parses /proc/meminfo ("MemTotal:   16316412 kB"). Unknown keys are ignored.
MeminfoValues parse_meminfo(std::string_view text);

/// Sum of the per-zone low watermarks in /proc/zoneinfo ("        low      41" lines), in pages.
/// std::nullopt when the text holds no "low" line.
std::optional<std::uint64_t> parse_zoneinfo_low_pages(std::string_view text);

/// Estimate of MemAvailable for kernels older than 3.14, the kernel's own formula as introduced with
/// MemAvailable (commit 34e431b0ae39, mm/page_alloc.c si_mem_available(); see
/// Documentation/filesystems/proc.rst "MemAvailable"):
///   available = MemFree - wmark_low
///             + pagecache - min(pagecache / 2, wmark_low)   (pagecache = Active(file) + Inactive(file))
///             + SReclaimable - min(SReclaimable / 2, wmark_low), clamped at 0.
/// `wmark_low_bytes` is the sum of the zones' low watermarks (parse_zoneinfo_low_pages × page size);
/// when /proc/zoneinfo is unreadable pass the approximation min_free_kbytes × 1.25 (the kernel sets
/// low = min + min/4 in __setup_per_zone_wmarks) or 0 (an upper bound). Without Active(file),
/// Inactive(file) or SReclaimable (kernels < 2.6.28) returns MemFree + Cached, as psutil does.
/// std::nullopt when MemFree is missing.
std::optional<std::uint64_t> estimate_mem_available(const MeminfoValues& m, std::uint64_t wmark_low_bytes);

// ---- /proc/stat ----------------------------------------------------------------------------------

/// Cumulative CPU time of one "cpu" / "cpuN" line of /proc/stat, in clock ticks (USER_HZ).
struct CpuCounters {
  std::uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0,
                guest = 0, guest_nice = 0;
  /// Every field that is time spent (guest and guest_nice are already inside user and nice).
  std::uint64_t total() const noexcept {
    return user + nice + system + idle + iowait + irq + softirq + steal;
  }
};

struct ProcStat {
  std::optional<CpuCounters> total;  ///< the aggregate "cpu" line
  struct Core {
    unsigned cpu = 0;  ///< N of "cpuN" (online CPUs only appear)
    CpuCounters counters;
  };
  std::vector<Core> cores;                        ///< in file order
  std::optional<std::uint64_t> boot_time_unix_s;  ///< "btime"
  std::optional<std::uint64_t> processes_forked;  ///< "processes"
  std::optional<std::uint64_t> procs_running;
  std::optional<std::uint64_t> procs_blocked;
};

/// Parses /proc/stat. A cpu line with fewer than 4 numbers is skipped; missing trailing fields
/// (old kernels have no steal/guest) are 0.
ProcStat parse_proc_stat(std::string_view text);

/// Share of each state between two counter sets, percent of the elapsed ticks (user = user + nice,
/// system = system + irq + softirq). A counter that went backwards counts as 0; no elapsed ticks
/// gives all zeros (never NaN).
CpuTimes cpu_times_between(const CpuCounters& before, const CpuCounters& after);

// ---- small files ---------------------------------------------------------------------------------

struct LoadAvg {
  double load1 = 0, load5 = 0, load15 = 0;
  std::uint32_t running = 0, total = 0;  ///< "2/99": runnable / total scheduling entities
  /// The last pid the kernel handed out (a process or a thread) in the reader's PID namespace: it
  /// moves whenever anything is created. nullopt when the field is missing or malformed.
  std::optional<std::uint32_t> last_pid;
};
/// Parses /proc/loadavg ("0.71 0.21 0.08 2/99 9202"); nullopt when the first three are not numbers.
std::optional<LoadAvg> parse_loadavg(std::string_view text);

/// Parses /proc/uptime ("569.86 1043.45"): seconds since boot (CLOCK_BOOTTIME), nullopt if malformed.
std::optional<double> parse_uptime(std::string_view text);

/// Parses a kernel CPU list ("0-3,5,7-8\n", /sys/devices/system/cpu/online, cpuset.cpus) into
/// ascending CPU numbers. Empty text gives an empty list; a malformed range yields nullopt.
/// Ranges larger than 65536 CPUs are refused (nullopt).
std::optional<std::vector<unsigned>> parse_cpu_list(std::string_view text);

/// One line of /proc/pressure/{cpu,memory,io} (Documentation/accounting/psi.rst).
struct PressureLine {
  double avg10 = 0, avg60 = 0, avg300 = 0;  ///< percent of wall time stalled
  std::uint64_t total_us = 0;               ///< cumulative stall time, microseconds
};
struct PressureValues {
  std::optional<PressureLine> some;
  std::optional<PressureLine> full;  ///< absent for cpu before Linux 5.13
};
/// Parses a PSI file ("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull ...").
PressureValues parse_pressure(std::string_view text);

// ---- disks and network ---------------------------------------------------------------------------

/// One /proc/diskstats row: cumulative sectors are 512-byte units whatever the device's sector size
/// (Documentation/admin-guide/iostats.rst).
struct DiskCounters {
  unsigned major = 0, minor = 0;
  std::string name;
  std::uint64_t reads_completed = 0, sectors_read = 0, writes_completed = 0, sectors_written = 0;
  std::uint64_t io_ms = 0;  ///< field 10: time spent doing I/O, milliseconds
};
/// Parses /proc/diskstats (14, 18 or 20 columns). Rows with fewer than 14 columns are skipped.
std::vector<DiskCounters> parse_diskstats(std::string_view text);

/// True when `name` is a partition of another device in `all_names` ("sda1" of "sda", "nvme0n1p2"
/// of "nvme0n1", "mmcblk0p1" of "mmcblk0"): the other name is a prefix and the rest is "p"? digits.
bool is_partition_name(std::string_view name, const std::vector<std::string_view>& all_names);
/// True for loop*, ram* and zram* devices (virtual; skipped unless asked for).
bool is_virtual_block_device(std::string_view name);

/// One /proc/net/dev interface: cumulative bytes and packets.
struct NetCounters {
  std::string name;
  std::uint64_t rx_bytes = 0, rx_packets = 0, rx_errors = 0, rx_dropped = 0;
  std::uint64_t tx_bytes = 0, tx_packets = 0, tx_errors = 0, tx_dropped = 0;
};
/// Parses /proc/net/dev (two header lines, then "  eth0: rx... tx..."). Rows with fewer than 16
/// numbers are skipped.
std::vector<NetCounters> parse_net_dev(std::string_view text);

/// Rate of a cumulative counter over `elapsed_s`: 0 when the counter went backwards (reset, wrap,
/// device re-plugged) or when no time elapsed; never negative, NaN or infinite.
double counter_rate(std::uint64_t before, std::uint64_t after, double elapsed_s) noexcept;

}  // namespace trainmon
