// SPDX-License-Identifier: Apache-2.0
#include "trainmon/sampler/sampler.h"

#include <algorithm>
#include <ctime>

#include "trainmon/core/clock.h"
#include "trainmon/sampler/gpu_process_join.h"

namespace trainmon {

Sampler::Sampler(SamplerOptions options) : options_(std::move(options)) {
  if (options_.collect_gpus) backend_ = open_nvml_backend(options_.backend);
  if (options_.collect_host) {
    host_ = std::make_unique<HostCollector>(options_.host);
    const ProcPidNamespace ns = detect_proc_pid_namespace(options_.host.proc_root);
    join_options_.host_pid_namespace = ns.initial;
    join_options_.probe_missing_pids = ns.own && ns.initial == true;
    join_options_.own_level = ns.self_depth;
  }
}

Sampler::~Sampler() = default;

SamplerOptions& Sampler::options() noexcept {
  return options_;
}

DriverInfo Sampler::driver_info() const {
  if (!backend_) {
    DriverInfo info;
    info.error = "GPU collection disabled";
    return info;
  }
  return backend_->driver_info();
}

Snapshot Sampler::sample() {
  Snapshot snap;
  snap.time_unix_ns = now_ns(CLOCK_REALTIME);
  snap.monotonic_ns = now_ns(CLOCK_MONOTONIC);

  // --- GPUs, and meanwhile the host-wide values (they need nothing from the GPUs): the /proc reads
  // overlap the driver calls on the workers, and when those are done first this thread never sleeps.
  const auto host_wide = [&] {
    if (host_) host_->collect_system(snap.host);
  };
  if (backend_) {
    backend_->sample(snap.gpus, snap.gpu_processes, host_wide);
    snap.driver = backend_->driver_info();  // after: a driver that just finished starting says so
    snap.events = backend_->drain_events();
  } else {
    host_wide();
  }

  // --- host processes: the GPU processes' pids plus the watched ones ---
  if (host_) {
    std::vector<std::uint32_t> pids = options_.watch_pids;
    pids.reserve(pids.size() + snap.gpu_processes.size());
    for (const auto& p : snap.gpu_processes) pids.push_back(p.pid);
    // Running below the /proc's namespace: the processes the driver may number in ours (join rule 5).
    if (join_options_.own_level > 0 && !snap.gpu_processes.empty()) {
      std::vector<std::uint32_t> gpu_pids;
      for (const auto& p : snap.gpu_processes) gpu_pids.push_back(p.pid);
      join_options_.own_namespace_pids =
          proc_pids_by_nspid(options_.host.proc_root, join_options_.own_level, gpu_pids);
      pids.insert(pids.end(), join_options_.own_namespace_pids.begin(),
                  join_options_.own_namespace_pids.end());
    }
    std::sort(pids.begin(), pids.end());
    pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
    host_->collect_processes(snap.host, snap.processes, pids);
    join_gpu_processes(snap.gpu_processes, snap.processes, join_memory_, snap.host.uptime_s.value_or(0.0),
                       join_options_);
  }
  return snap;
}

}  // namespace trainmon
