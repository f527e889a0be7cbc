// SPDX-License-Identifier: Apache-2.0
#include "device/nvml/nvml_loader.h"

#include <dlfcn.h>
#include <link.h>

#include <array>
#include <cstdlib>
#include <type_traits>
#include <utility>

namespace trainmon::nvml {

namespace {

enum class Need : bool { optional = false, required = true };

/// One entry point: names in order of preference (versioned first), and the slot it fills.
struct EntryPoint {
  std::array<const char*, 3> names;
  Need need;
  void (*assign)(NvmlApi&, void*);
  unsigned (*in_use)(const NvmlApi&);
};

template <class T>
struct IsVersioned : std::false_type {};
template <class F>
struct IsVersioned<Versioned<F>> : std::true_type {};

/// Fills a slot: a Versioned slot gets every exported version in order, a plain one the first.
template <auto Member>
void assign(NvmlApi& api, void* sym) {
  using Slot = std::remove_reference_t<decltype(api.*Member)>;
  if constexpr (IsVersioned<Slot>::value) {
    (api.*Member).add(reinterpret_cast<typename Slot::Fn>(sym));
  } else if (api.*Member == nullptr) {
    api.*Member = reinterpret_cast<Slot>(sym);
  }
}

/// Which exported version calls go to now (0 for a plain slot).
template <auto Member>
unsigned in_use(const NvmlApi& api) {
  using Slot = std::remove_cvref_t<decltype(api.*Member)>;
  if constexpr (IsVersioned<Slot>::value) {
    return (api.*Member).in_use();
  } else {
    return 0;
  }
}

constexpr Need R = Need::required;
constexpr Need O = Need::optional;

// THE table. Same-signature versions share a slot (first name found wins); versions that take
// different structs have their own slots (NvmlApi). Sources: NVML-NOTES §6.1, §6.4, §6.5.
constexpr EntryPoint kEntryPoints[] = {
    {{"nvmlInit_v2", "nvmlInit"}, R, &assign<&NvmlApi::init>, &in_use<&NvmlApi::init>},
    {{"nvmlShutdown"}, R, &assign<&NvmlApi::shutdown>, &in_use<&NvmlApi::shutdown>},
    {{"nvmlErrorString"}, O, &assign<&NvmlApi::error_string>, &in_use<&NvmlApi::error_string>},
    {{"nvmlSystemGetDriverVersion"},
     O,
     &assign<&NvmlApi::system_get_driver_version>,
     &in_use<&NvmlApi::system_get_driver_version>},
    {{"nvmlSystemGetNVMLVersion"},
     O,
     &assign<&NvmlApi::system_get_nvml_version>,
     &in_use<&NvmlApi::system_get_nvml_version>},
    {{"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"},
     O,
     &assign<&NvmlApi::system_get_cuda_driver_version>,
     &in_use<&NvmlApi::system_get_cuda_driver_version>},
    {{"nvmlSystemGetProcessName"},
     O,
     &assign<&NvmlApi::system_get_process_name>,
     &in_use<&NvmlApi::system_get_process_name>},

    {{"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"},
     R,
     &assign<&NvmlApi::device_get_count>,
     &in_use<&NvmlApi::device_get_count>},
    {{"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"},
     R,
     &assign<&NvmlApi::device_get_handle_by_index>,
     &in_use<&NvmlApi::device_get_handle_by_index>},
    {{"nvmlDeviceGetName"}, O, &assign<&NvmlApi::device_get_name>, &in_use<&NvmlApi::device_get_name>},
    {{"nvmlDeviceGetUUID"}, O, &assign<&NvmlApi::device_get_uuid>, &in_use<&NvmlApi::device_get_uuid>},
    {{"nvmlDeviceGetSerial"}, O, &assign<&NvmlApi::device_get_serial>, &in_use<&NvmlApi::device_get_serial>},
    {{"nvmlDeviceGetVbiosVersion"},
     O,
     &assign<&NvmlApi::device_get_vbios_version>,
     &in_use<&NvmlApi::device_get_vbios_version>},
    {{"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo"},
     O,
     &assign<&NvmlApi::device_get_pci_info>,
     &in_use<&NvmlApi::device_get_pci_info>},
    {{"nvmlDeviceGetCudaComputeCapability"},
     O,
     &assign<&NvmlApi::device_get_cuda_compute_capability>,
     &in_use<&NvmlApi::device_get_cuda_compute_capability>},
    {{"nvmlDeviceGetBrand"}, O, &assign<&NvmlApi::device_get_brand>, &in_use<&NvmlApi::device_get_brand>},
    {{"nvmlDeviceGetArchitecture"},
     O,
     &assign<&NvmlApi::device_get_architecture>,
     &in_use<&NvmlApi::device_get_architecture>},
    {{"nvmlDeviceGetCurrPcieLinkGeneration"},
     O,
     &assign<&NvmlApi::device_get_curr_pcie_link_generation>,
     &in_use<&NvmlApi::device_get_curr_pcie_link_generation>},
    {{"nvmlDeviceGetCurrPcieLinkWidth"},
     O,
     &assign<&NvmlApi::device_get_curr_pcie_link_width>,
     &in_use<&NvmlApi::device_get_curr_pcie_link_width>},
    {{"nvmlDeviceGetMaxPcieLinkGeneration"},
     O,
     &assign<&NvmlApi::device_get_max_pcie_link_generation>,
     &in_use<&NvmlApi::device_get_max_pcie_link_generation>},
    {{"nvmlDeviceGetGpuMaxPcieLinkGeneration"},
     O,
     &assign<&NvmlApi::device_get_gpu_max_pcie_link_generation>,
     &in_use<&NvmlApi::device_get_gpu_max_pcie_link_generation>},
    {{"nvmlDeviceGetMaxPcieLinkWidth"},
     O,
     &assign<&NvmlApi::device_get_max_pcie_link_width>,
     &in_use<&NvmlApi::device_get_max_pcie_link_width>},
    {{"nvmlDeviceGetPcieThroughput"},
     O,
     &assign<&NvmlApi::device_get_pcie_throughput>,
     &in_use<&NvmlApi::device_get_pcie_throughput>},
    {{"nvmlDeviceGetPcieReplayCounter"},
     O,
     &assign<&NvmlApi::device_get_pcie_replay_counter>,
     &in_use<&NvmlApi::device_get_pcie_replay_counter>},

    {{"nvmlDeviceGetMemoryInfo_v2"},
     O,
     &assign<&NvmlApi::device_get_memory_info_v2>,
     &in_use<&NvmlApi::device_get_memory_info_v2>},
    {{"nvmlDeviceGetMemoryInfo"},
     O,
     &assign<&NvmlApi::device_get_memory_info_v1>,
     &in_use<&NvmlApi::device_get_memory_info_v1>},
    {{"nvmlDeviceGetBAR1MemoryInfo"},
     O,
     &assign<&NvmlApi::device_get_bar1_memory_info>,
     &in_use<&NvmlApi::device_get_bar1_memory_info>},
    {{"nvmlDeviceGetUtilizationRates"},
     O,
     &assign<&NvmlApi::device_get_utilization_rates>,
     &in_use<&NvmlApi::device_get_utilization_rates>},
    {{"nvmlDeviceGetEncoderUtilization"},
     O,
     &assign<&NvmlApi::device_get_encoder_utilization>,
     &in_use<&NvmlApi::device_get_encoder_utilization>},
    {{"nvmlDeviceGetDecoderUtilization"},
     O,
     &assign<&NvmlApi::device_get_decoder_utilization>,
     &in_use<&NvmlApi::device_get_decoder_utilization>},
    {{"nvmlDeviceGetJpgUtilization"},
     O,
     &assign<&NvmlApi::device_get_jpg_utilization>,
     &in_use<&NvmlApi::device_get_jpg_utilization>},
    {{"nvmlDeviceGetOfaUtilization"},
     O,
     &assign<&NvmlApi::device_get_ofa_utilization>,
     &in_use<&NvmlApi::device_get_ofa_utilization>},
    {{"nvmlDeviceGetSamples"},
     O,
     &assign<&NvmlApi::device_get_samples>,
     &in_use<&NvmlApi::device_get_samples>},

    {{"nvmlDeviceGetTemperature"},
     O,
     &assign<&NvmlApi::device_get_temperature>,
     &in_use<&NvmlApi::device_get_temperature>},
    {{"nvmlDeviceGetTemperatureThreshold"},
     O,
     &assign<&NvmlApi::device_get_temperature_threshold>,
     &in_use<&NvmlApi::device_get_temperature_threshold>},
    {{"nvmlDeviceGetPowerUsage"},
     O,
     &assign<&NvmlApi::device_get_power_usage>,
     &in_use<&NvmlApi::device_get_power_usage>},
    {{"nvmlDeviceGetPowerManagementLimit"},
     O,
     &assign<&NvmlApi::device_get_power_management_limit>,
     &in_use<&NvmlApi::device_get_power_management_limit>},
    {{"nvmlDeviceGetEnforcedPowerLimit"},
     O,
     &assign<&NvmlApi::device_get_enforced_power_limit>,
     &in_use<&NvmlApi::device_get_enforced_power_limit>},
    {{"nvmlDeviceGetPowerManagementDefaultLimit"},
     O,
     &assign<&NvmlApi::device_get_power_management_default_limit>,
     &in_use<&NvmlApi::device_get_power_management_default_limit>},
    {{"nvmlDeviceGetPowerManagementLimitConstraints"},
     O,
     &assign<&NvmlApi::device_get_power_management_limit_constraints>,
     &in_use<&NvmlApi::device_get_power_management_limit_constraints>},
    {{"nvmlDeviceGetTotalEnergyConsumption"},
     O,
     &assign<&NvmlApi::device_get_total_energy_consumption>,
     &in_use<&NvmlApi::device_get_total_energy_consumption>},
    {{"nvmlDeviceGetFanSpeed"},
     O,
     &assign<&NvmlApi::device_get_fan_speed>,
     &in_use<&NvmlApi::device_get_fan_speed>},
    {{"nvmlDeviceGetNumFans"},
     O,
     &assign<&NvmlApi::device_get_num_fans>,
     &in_use<&NvmlApi::device_get_num_fans>},
    {{"nvmlDeviceGetPerformanceState"},
     O,
     &assign<&NvmlApi::device_get_performance_state>,
     &in_use<&NvmlApi::device_get_performance_state>},

    {{"nvmlDeviceGetClockInfo"},
     O,
     &assign<&NvmlApi::device_get_clock_info>,
     &in_use<&NvmlApi::device_get_clock_info>},
    {{"nvmlDeviceGetMaxClockInfo"},
     O,
     &assign<&NvmlApi::device_get_max_clock_info>,
     &in_use<&NvmlApi::device_get_max_clock_info>},
    {{"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"},
     O,
     &assign<&NvmlApi::device_get_current_clocks_event_reasons>,
     &in_use<&NvmlApi::device_get_current_clocks_event_reasons>},
    {{"nvmlDeviceGetSupportedClocksEventReasons", "nvmlDeviceGetSupportedClocksThrottleReasons"},
     O,
     &assign<&NvmlApi::device_get_supported_clocks_event_reasons>,
     &in_use<&NvmlApi::device_get_supported_clocks_event_reasons>},
    {{"nvmlDeviceGetFieldValues"},
     O,
     &assign<&NvmlApi::device_get_field_values>,
     &in_use<&NvmlApi::device_get_field_values>},

    {{"nvmlDeviceGetEccMode"},
     O,
     &assign<&NvmlApi::device_get_ecc_mode>,
     &in_use<&NvmlApi::device_get_ecc_mode>},
    {{"nvmlDeviceGetTotalEccErrors"},
     O,
     &assign<&NvmlApi::device_get_total_ecc_errors>,
     &in_use<&NvmlApi::device_get_total_ecc_errors>},
    {{"nvmlDeviceGetMemoryErrorCounter"},
     O,
     &assign<&NvmlApi::device_get_memory_error_counter>,
     &in_use<&NvmlApi::device_get_memory_error_counter>},
    {{"nvmlDeviceGetRetiredPages"},
     O,
     &assign<&NvmlApi::device_get_retired_pages>,
     &in_use<&NvmlApi::device_get_retired_pages>},
    {{"nvmlDeviceGetRetiredPagesPendingStatus"},
     O,
     &assign<&NvmlApi::device_get_retired_pages_pending_status>,
     &in_use<&NvmlApi::device_get_retired_pages_pending_status>},
    {{"nvmlDeviceGetRemappedRows"},
     O,
     &assign<&NvmlApi::device_get_remapped_rows>,
     &in_use<&NvmlApi::device_get_remapped_rows>},

    {{"nvmlDeviceGetPersistenceMode"},
     O,
     &assign<&NvmlApi::device_get_persistence_mode>,
     &in_use<&NvmlApi::device_get_persistence_mode>},
    {{"nvmlDeviceGetComputeMode"},
     O,
     &assign<&NvmlApi::device_get_compute_mode>,
     &in_use<&NvmlApi::device_get_compute_mode>},
    {{"nvmlDeviceGetDisplayActive"},
     O,
     &assign<&NvmlApi::device_get_display_active>,
     &in_use<&NvmlApi::device_get_display_active>},
    {{"nvmlDeviceGetMigMode"},
     O,
     &assign<&NvmlApi::device_get_mig_mode>,
     &in_use<&NvmlApi::device_get_mig_mode>},
    {{"nvmlDeviceGetMaxMigDeviceCount"},
     O,
     &assign<&NvmlApi::device_get_max_mig_device_count>,
     &in_use<&NvmlApi::device_get_max_mig_device_count>},
    {{"nvmlDeviceGetMigDeviceHandleByIndex"},
     O,
     &assign<&NvmlApi::device_get_mig_device_handle_by_index>,
     &in_use<&NvmlApi::device_get_mig_device_handle_by_index>},
    {{"nvmlDeviceGetGpuInstanceId"},
     O,
     &assign<&NvmlApi::device_get_gpu_instance_id>,
     &in_use<&NvmlApi::device_get_gpu_instance_id>},
    {{"nvmlDeviceGetComputeInstanceId"},
     O,
     &assign<&NvmlApi::device_get_compute_instance_id>,
     &in_use<&NvmlApi::device_get_compute_instance_id>},

    {{"nvmlDeviceGetComputeRunningProcesses_v3"},
     O,
     &assign<&NvmlApi::device_get_compute_running_processes_v3>,
     &in_use<&NvmlApi::device_get_compute_running_processes_v3>},
    {{"nvmlDeviceGetComputeRunningProcesses_v2"},
     O,
     &assign<&NvmlApi::device_get_compute_running_processes_v2>,
     &in_use<&NvmlApi::device_get_compute_running_processes_v2>},
    {{"nvmlDeviceGetComputeRunningProcesses"},
     O,
     &assign<&NvmlApi::device_get_compute_running_processes_v1>,
     &in_use<&NvmlApi::device_get_compute_running_processes_v1>},
    {{"nvmlDeviceGetGraphicsRunningProcesses_v3"},
     O,
     &assign<&NvmlApi::device_get_graphics_running_processes_v3>,
     &in_use<&NvmlApi::device_get_graphics_running_processes_v3>},
    {{"nvmlDeviceGetGraphicsRunningProcesses_v2"},
     O,
     &assign<&NvmlApi::device_get_graphics_running_processes_v2>,
     &in_use<&NvmlApi::device_get_graphics_running_processes_v2>},
    {{"nvmlDeviceGetGraphicsRunningProcesses"},
     O,
     &assign<&NvmlApi::device_get_graphics_running_processes_v1>,
     &in_use<&NvmlApi::device_get_graphics_running_processes_v1>},
    {{"nvmlDeviceGetProcessUtilization"},
     O,
     &assign<&NvmlApi::device_get_process_utilization>,
     &in_use<&NvmlApi::device_get_process_utilization>},

    {{"nvmlEventSetCreate"}, O, &assign<&NvmlApi::event_set_create>, &in_use<&NvmlApi::event_set_create>},
    {{"nvmlDeviceGetSupportedEventTypes"},
     O,
     &assign<&NvmlApi::device_get_supported_event_types>,
     &in_use<&NvmlApi::device_get_supported_event_types>},
    {{"nvmlDeviceRegisterEvents"},
     O,
     &assign<&NvmlApi::device_register_events>,
     &in_use<&NvmlApi::device_register_events>},
    {{"nvmlEventSetWait_v2", "nvmlEventSetWait"},
     O,
     &assign<&NvmlApi::event_set_wait>,
     &in_use<&NvmlApi::event_set_wait>},
    {{"nvmlEventSetFree"}, O, &assign<&NvmlApi::event_set_free>, &in_use<&NvmlApi::event_set_free>},

    {{"nvmlGpmQueryDeviceSupport"},
     O,
     &assign<&NvmlApi::gpm_query_device_support>,
     &in_use<&NvmlApi::gpm_query_device_support>},
    {{"nvmlGpmSampleAlloc"}, O, &assign<&NvmlApi::gpm_sample_alloc>, &in_use<&NvmlApi::gpm_sample_alloc>},
    {{"nvmlGpmSampleFree"}, O, &assign<&NvmlApi::gpm_sample_free>, &in_use<&NvmlApi::gpm_sample_free>},
    {{"nvmlGpmSampleGet"}, O, &assign<&NvmlApi::gpm_sample_get>, &in_use<&NvmlApi::gpm_sample_get>},
    {{"nvmlGpmMigSampleGet"},
     O,
     &assign<&NvmlApi::gpm_mig_sample_get>,
     &in_use<&NvmlApi::gpm_mig_sample_get>},
    {{"nvmlGpmMetricsGet"}, O, &assign<&NvmlApi::gpm_metrics_get>, &in_use<&NvmlApi::gpm_metrics_get>},

    {{"nvmlDeviceGetDisplayMode"},
     O,
     &assign<&NvmlApi::device_get_display_mode>,
     &in_use<&NvmlApi::device_get_display_mode>},
    {{"nvmlDeviceGetAccountingMode"},
     O,
     &assign<&NvmlApi::device_get_accounting_mode>,
     &in_use<&NvmlApi::device_get_accounting_mode>},
    {{"nvmlDeviceGetAccountingBufferSize"},
     O,
     &assign<&NvmlApi::device_get_accounting_buffer_size>,
     &in_use<&NvmlApi::device_get_accounting_buffer_size>},
    {{"nvmlDeviceGetDriverModel_v2", "nvmlDeviceGetDriverModel"},
     O,
     &assign<&NvmlApi::device_get_driver_model>,
     &in_use<&NvmlApi::device_get_driver_model>},
    {{"nvmlDeviceGetInforomImageVersion"},
     O,
     &assign<&NvmlApi::device_get_inforom_image_version>,
     &in_use<&NvmlApi::device_get_inforom_image_version>},
    {{"nvmlDeviceGetInforomVersion"},
     O,
     &assign<&NvmlApi::device_get_inforom_version>,
     &in_use<&NvmlApi::device_get_inforom_version>},
    {{"nvmlDeviceValidateInforom"},
     O,
     &assign<&NvmlApi::device_validate_inforom>,
     &in_use<&NvmlApi::device_validate_inforom>},
    {{"nvmlDeviceGetMarginTemperature"},
     O,
     &assign<&NvmlApi::device_get_margin_temperature>,
     &in_use<&NvmlApi::device_get_margin_temperature>},
    {{"nvmlDeviceGetSramEccErrorStatus"},
     O,
     &assign<&NvmlApi::device_get_sram_ecc_error_status>,
     &in_use<&NvmlApi::device_get_sram_ecc_error_status>},
    {{"nvmlDeviceGetEncoderStats"},
     O,
     &assign<&NvmlApi::device_get_encoder_stats>,
     &in_use<&NvmlApi::device_get_encoder_stats>},
    {{"nvmlDeviceGetGpuFabricInfoV"},
     O,
     &assign<&NvmlApi::device_get_gpu_fabric_info_v>,
     &in_use<&NvmlApi::device_get_gpu_fabric_info_v>},
    {{"nvmlDeviceGetGpuFabricInfo"},
     O,
     &assign<&NvmlApi::device_get_gpu_fabric_info_v1>,
     &in_use<&NvmlApi::device_get_gpu_fabric_info_v1>},
    {{"nvmlDeviceGetSupportedMemoryClocks"},
     O,
     &assign<&NvmlApi::device_get_supported_memory_clocks>,
     &in_use<&NvmlApi::device_get_supported_memory_clocks>},
    {{"nvmlDeviceGetSupportedGraphicsClocks"},
     O,
     &assign<&NvmlApi::device_get_supported_graphics_clocks>,
     &in_use<&NvmlApi::device_get_supported_graphics_clocks>},
};

std::string opened_path(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0') {
    return map->l_name;
  }
  return fallback;
}

}  // namespace

NvmlLibrary::~NvmlLibrary() {
  if (handle_ != nullptr && !leaked_) dlclose(handle_);
}

NvmlLibrary::NvmlLibrary(NvmlLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      leaked_(other.leaked_),
      path_(std::move(other.path_)),
      api_(std::exchange(other.api_, NvmlApi{})),
      bindings_(std::move(other.bindings_)) {}

NvmlLibrary& NvmlLibrary::operator=(NvmlLibrary&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr && !leaked_) dlclose(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    leaked_ = other.leaked_;
    path_ = std::move(other.path_);
    api_ = std::exchange(other.api_, NvmlApi{});
    bindings_ = std::move(other.bindings_);
  }
  return *this;
}

std::string NvmlLibrary::bound_name(std::string_view entry) const {
  for (const auto& b : bindings()) {
    if (b.entry == entry) return b.bound;
  }
  return {};
}

std::vector<SymbolBinding> NvmlLibrary::bindings() const {
  std::vector<SymbolBinding> out = bindings_;
  std::size_t k = 0;
  for (const auto& ep : kEntryPoints) {
    SymbolBinding& b = out[k++];
    const unsigned i = ep.in_use(api_);
    if (i < b.exported.size()) b.bound = b.exported[i];
  }
  return out;
}

std::vector<std::string> nvml_library_candidates(const std::string& explicit_path) {
  if (!explicit_path.empty()) return {explicit_path};
  if (const char* env = std::getenv("TRAINMON_NVML_LIBRARY"); env != nullptr && env[0] != '\0') {
    return {env};
  }
  return {"libnvidia-ml.so.1", "libnvidia-ml.so"};
}

std::string driver_failure_line(std::string_view reason, std::string_view advice, std::string_view detail) {
  std::string line(reason);
  if (!advice.empty()) line.append(": ").append(advice);
  if (!detail.empty()) line.append(" (").append(detail).append(")");
  return line;
}

Expected<NvmlLibrary> load_nvml_library(const std::vector<std::string>& candidates) {
  std::string tried;
  std::size_t stubs = 0;
  for (const auto& name : candidates) {
    if (!tried.empty()) tried += "; ";
    tried += name;
    dlerror();
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      tried += std::string(" (") + (why ? why : "dlopen failed") + ")";
      continue;
    }
    std::string path = opened_path(handle, name);
    if (path.find("/stubs/") != std::string::npos) {
      tried += " (" + path + " is the CUDA toolkit's build stub, not the driver's library)";
      ++stubs;
      dlclose(handle);
      continue;
    }
    NvmlLibrary lib;
    std::string missing;
    for (const auto& ep : kEntryPoints) {
      SymbolBinding b{ep.names[0], {}, ep.need == Need::required, {}};
      for (const char* sym_name : ep.names) {
        if (sym_name == nullptr) break;
        if (void* sym = dlsym(handle, sym_name); sym != nullptr) {
          ep.assign(lib.api_, sym);  // every version of a Versioned slot; the first of a plain one
          b.exported.emplace_back(sym_name);
          if (b.bound.empty()) b.bound = sym_name;
        }
      }
      if (b.bound.empty() && b.required) missing += (missing.empty() ? "" : ", ") + b.entry;
      lib.bindings_.push_back(std::move(b));
    }
    if (!missing.empty()) {
      tried += " (" + path + " lacks required entry points: " + missing + ")";
      dlclose(handle);
      continue;
    }
    lib.handle_ = handle;
    lib.path_ = std::move(path);
    return lib;
  }
  Error e;
  e.domain = ErrorDomain::nvml;
  e.code = 12;  // NVML_ERROR_LIBRARY_NOT_FOUND
  e.name = "NVML_ERROR_LIBRARY_NOT_FOUND";
  // Only refused stubs: the advice is where the real library is; else whether a driver is there.
  const bool only_stubs = stubs == candidates.size() && stubs > 0;
  e.message = driver_failure_line(
      "NVML library not loaded",
      only_stubs ? "point TRAINMON_NVML_LIBRARY at the driver's libnvidia-ml.so.1, not at the CUDA toolkit's "
                   ".../stubs/"
                 : kNvmlHint,
      "tried " + tried);
  return std::unexpected(std::move(e));
}

}  // namespace trainmon::nvml
