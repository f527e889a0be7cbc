// SPDX-License-Identifier: Apache-2.0
// NvmlBackend: DeviceBackend over NVML (dlopen'ed). Created by open_nvml_backend(); this header
// exists so that `trainmon doctor` and tests can see which symbols were bound (dynamic_cast).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "device/device_worker.h"
#include "device/nvml/nvml_device.h"
#include "device/nvml/nvml_events.h"
#include "device/nvml/nvml_loader.h"
#include "trainmon/device/backend.h"

namespace trainmon::nvml {

class NvmlBackend final : public DeviceBackend {
 public:
  explicit NvmlBackend(const BackendOptions& options);
  /// Stops the workers and the event thread with a bounded wait (clamp(device_timeout, 100 ms,
  /// 1 s)); a worker still stuck in NVML is detached, and then nvmlShutdown is skipped and the
  /// library is never dlclose()d (the stuck call may still return into it).
  ~NvmlBackend() override;

  DriverInfo driver_info() const override { return driver_; }
  unsigned device_count() const override { return static_cast<unsigned>(devices_.size()); }
  void sample(std::vector<GpuSample>& gpus, std::vector<GpuProcessSample>& processes) override;
  std::vector<GpuEvent> drain_events() override;

  /// Which name each table entry was bound to (empty when NVML was not loaded).
  std::vector<SymbolBinding> bindings() const;
  /// The event thread's state: "" when watching, else why not.
  std::string events_status() const;

 private:
  struct TickResult {
    GpuSample sample;
    std::vector<GpuProcessSample> processes;
    std::atomic<bool> done{false};  ///< set (release) by the worker after the fields above
  };
  struct Device {
    std::shared_ptr<DeviceContext> ctx;
    std::unique_ptr<device::DeviceWorker> worker;
    std::shared_ptr<const GpuStaticInfo> last_info;  ///< what a timed-out tick shows
  };
  static void run_tick(DeviceContext& ctx, TickResult& out);

  BackendOptions options_;
  DriverInfo driver_;
  std::shared_ptr<NvmlLibrary> lib_;
  bool initialised_ = false;
  std::vector<Device> devices_;
  std::unique_ptr<EventWatcher> events_;
};

}  // namespace trainmon::nvml
