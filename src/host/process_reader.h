// SPDX-License-Identifier: Apache-2.0
// ProcessReader: one process's /proc/PID files (stat, status, cmdline; io and cgroup when asked)
// into a ProcessSample, with one reused read buffer and caches of uid → name and of the cgroup and
// command line per (pid, start time). Rates are computed by the collector, which keeps the previous counters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "file_reader.h"
#include "trainmon/core/host_sample.h"
#include "trainmon/host/user_names.h"

namespace trainmon::host_detail {

struct ProcessReadContext {
  std::string_view proc_root;
  int proc_root_fd = -1;     ///< open directory of proc_root (openat base)
  double ticks_per_s = 100;  ///< sysconf(_SC_CLK_TCK)
  std::uint64_t page_size = 4096;
  std::optional<std::uint64_t> boot_time_unix_s;  ///< /proc/stat btime
  std::optional<std::uint64_t> mem_total_bytes;   ///< for mem_pct
  std::optional<double> uptime_s;                 ///< for cpu_pct_lifetime
  bool details = false;                           ///< also read io and cgroup
  std::size_t cmdline_max_bytes = 4096;
};

enum class ProcessReadResult : std::uint8_t {
  ok,          ///< `out` filled (some fields may carry a failure status)
  gone,        ///< no such process (ENOENT/ESRCH on stat): skip it
  unreadable,  ///< stat not readable (hidepid, EACCES) or malformed: skip it, count it
};

class ProcessReader {
 public:
  explicit ProcessReader(std::string passwd_path);
  /// Reads process `pid`. Never throws.
  ProcessReadResult read(std::uint32_t pid, const ProcessReadContext& ctx, ProcessSample& out);
  /// Drops cache entries of processes not read since the previous call (call once per tick).
  void sweep();

 private:
  FileReader file_;
  UserNames users_;
  struct CgroupEntry {
    std::uint64_t start_time_ticks = 0;
    Reading<std::string> cgroup;
    Reading<std::string> container_id;
    bool valid = false;    ///< filled for (pid, start_time_ticks)
    bool touched = false;  ///< read since the last sweep()
  };
  std::unordered_map<std::uint32_t, CgroupEntry> cgroups_;
  /// The command line per (pid, start time): it rarely changes after exec, and reading it for every
  /// process on every tick was the largest per-process cost of `top`'s all-processes view (btop
  /// caches it too). Read again when comm changes (exec, prctl), when it was empty (a process
  /// between fork and exec, a zombie), and every kCmdlineRefreshReads reads (setproctitle).
  struct CmdlineEntry {
    std::uint64_t start_time_ticks = 0;
    std::string comm;
    std::string cmdline;
    unsigned reads = 0;
    bool touched = false;
  };
  static constexpr unsigned kCmdlineRefreshReads = 30;
  std::unordered_map<std::uint32_t, CmdlineEntry> cmdlines_;
};

}  // namespace trainmon::host_detail
