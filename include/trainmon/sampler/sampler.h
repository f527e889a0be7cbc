// SPDX-License-Identifier: Apache-2.0
// Sampler: builds one immutable Snapshot per tick from every collector (GPU backend + host).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "trainmon/core/snapshot.h"
#include "trainmon/device/backend.h"
#include "trainmon/host/host_collector.h"
#include "trainmon/sampler/gpu_process_join.h"

namespace trainmon {

struct SamplerOptions {
  BackendOptions backend;
  HostOptions host;
  bool collect_gpus = true;
  bool collect_host = true;
  /// Extra host pids to read every tick besides the GPU processes (a watched job's tree).
  std::vector<std::uint32_t> watch_pids;
};

class Sampler {
 public:
  explicit Sampler(SamplerOptions options);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  /// One tick: sample every GPU, the host, the GPU processes (joined with their host details) and
  /// the watched pids. The host-wide values are read on this thread while the GPU workers run
  /// (DeviceBackend::sample's `meanwhile`); the processes after, since they need the GPU pids.
  /// Never throws.
  Snapshot sample();
  /// Driver state (loaded or why not) as found at construction.
  DriverInfo driver_info() const;
  SamplerOptions& options() noexcept;

 private:
  SamplerOptions options_;
  std::unique_ptr<DeviceBackend> backend_;
  std::unique_ptr<HostCollector> host_;
  GpuJoinMemory join_memory_;
  GpuJoinOptions join_options_;
};

}  // namespace trainmon
