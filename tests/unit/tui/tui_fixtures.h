// SPDX-License-Identifier: Apache-2.0
// Snapshots for the `trainmon top` model tests: N H200s (from the export fixtures' capture), a host
// with cores, memory and processes, GPU processes joined to them.
#pragma once

#include <string>

#include "trainmon/core/snapshot.h"
#include "unit/export/export_fixtures.h"

namespace trainmon::testing {

inline ProcessSample host_process(std::uint32_t pid, std::uint32_t ppid, std::string user, std::string cmd,
                                  double cpu, std::uint64_t rss_mib, double start_boot_s) {
  ProcessSample p;
  p.pid = pid;
  p.ppid = ppid;
  p.user = std::move(user);
  p.comm = cmd.substr(0, cmd.find(' '));
  p.cmdline = std::move(cmd);
  p.state = 'S';
  p.cpu_pct = Reading<double>::of(cpu);
  p.rss_bytes = Reading<std::uint64_t>::of(rss_mib * kMiB);
  p.start_time_boot_s = start_boot_s;
  return p;
}

/// `gpus` busy H200s; python DDP ranks 1001.. on each (one per GPU), a launcher 1000 (their parent),
/// a bash 900 and a sleep 950 off the GPUs, one GPU process 4242 not visible from here.
inline Snapshot top_snapshot(unsigned gpus, unsigned cores = 8) {
  Snapshot s = h200_snapshot();
  s.gpus.clear();
  for (unsigned i = 0; i < gpus; ++i) {
    GpuSample g = h200_idle();
    g.index = i;
    g.utilization_gpu_pct = Reading<unsigned>::of(90 + i % 10);
    g.memory_used_bytes = Reading<std::uint64_t>::of((60000 + 1000ull * i) * kMiB);
    g.temperature_gpu_c = Reading<unsigned>::of(60 + i);
    g.power_draw_mw = Reading<unsigned>::of(650000);
    g.clocks_event_reasons_active = Reading<std::uint64_t>::of(0x4);  // power cap
    g.pcie_rx_kib_s = Reading<unsigned>::of(2048);
    g.pcie_tx_kib_s = Reading<unsigned>::of(1024);
    s.gpus.push_back(g);
  }
  s.host.hostname = "gpu-node-01";
  s.host.uptime_s = Reading<double>::of(10000);
  s.host.cpu_count_online = cores;
  s.host.cpu_total.busy_pct = 42;
  for (unsigned c = 0; c < cores; ++c) {
    CpuCoreSample core;
    core.cpu = c;
    core.times.busy_pct = 10.0 * (c % 10);
    s.host.cpus.push_back(core);
  }
  s.host.load1 = Reading<double>::of(3.5);
  s.host.load5 = Reading<double>::of(2.5);
  s.host.load15 = Reading<double>::of(1.5);
  s.host.cpu_temperature_c = Reading<double>::of(55);
  s.host.memory.total_bytes = Reading<std::uint64_t>::of(64ull * 1024 * kMiB);
  s.host.memory.used_bytes = Reading<std::uint64_t>::of(16ull * 1024 * kMiB);
  s.host.memory.available_bytes = Reading<std::uint64_t>::of(48ull * 1024 * kMiB);
  s.host.memory.cached_bytes = Reading<std::uint64_t>::of(20ull * 1024 * kMiB);
  s.host.memory.swap_total_bytes = Reading<std::uint64_t>::of(8ull * 1024 * kMiB);
  s.host.memory.swap_used_bytes = Reading<std::uint64_t>::of(0);

  s.processes.push_back(host_process(900, 1, "alice", "bash", 0.0, 5, 100));
  s.processes.push_back(host_process(950, 900, "bob", "sleep 1000", 0.0, 1, 9000));
  s.processes.push_back(host_process(1000, 900, "alice", "torchrun train.py", 1.0, 300, 5000));
  for (unsigned i = 0; i < gpus; ++i) {
    auto p = host_process(1001 + i, 1000, "alice", "python train.py --rank " + std::to_string(i), 100.0 + i,
                          2000 + 10 * i, 5001);
    s.processes.push_back(p);
    GpuProcessSample gp = gpu_process(1001 + i, "python", 1000 + 500ull * i, i);
    gp.sm_util_pct = Reading<unsigned>::of(80 + i);
    gp.host = HostVisibility::visible;
    s.gpu_processes.push_back(gp);
  }
  GpuProcessSample ghost = gpu_process(4242, "python", 3000, 0);
  ghost.host = HostVisibility::not_visible;
  s.gpu_processes.push_back(ghost);
  return s;
}

}  // namespace trainmon::testing
