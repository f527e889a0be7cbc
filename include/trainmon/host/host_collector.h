// SPDX-License-Identifier: Apache-2.0
// HostCollector: reads /proc and /sys (under injectable roots) into HostSample / ProcessSample.
// Rates (CPU %, disk and network bytes/s, process CPU %) need two ticks: the collector keeps the
// previous counters, so the first tick reports zeros / N/A for them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "trainmon/core/host_sample.h"

namespace trainmon {

/// $TRAINMON_POD_LOGS_ROOT when set and not empty, else /var/log/pods.
std::string default_pod_logs_root();

struct HostOptions {
  std::string proc_root = "/proc";  ///< --proc-root (a fixture tree in tests)
  std::string sys_root = "/sys";    ///< --sys-root
  bool all_processes = false;       ///< list every process, not only the requested pids
  bool disks = true;                ///< /proc/diskstats rates
  bool nets = true;                 ///< /proc/net/dev rates
  // Added by the host collector (src/host):
  /// Read /proc/PID/io and /proc/PID/cgroup for every listed process; otherwise only for `pids`.
  bool all_process_details = false;
  bool disks_include_virtual = false;     ///< also report loop*, ram*, zram* devices
  bool disks_include_partitions = false;  ///< also report partitions (sda1, nvme0n1p2)
  std::size_t cmdline_max_bytes = 4096;   ///< longer command lines are cut (UTF-8 boundary)
  /// Per-CPU frequencies (cpufreq scaling_cur_freq, else /proc/cpuinfo "cpu MHz"): one file per CPU
  /// or the whole of /proc/cpuinfo every tick; false leaves CpuCoreSample::frequency_mhz not_collected
  /// (`top` does not show them).
  bool cpu_frequency = true;
  /// Read /proc/PID/io and /proc/PID/cgroup for the processes in `pids` (all_process_details: for
  /// every process). false: only with all_process_details (`top` shows neither).
  bool requested_process_details = true;
  /// Fill ProcessSample::attribution (Slurm job, pod, container, rank: /proc/PID/environ and cgroup,
  /// read once per process and every 30th tick) for the processes in `pids` even when
  /// requested_process_details is false (`top`). Details always include it.
  bool requested_process_attribution = true;
  /// The kubelet's pod log directory (--pod-logs-root, else $TRAINMON_POD_LOGS_ROOT, else
  /// /var/log/pods), for pod namespaces and names and container names; empty: none read. Its sibling
  /// "containers" directory (/var/log/containers) gives container names by container id.
  std::string pod_logs_root = default_pod_logs_root();
  /// Read /proc/PID/status on every tick (shared_bytes, swap_bytes). false: once per process (and
  /// every 30th tick, for a setuid after start-up) for uid, user and NSpid only; shared_bytes and
  /// swap_bytes are then not_collected. status is the dearest /proc/PID file for the kernel to write.
  bool process_status_every_tick = true;
};

class HostCollector {
 public:
  explicit HostCollector(HostOptions options);
  ~HostCollector();
  HostCollector(const HostCollector&) = delete;
  HostCollector& operator=(const HostCollector&) = delete;

  /// Read host-wide metrics into `host`, and into `processes` every process in `pids` (plus every
  /// process when options.all_processes). A pid that is gone or unreadable is skipped (not an error);
  /// a malformed file costs only the values it holds. Never throws.
  void collect(HostSample& host, std::vector<ProcessSample>& processes, std::span<const std::uint32_t> pids);
  /// collect() in two halves, so that the host-wide part can run while the GPUs are sampled (the
  /// processes need the GPU pids): collect_system() resets `host` and reads everything host-wide
  /// (uptime and the interval every rate uses, CPU, memory, load, pressure, temperature, disks,
  /// networks); collect_processes() then reads the processes into `processes` (cleared first) and
  /// the process counts into the same `host`, whose uptime, boot time and memory total their values
  /// and rates are computed from. collect() is exactly the one followed by the other.
  void collect_system(HostSample& host);
  void collect_processes(HostSample& host, std::vector<ProcessSample>& processes,
                         std::span<const std::uint32_t> pids);

  const HostOptions& options() const noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace trainmon
