// SPDX-License-Identifier: Apache-2.0
// ProcessReader: one process's /proc/PID files (stat, status, cmdline; io and cgroup when asked)
// into a ProcessSample, with one reused read buffer and one cache entry per (pid, start time): the
// command line, the cgroup, the uid and NSpid when status is not read every tick, and the open
// /proc/PID/stat descriptor on procfs. Rates are computed by the collector, which keeps the previous
// counters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "file_reader.h"
#include "trainmon/core/host_sample.h"
#include "trainmon/host/attribution.h"
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
  bool details = false;                           ///< also read io and cgroup (and attribution)
  /// Fill ProcessSample::attribution (cgroup and environ, cached per (pid, start time)) even
  /// without `details`.
  bool attribution = false;
  /// The kubelet's pod log directories, for namespace, pod and container names; null: none.
  KubeletPods* pods = nullptr;
  std::size_t cmdline_max_bytes = 4096;
  /// Read /proc/PID/status on every call (shared_bytes, swap_bytes); false: once per (pid, start
  /// time) and every kRefreshReads calls, for uid, user and NSpid only.
  bool status_every_tick = true;
  /// proc_root is procfs: /proc/PID/stat may be kept open and read again with pread.
  bool keep_stat_fds = false;
  /// proc_root is the procfs of this process's PID namespace: kill(pid, 0) answering ESRCH means
  /// no /proc/PID (no failed path lookup, which allocates and frees a dentry, for pids the driver
  /// lists that this namespace cannot see).
  bool own_procfs = false;
};

enum class ProcessReadResult : std::uint8_t {
  ok,          ///< `out` filled (some fields may carry a failure status)
  gone,        ///< no such process (ENOENT/ESRCH on stat): skip it
  unreadable,  ///< stat not readable (hidepid, EACCES) or malformed: skip it, count it
};

class ProcessReader {
 public:
  /// `max_kept_stat_fds`: at most this many /proc/PID/stat descriptors stay open (0: from
  /// RLIMIT_NOFILE, a quarter of the soft limit, at most 1024).
  explicit ProcessReader(std::string passwd_path, std::size_t max_kept_stat_fds = 0);
  ~ProcessReader();
  ProcessReader(const ProcessReader&) = delete;
  ProcessReader& operator=(const ProcessReader&) = delete;
  /// Reads process `pid`. Never throws.
  ProcessReadResult read(std::uint32_t pid, const ProcessReadContext& ctx, ProcessSample& out);
  /// Drops cache entries (and closes the descriptors) of processes not read since the previous
  /// call (call once per tick).
  void sweep();
  /// Descriptors kept open now (tests).
  [[nodiscard]] std::size_t kept_stat_fds() const noexcept { return kept_; }

  /// Cached values are read again every this many reads: the command line (setproctitle), the uid
  /// (setuid after start-up) when status is not read every tick.
  static constexpr unsigned kRefreshReads = 30;

 private:
  FileReader file_;
  UserNames users_;
  /// One process, for one start time (a new start time under the same pid starts over).
  struct Entry {
    std::uint64_t start_time_ticks = 0;
    int stat_fd = -1;  ///< /proc/PID/stat kept open, or -1
    bool touched = false;
    // The command line: it rarely changes after exec, and reading it for every process on every
    // tick was the largest per-process cost of `top`'s all-processes view (btop caches it too).
    // Read again when comm changes (exec, prctl), when it was empty in a process with an address
    // space (a process between fork and exec; kernel threads and zombies have none, and no command
    // line to wait for), and every kRefreshReads reads (setproctitle).
    std::string comm;
    std::string cmdline;
    std::vector<std::string> args;  ///< the same cmdline as argv
    unsigned cmdline_reads = 0;
    // status fields that hold for the process's life (uid: until a setuid, hence the refresh).
    unsigned status_reads = 0;
    ReadStatus status_file = ReadStatus::not_collected;
    std::uint32_t uid = 0;
    std::string user;
    std::vector<std::uint32_t> nspid;
    // cgroup (details only).
    bool cgroup_valid = false;
    Reading<std::string> cgroup;
    Reading<std::string> container_id;
    // Attribution (details or attribution): environ and cgroup, read again after an exec (comm
    // changed: a process between fork and exec still shows its parent's environment) and every
    // kRefreshReads reads (a process moved into another cgroup).
    unsigned attribution_reads = 0;
    std::string attribution_comm;
    ProcessAttribution attribution;
  };
  void drop_stat_fd(Entry& e) noexcept;
  std::unordered_map<std::uint32_t, Entry> entries_;
  std::size_t kept_ = 0;
  std::size_t max_kept_ = 0;
};

}  // namespace trainmon::host_detail
