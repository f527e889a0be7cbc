// SPDX-License-Identifier: Apache-2.0
// The NVML loader: dlopen the driver's library and bind every entry point trainmon uses from ONE
// table (nvml_loader.cpp, kEntryPoints), each marked required or optional, each with its versioned
// names in order of preference (e.g. nvmlInit_v2 then nvmlInit). No link-time dependency on the
// driver: pointer types are `decltype(&nvmlX)` of our own declarations (nvml_api.h).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "device/nvml/nvml_api.h"
#include "trainmon/core/error.h"

namespace trainmon::nvml {

/// The NVML codes with which an exported entry point says that it does not implement itself:
/// NVML_ERROR_FUNCTION_NOT_FOUND (a newer name exported by a library whose driver lacks it, e.g. a
/// container's libnvidia-ml newer than the host's kernel module) and NVML_ERROR_NOT_SUPPORTED.
/// Where an older version of the entry point exists, these answers make trainmon use it, exactly
/// as if the newer name were not exported at all (NVML-NOTES §6.1, design implication 1).
constexpr bool nvml_answer_means_try_older(int rc) noexcept {
  return rc == NVML_ERROR_FUNCTION_NOT_FOUND || rc == NVML_ERROR_NOT_SUPPORTED;
}

/// An entry point whose versions share one signature (nvmlInit_v2 / nvmlInit, nvmlDeviceGetPciInfo
/// _v3 / _v2 / plain, ...): the loader adds every version the library exports, newest first. A call
/// goes to the newest one in use; when it answers nvml_answer_means_try_older(), the older ones are
/// called in turn. A version that answered NVML_ERROR_FUNCTION_NOT_FOUND, or NOT_SUPPORTED where an
/// older one then succeeded, is skipped from then on (for every device and thread of this library).
/// When every version declines, the answer is NOT_SUPPORTED if any said so, else FUNCTION_NOT_FOUND.
/// `== nullptr` when the library exports none of the names. Thread-safe (the choice is an atomic).
template <class Fn>
class Versioned;
template <class... A>
class Versioned<nvmlReturn_t (*)(A...)> {
 public:
  using Fn = nvmlReturn_t (*)(A...);
  static constexpr unsigned kMaxVersions = 3;

  Versioned() = default;
  Versioned(const Versioned& o) noexcept : fns_(o.fns_), count_(o.count_), first_(o.first_.load()) {}
  Versioned& operator=(const Versioned& o) noexcept {
    fns_ = o.fns_;
    count_ = o.count_;
    first_.store(o.first_.load());
    return *this;
  }
  /// Appends an older version (the loader adds them in order of preference); null is ignored.
  void add(Fn f) noexcept {
    if (f != nullptr && count_ < kMaxVersions) fns_[count_++] = f;
  }
  /// Which of the added versions calls go to first now (0 = the newest exported).
  unsigned in_use() const noexcept { return first_.load(std::memory_order_relaxed); }
  unsigned versions() const noexcept { return count_; }

  nvmlReturn_t operator()(A... args) const {
    const unsigned first = in_use();
    bool not_supported = false;
    for (unsigned i = first; i < count_; ++i) {
      const nvmlReturn_t rc = fns_[i](args...);
      if (!nvml_answer_means_try_older(rc)) {
        // An older version answered where the newer ones declined: use it directly from now on,
        // unless a newer one only said NOT_SUPPORTED and this one failed too (a device that lacks
        // the feature: keep asking the newest, it may be the one that knows).
        if (i != first && (rc == NVML_SUCCESS || !not_supported)) raise_first(i);
        return rc;
      }
      if (rc == NVML_ERROR_NOT_SUPPORTED) {
        not_supported = true;
      } else if (!not_supported && i + 1 < count_) {
        raise_first(i + 1);  // FUNCTION_NOT_FOUND: this version is not implemented here
      }
    }
    return not_supported ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_FUNCTION_NOT_FOUND;
  }
  friend bool operator==(const Versioned& v, std::nullptr_t) noexcept { return v.count_ == 0; }
  explicit operator bool() const noexcept { return count_ != 0; }

 private:
  void raise_first(unsigned i) const noexcept {
    unsigned cur = first_.load(std::memory_order_relaxed);
    while (cur < i && !first_.compare_exchange_weak(cur, i, std::memory_order_relaxed)) {
    }
  }
  std::array<Fn, kMaxVersions> fns_{};
  unsigned count_ = 0;
  mutable std::atomic<unsigned> first_{0};
};

/// Bound entry points; a null pointer means the driver does not export any of the names tried.
/// Functions whose versions take different structs (process lists, memory) have one slot per
/// version, and their readers fall back from one to the next on nvml_answer_means_try_older(); the
/// others are one Versioned slot holding every version found.
struct NvmlApi {
  Versioned<decltype(&nvmlInit_v2)> init;
  decltype(&nvmlShutdown) shutdown = nullptr;
  decltype(&nvmlErrorString) error_string = nullptr;
  decltype(&nvmlSystemGetDriverVersion) system_get_driver_version = nullptr;
  decltype(&nvmlSystemGetNVMLVersion) system_get_nvml_version = nullptr;
  Versioned<decltype(&nvmlSystemGetCudaDriverVersion_v2)> system_get_cuda_driver_version;
  decltype(&nvmlSystemGetProcessName) system_get_process_name = nullptr;

  Versioned<decltype(&nvmlDeviceGetCount_v2)> device_get_count;
  Versioned<decltype(&nvmlDeviceGetHandleByIndex_v2)> device_get_handle_by_index;
  decltype(&nvmlDeviceGetName) device_get_name = nullptr;
  decltype(&nvmlDeviceGetUUID) device_get_uuid = nullptr;
  decltype(&nvmlDeviceGetSerial) device_get_serial = nullptr;
  decltype(&nvmlDeviceGetVbiosVersion) device_get_vbios_version = nullptr;
  Versioned<decltype(&nvmlDeviceGetPciInfo_v3)> device_get_pci_info;
  decltype(&nvmlDeviceGetCudaComputeCapability) device_get_cuda_compute_capability = nullptr;
  decltype(&nvmlDeviceGetBrand) device_get_brand = nullptr;
  decltype(&nvmlDeviceGetArchitecture) device_get_architecture = nullptr;
  decltype(&nvmlDeviceGetCurrPcieLinkGeneration) device_get_curr_pcie_link_generation = nullptr;
  decltype(&nvmlDeviceGetCurrPcieLinkWidth) device_get_curr_pcie_link_width = nullptr;
  decltype(&nvmlDeviceGetMaxPcieLinkGeneration) device_get_max_pcie_link_generation = nullptr;
  decltype(&nvmlDeviceGetGpuMaxPcieLinkGeneration) device_get_gpu_max_pcie_link_generation = nullptr;
  decltype(&nvmlDeviceGetMaxPcieLinkWidth) device_get_max_pcie_link_width = nullptr;
  decltype(&nvmlDeviceGetPcieThroughput) device_get_pcie_throughput = nullptr;
  decltype(&nvmlDeviceGetPcieReplayCounter) device_get_pcie_replay_counter = nullptr;

  decltype(&nvmlDeviceGetMemoryInfo_v2) device_get_memory_info_v2 = nullptr;
  decltype(&nvmlDeviceGetMemoryInfo) device_get_memory_info_v1 = nullptr;
  decltype(&nvmlDeviceGetBAR1MemoryInfo) device_get_bar1_memory_info = nullptr;
  decltype(&nvmlDeviceGetUtilizationRates) device_get_utilization_rates = nullptr;
  decltype(&nvmlDeviceGetEncoderUtilization) device_get_encoder_utilization = nullptr;
  decltype(&nvmlDeviceGetDecoderUtilization) device_get_decoder_utilization = nullptr;
  decltype(&nvmlDeviceGetJpgUtilization) device_get_jpg_utilization = nullptr;
  decltype(&nvmlDeviceGetOfaUtilization) device_get_ofa_utilization = nullptr;
  decltype(&nvmlDeviceGetSamples) device_get_samples = nullptr;

  decltype(&nvmlDeviceGetTemperature) device_get_temperature = nullptr;
  decltype(&nvmlDeviceGetTemperatureThreshold) device_get_temperature_threshold = nullptr;
  decltype(&nvmlDeviceGetPowerUsage) device_get_power_usage = nullptr;
  decltype(&nvmlDeviceGetPowerManagementLimit) device_get_power_management_limit = nullptr;
  decltype(&nvmlDeviceGetEnforcedPowerLimit) device_get_enforced_power_limit = nullptr;
  decltype(&nvmlDeviceGetPowerManagementDefaultLimit) device_get_power_management_default_limit = nullptr;
  decltype(&nvmlDeviceGetPowerManagementLimitConstraints) device_get_power_management_limit_constraints =
      nullptr;
  decltype(&nvmlDeviceGetTotalEnergyConsumption) device_get_total_energy_consumption = nullptr;
  decltype(&nvmlDeviceGetFanSpeed) device_get_fan_speed = nullptr;
  decltype(&nvmlDeviceGetNumFans) device_get_num_fans = nullptr;
  decltype(&nvmlDeviceGetPerformanceState) device_get_performance_state = nullptr;

  decltype(&nvmlDeviceGetClockInfo) device_get_clock_info = nullptr;
  decltype(&nvmlDeviceGetMaxClockInfo) device_get_max_clock_info = nullptr;
  Versioned<decltype(&nvmlDeviceGetCurrentClocksEventReasons)> device_get_current_clocks_event_reasons;
  Versioned<decltype(&nvmlDeviceGetSupportedClocksEventReasons)> device_get_supported_clocks_event_reasons;
  decltype(&nvmlDeviceGetFieldValues) device_get_field_values = nullptr;

  decltype(&nvmlDeviceGetEccMode) device_get_ecc_mode = nullptr;
  decltype(&nvmlDeviceGetTotalEccErrors) device_get_total_ecc_errors = nullptr;
  decltype(&nvmlDeviceGetMemoryErrorCounter) device_get_memory_error_counter = nullptr;
  decltype(&nvmlDeviceGetRetiredPages) device_get_retired_pages = nullptr;
  decltype(&nvmlDeviceGetRetiredPagesPendingStatus) device_get_retired_pages_pending_status = nullptr;
  decltype(&nvmlDeviceGetRemappedRows) device_get_remapped_rows = nullptr;

  decltype(&nvmlDeviceGetPersistenceMode) device_get_persistence_mode = nullptr;
  decltype(&nvmlDeviceGetComputeMode) device_get_compute_mode = nullptr;
  decltype(&nvmlDeviceGetDisplayActive) device_get_display_active = nullptr;
  decltype(&nvmlDeviceGetMigMode) device_get_mig_mode = nullptr;
  decltype(&nvmlDeviceGetMaxMigDeviceCount) device_get_max_mig_device_count = nullptr;
  decltype(&nvmlDeviceGetMigDeviceHandleByIndex) device_get_mig_device_handle_by_index = nullptr;
  decltype(&nvmlDeviceGetGpuInstanceId) device_get_gpu_instance_id = nullptr;
  decltype(&nvmlDeviceGetComputeInstanceId) device_get_compute_instance_id = nullptr;

  // process lists: one slot per struct layout (v3 → nvmlProcessInfo_v2_t or the 535 layout,
  // v2 → nvmlProcessInfo_v2_t, plain → nvmlProcessInfo_v1_t)
  decltype(&nvmlDeviceGetComputeRunningProcesses_v3) device_get_compute_running_processes_v3 = nullptr;
  decltype(&nvmlDeviceGetComputeRunningProcesses_v2) device_get_compute_running_processes_v2 = nullptr;
  decltype(&nvmlDeviceGetComputeRunningProcesses) device_get_compute_running_processes_v1 = nullptr;
  decltype(&nvmlDeviceGetGraphicsRunningProcesses_v3) device_get_graphics_running_processes_v3 = nullptr;
  decltype(&nvmlDeviceGetGraphicsRunningProcesses_v2) device_get_graphics_running_processes_v2 = nullptr;
  decltype(&nvmlDeviceGetGraphicsRunningProcesses) device_get_graphics_running_processes_v1 = nullptr;
  decltype(&nvmlDeviceGetProcessUtilization) device_get_process_utilization = nullptr;

  decltype(&nvmlEventSetCreate) event_set_create = nullptr;
  decltype(&nvmlDeviceGetSupportedEventTypes) device_get_supported_event_types = nullptr;
  decltype(&nvmlDeviceRegisterEvents) device_register_events = nullptr;
  Versioned<decltype(&nvmlEventSetWait_v2)> event_set_wait;
  decltype(&nvmlEventSetFree) event_set_free = nullptr;

  decltype(&nvmlGpmQueryDeviceSupport) gpm_query_device_support = nullptr;
  decltype(&nvmlGpmSampleAlloc) gpm_sample_alloc = nullptr;
  decltype(&nvmlGpmSampleFree) gpm_sample_free = nullptr;
  decltype(&nvmlGpmSampleGet) gpm_sample_get = nullptr;
  decltype(&nvmlGpmMigSampleGet) gpm_mig_sample_get = nullptr;
  decltype(&nvmlGpmMetricsGet) gpm_metrics_get = nullptr;

  // nvidia-smi --query-gpu fields beyond the monitoring set (display, accounting, driver model,
  // inforom, margin temperature, encoder stats, fabric, supported clocks)
  decltype(&nvmlDeviceGetDisplayMode) device_get_display_mode = nullptr;
  decltype(&nvmlDeviceGetAccountingMode) device_get_accounting_mode = nullptr;
  decltype(&nvmlDeviceGetAccountingBufferSize) device_get_accounting_buffer_size = nullptr;
  Versioned<decltype(&nvmlDeviceGetDriverModel_v2)> device_get_driver_model;
  decltype(&nvmlDeviceGetInforomImageVersion) device_get_inforom_image_version = nullptr;
  decltype(&nvmlDeviceGetInforomVersion) device_get_inforom_version = nullptr;
  decltype(&nvmlDeviceValidateInforom) device_validate_inforom = nullptr;
  decltype(&nvmlDeviceGetMarginTemperature) device_get_margin_temperature = nullptr;
  decltype(&nvmlDeviceGetSramEccErrorStatus) device_get_sram_ecc_error_status = nullptr;
  decltype(&nvmlDeviceGetEncoderStats) device_get_encoder_stats = nullptr;
  decltype(&nvmlDeviceGetGpuFabricInfoV) device_get_gpu_fabric_info_v = nullptr;
  decltype(&nvmlDeviceGetGpuFabricInfo) device_get_gpu_fabric_info_v1 = nullptr;
  decltype(&nvmlDeviceGetSupportedMemoryClocks) device_get_supported_memory_clocks = nullptr;
  decltype(&nvmlDeviceGetSupportedGraphicsClocks) device_get_supported_graphics_clocks = nullptr;
};

/// Which name one table entry was bound to (for `trainmon doctor` and JSON output).
struct SymbolBinding {
  std::string entry;  ///< the preferred name, e.g. "nvmlInit_v2"
  /// The name calls go to now, e.g. "nvmlInit" (the newest exported one, or an older one once the
  /// newer answered that it is not implemented: Versioned); empty when none was found.
  std::string bound;
  bool required = false;
  std::vector<std::string> exported;  ///< every name of the entry the library exports, newest first
};

/// An opened NVML library with its bound entry points. Move-only; dlclose()s in the destructor
/// unless leak() was called (a worker thread may still be inside the library).
class NvmlLibrary {
 public:
  NvmlLibrary() = default;
  ~NvmlLibrary();
  NvmlLibrary(NvmlLibrary&& other) noexcept;
  NvmlLibrary& operator=(NvmlLibrary&& other) noexcept;
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  const NvmlApi& api() const noexcept { return api_; }
  const std::string& path() const noexcept { return path_; }
  /// Every table entry with the names exported and the one calls go to now.
  std::vector<SymbolBinding> bindings() const;
  /// The name bound for the entry whose preferred name is `entry` ("" when unbound or unknown).
  std::string bound_name(std::string_view entry) const;
  /// Never dlclose this library (called when a hung NVML call may still return into it).
  void leak() noexcept { leaked_ = true; }

 private:
  friend Expected<NvmlLibrary> load_nvml_library(const std::vector<std::string>& candidates);
  void* handle_ = nullptr;
  bool leaked_ = false;
  std::string path_;
  NvmlApi api_;
  std::vector<SymbolBinding> bindings_;
};

/// The library names to try, in order: `explicit_path` alone when set, else $TRAINMON_NVML_LIBRARY
/// alone when set, else "libnvidia-ml.so.1" then "libnvidia-ml.so".
std::vector<std::string> nvml_library_candidates(const std::string& explicit_path);

/// dlopen the first candidate that opens and binds every required entry point. A library under a
/// ".../stubs/" directory (the CUDA toolkit's build stub) is refused. On failure the Error message
/// is one line naming every candidate tried and why it failed, plus what to check.
Expected<NvmlLibrary> load_nvml_library(const std::vector<std::string>& candidates);

/// The advice of an "NVML not usable" line whose reason has none of its own.
inline constexpr std::string_view kNvmlHint =
    "is the NVIDIA driver installed and loaded? check `nvidia-smi` and `lsmod | grep nvidia`, or set "
    "TRAINMON_NVML_LIBRARY to the driver's libnvidia-ml.so.1";

/// The one line that says why no GPU can be read: "REASON: ADVICE (DETAIL)". The reason and the
/// advice come first and the detail (the library path, what dlopen said, the driver's return code)
/// last, so that a view that cuts the line at its width (top's header at 80 or 60 columns, a cell)
/// cuts the detail, never the advice (docs/gpu-check.md, "When no GPU can be read").
std::string driver_failure_line(std::string_view reason, std::string_view advice, std::string_view detail);

}  // namespace trainmon::nvml
