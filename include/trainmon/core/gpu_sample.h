// SPDX-License-Identifier: Apache-2.0
// What one GPU looks like at one tick. Units live in the names: bytes, milliwatts (what NVML
// returns), degrees Celsius, MHz, percent, KiB/s, nanoseconds. Conversion happens only at output.
// Every field is a Reading: a missing value is a status, never a sentinel number.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trainmon/core/reading.h"

namespace trainmon {

/// Clock event ("throttle") reason bits, as nvmlClocksEventReason* (NVML-NOTES §6.2).
namespace clock_event {
inline constexpr std::uint64_t gpu_idle = 0x1;
inline constexpr std::uint64_t applications_clocks_setting = 0x2;
inline constexpr std::uint64_t sw_power_cap = 0x4;
inline constexpr std::uint64_t hw_slowdown = 0x8;
inline constexpr std::uint64_t sync_boost = 0x10;
inline constexpr std::uint64_t sw_thermal_slowdown = 0x20;
inline constexpr std::uint64_t hw_thermal_slowdown = 0x40;
inline constexpr std::uint64_t hw_power_brake_slowdown = 0x80;
inline constexpr std::uint64_t display_clock_setting = 0x100;
}  // namespace clock_event

/// One MIG device (GPU instance + compute instance) of a MIG-enabled GPU.
struct MigDeviceSample {
  unsigned index = 0;  ///< MIG device index within the parent GPU
  Reading<unsigned> gpu_instance_id;
  Reading<unsigned> compute_instance_id;
  Reading<std::string> uuid;  ///< "MIG-..."
  /// nvmlDeviceGetName on the MIG handle: "NVIDIA H100 80GB HBM3 MIG 3g.40gb" (the profile after "MIG ").
  Reading<std::string> name;
  Reading<std::uint64_t> memory_total_bytes;
  Reading<std::uint64_t> memory_used_bytes;
  Reading<std::uint64_t> memory_free_bytes;
  Reading<std::uint64_t> memory_reserved_bytes;  ///< nvmlDeviceGetMemoryInfo_v2 on the MIG handle
  // GPM of this GPU instance (nvmlGpmMigSampleGet with its gpu_instance_id; Hopper+), as
  // GpuSample's gpm_* fields; not_available until the second tick, as there.
  Reading<double> gpm_graphics_util_pct;
  Reading<double> gpm_sm_util_pct;
  Reading<double> gpm_sm_occupancy_pct;
  Reading<double> gpm_tensor_util_pct;
  Reading<double> gpm_dram_bw_util_pct;
  Reading<double> gpm_pcie_tx_mib_s;
  Reading<double> gpm_pcie_rx_mib_s;
  Reading<double> gpm_nvlink_tx_mib_s;
  Reading<double> gpm_nvlink_rx_mib_s;
};

/// nvmlDeviceGetMemoryErrorCounter counts of one counter type (volatile: since the driver loaded;
/// aggregate: the GPU's lifetime) by memory location, the rows of nvidia-smi -q's "ECC Errors"
/// section. SRAM is NVML_MEMORY_LOCATION_SRAM (7), DRAM NVML_MEMORY_LOCATION_DRAM (2).
struct EccLocationCounts {
  Reading<std::uint64_t> sram_corrected;
  Reading<std::uint64_t> sram_uncorrected;
  Reading<std::uint64_t> dram_corrected;
  Reading<std::uint64_t> dram_uncorrected;
};

/// nvmlDeviceGetSramEccErrorStatus (Hopper and later; not_supported before, with ECC off, and on
/// drivers older than NVML 12.4): the SRAM uncorrectable counts split into parity and SEC-DED
/// (volatile: since the driver loaded; aggregate: the GPU's lifetime), the aggregate ones by the
/// unit they hit, and whether the SRAM error threshold (a GPU to replace) is exceeded.
struct SramEccStatus {
  Reading<std::uint64_t> volatile_uncorrected_parity;
  Reading<std::uint64_t> volatile_uncorrected_secded;
  Reading<std::uint64_t> aggregate_uncorrected_parity;
  Reading<std::uint64_t> aggregate_uncorrected_secded;
  Reading<std::uint64_t> aggregate_uncorrected_l2;
  Reading<std::uint64_t> aggregate_uncorrected_sm;
  Reading<std::uint64_t> aggregate_uncorrected_pcie;
  Reading<std::uint64_t> aggregate_uncorrected_mcu;
  Reading<std::uint64_t> aggregate_uncorrected_other;
  Reading<bool> threshold_exceeded;
};

/// One memory clock and the graphics clocks the GPU supports with it (MHz, the driver's order),
/// nvmlDeviceGetSupportedMemoryClocks / nvmlDeviceGetSupportedGraphicsClocks.
struct SupportedClocks {
  unsigned memory_mhz = 0;
  std::vector<unsigned> graphics_mhz;
  friend bool operator==(const SupportedClocks&, const SupportedClocks&) = default;
};

/// Facts that rarely change: read once per device and re-probed only when they failed.
struct GpuStaticInfo {
  unsigned index = 0;         ///< NVML index (PCI bus order)
  Reading<std::string> name;  ///< "NVIDIA H200"
  /// Where the GPU is when a view shows several machines' GPUs ("job 4242 node-a", "... STALE 45s":
  /// top --prometheus, cluster/cluster_view.h), drawn before its row; empty for this machine's GPUs.
  std::string group;
  Reading<std::string> uuid;  ///< "GPU-xxxxxxxx-..."
  Reading<std::string> serial;
  Reading<std::string> pci_bus_id;  ///< "00000000:83:00.0" (nvidia-smi form)
  Reading<unsigned> pci_domain;
  Reading<unsigned> pci_bus;
  Reading<unsigned> pci_device;
  Reading<unsigned> pci_device_id;      ///< 0x233510DE
  Reading<unsigned> pci_sub_device_id;  ///< 0x18BE10DE
  Reading<std::string> vbios_version;
  Reading<int> compute_cap_major;
  Reading<int> compute_cap_minor;
  Reading<unsigned> brand;                    ///< nvmlBrandType_t
  Reading<unsigned> architecture;             ///< nvmlDeviceArchitecture_t (7 = Ampere, 9 = Hopper)
  Reading<unsigned> pcie_link_gen_max;        ///< max generation the GPU+host link supports
  Reading<unsigned> pcie_link_gen_gpumax;     ///< max generation the GPU supports
  Reading<unsigned> pcie_link_width_max;      ///< lanes
  Reading<std::uint64_t> memory_total_bytes;  ///< framebuffer total (as nvidia-smi memory.total)
  Reading<std::uint64_t> bar1_total_bytes;
  Reading<unsigned> power_default_limit_mw;
  Reading<unsigned> power_min_limit_mw;
  Reading<unsigned> power_max_limit_mw;
  Reading<unsigned> temperature_shutdown_c;  ///< NVML_TEMPERATURE_THRESHOLD_SHUTDOWN
  Reading<unsigned> temperature_slowdown_c;  ///< NVML_TEMPERATURE_THRESHOLD_SLOWDOWN
  Reading<unsigned> temperature_gpu_max_c;   ///< NVML_TEMPERATURE_THRESHOLD_GPU_MAX
  Reading<unsigned> temperature_mem_max_c;   ///< NVML_TEMPERATURE_THRESHOLD_MEM_MAX
  Reading<unsigned> clocks_max_graphics_mhz;
  Reading<unsigned> clocks_max_sm_mhz;
  Reading<unsigned> clocks_max_memory_mhz;
  Reading<std::uint64_t> clocks_event_reasons_supported;  ///< bitmask (clock_event::*)
  Reading<unsigned> num_fans;
  Reading<bool> gpm_supported;  ///< nvmlGpmQueryDeviceSupport (Hopper+)

  // Read only with BackendOptions::collect_extended (nvidia-smi's rarer --query-gpu fields, -q).
  Reading<std::string> inforom_image;  ///< nvmlDeviceGetInforomImageVersion, "G520.0200.00.05"
  Reading<std::string> inforom_oem;    ///< nvmlDeviceGetInforomVersion(NVML_INFOROM_OEM), "2.1"
  Reading<std::string> inforom_ecc;    ///< ... (NVML_INFOROM_ECC)
  Reading<std::string> inforom_power;  ///< ... (NVML_INFOROM_POWER)
  /// nvmlDeviceValidateInforom: true when the checksum is valid, false on NVML_ERROR_CORRUPTED_INFOROM.
  Reading<bool> inforom_valid;
  /// nvmlDeviceGetDriverModel(_v2): nvmlDriverModel_t (0 WDDM, 1 WDM = TCC, 2 MCDM); Windows only,
  /// not_supported on Linux (nvidia-smi: [N/A]).
  Reading<unsigned> driver_model_current;
  Reading<unsigned> driver_model_pending;
  /// Read only with BackendOptions::collect_supported_clocks (`query --query-supported-clocks`).
  Reading<std::vector<SupportedClocks>> supported_clocks;
};

/// One high-resolution sample from the driver's ring buffer (nvmlDeviceGetSamples).
struct TimedValue {
  std::uint64_t time_us = 0;  ///< CPU time, microseconds since the Unix epoch (NVML's clock)
  double value = 0;           ///< percent for utilisation, milliwatts for power
};

/// Every dynamic metric of one GPU at one tick.
struct GpuSample {
  unsigned index = 0;
  std::shared_ptr<const GpuStaticInfo> info;  ///< never null in a snapshot from the sampler
  /// Device-level health: ok, gpu_lost, timeout (hung call), failed. When not ok the other
  /// fields carry the same status and views show the GPU as lost / unresponsive.
  Reading<bool> responsive;

  // memory (bytes). nvmlDeviceGetMemoryInfo_v2 where available: used excludes `reserved`.
  Reading<std::uint64_t> memory_total_bytes;
  Reading<std::uint64_t> memory_reserved_bytes;
  Reading<std::uint64_t> memory_used_bytes;
  Reading<std::uint64_t> memory_free_bytes;
  Reading<std::uint64_t> bar1_used_bytes;
  Reading<std::uint64_t> bar1_free_bytes;

  // utilisation (percent over the driver's sample period)
  Reading<unsigned> utilization_gpu_pct;
  Reading<unsigned> utilization_memory_pct;
  Reading<unsigned> utilization_encoder_pct;
  Reading<unsigned> utilization_decoder_pct;
  Reading<unsigned> utilization_jpeg_pct;
  Reading<unsigned> utilization_ofa_pct;
  /// Driver samples newer than the previous tick (nvmlDeviceGetSamples); empty when none.
  std::vector<TimedValue> gpu_utilization_samples;  ///< percent
  std::vector<TimedValue> power_samples;            ///< milliwatts

  // thermals, power, energy
  Reading<unsigned> temperature_gpu_c;
  Reading<unsigned> temperature_memory_c;     ///< HBM temperature (field 82), dmon mtemp
  Reading<unsigned> power_draw_mw;            ///< nvmlDeviceGetPowerUsage (1 s average on Ampere+)
  Reading<unsigned> power_draw_instant_mw;    ///< field 186 where supported
  Reading<unsigned> power_limit_mw;           ///< nvmlDeviceGetPowerManagementLimit
  Reading<unsigned> enforced_power_limit_mw;  ///< nvmlDeviceGetEnforcedPowerLimit
  Reading<std::uint64_t> total_energy_mj;     ///< since driver load
  Reading<unsigned> fan_speed_pct;
  Reading<unsigned> pstate;  ///< 0..15 (P0..P15)

  // clocks (MHz)
  Reading<unsigned> clocks_graphics_mhz;
  Reading<unsigned> clocks_sm_mhz;
  Reading<unsigned> clocks_memory_mhz;
  Reading<unsigned> clocks_video_mhz;
  Reading<std::uint64_t> clocks_event_reasons_active;  ///< bitmask (clock_event::*)
  // cumulative time in each reason, nanoseconds (NVML field ids 74, 75, 269, 270, 271)
  Reading<std::uint64_t> violation_power_ns;
  Reading<std::uint64_t> violation_thermal_ns;
  Reading<std::uint64_t> violation_sw_thermal_ns;
  Reading<std::uint64_t> violation_hw_thermal_ns;
  Reading<std::uint64_t> violation_hw_power_brake_ns;

  // ECC and memory health
  Reading<bool> ecc_mode_current;
  Reading<bool> ecc_mode_pending;
  Reading<std::uint64_t> ecc_corrected_volatile;
  Reading<std::uint64_t> ecc_uncorrected_volatile;
  Reading<std::uint64_t> ecc_corrected_aggregate;
  Reading<std::uint64_t> ecc_uncorrected_aggregate;
  Reading<unsigned> retired_pages_sbe;
  Reading<unsigned> retired_pages_dbe;
  Reading<bool> retired_pages_pending;
  Reading<unsigned> remapped_rows_correctable;
  Reading<unsigned> remapped_rows_uncorrectable;
  Reading<bool> remapped_rows_pending;
  Reading<bool> remapped_rows_failure;

  // PCIe
  Reading<unsigned> pcie_link_gen_current;
  Reading<unsigned> pcie_link_width_current;
  /// KiB/s: the mean over the tick from NVML's PCIe byte counters (fields 197/198) where the driver
  /// has 64-bit ones, else nvmlDeviceGetPcieThroughput's 20 ms window (src/device/nvml/nvml_pcie.h).
  Reading<unsigned> pcie_rx_kib_s;
  Reading<unsigned> pcie_tx_kib_s;
  Reading<unsigned> pcie_replay_count;

  // modes
  Reading<bool> persistence_mode;
  Reading<unsigned> compute_mode;  ///< nvmlComputeMode_t
  Reading<bool> display_active;
  Reading<unsigned> mig_mode_current;  ///< 0 disabled, 1 enabled
  Reading<unsigned> mig_mode_pending;
  std::vector<MigDeviceSample> mig_devices;

  /// Processes the driver listed on this GPU this tick (compute and graphics lists, each pid once),
  /// or why they are unknown: a list call failed (`code`: its NVML error, e.g. 4 NO_PERMISSION), its
  /// size never settled (`code` 7 INSUFFICIENT_SIZE after the retries), or the whole GPU did not
  /// answer (the device status). Views then say "processes unknown: <reason>"
  /// (trainmon/export/processes_unknown.h), never an empty list. not_collected: not asked for.
  Reading<unsigned> process_count;

  Reading<unsigned> power_draw_average_mw;         ///< field 185 (POWER_AVERAGE); not on Turing and older
  Reading<std::uint64_t> violation_sync_boost_ns;  ///< field 76 (PERF_POLICY_SYNC_BOOST), cumulative ns

  // Read only with BackendOptions::collect_extended (nvidia-smi's rarer --query-gpu fields, -q).
  Reading<bool> display_attached;            ///< nvmlDeviceGetDisplayMode: a monitor is connected
  Reading<bool> accounting_mode;             ///< nvmlDeviceGetAccountingMode
  Reading<unsigned> accounting_buffer_size;  ///< nvmlDeviceGetAccountingBufferSize (processes)
  /// nvmlDeviceGetMarginTemperature: °C left before the GPU slows down (nvidia-smi's T.Limit);
  /// negative once past it.
  Reading<int> temperature_tlimit_c;
  Reading<unsigned> encoder_session_count;       ///< nvmlDeviceGetEncoderStats
  Reading<unsigned> encoder_average_fps;         ///< frames per second over the sessions
  Reading<unsigned> encoder_average_latency_us;  ///< µs
  /// nvmlDeviceGetGpuFabricInfo(V): NVLink fabric registration. `fabric_state` is
  /// nvmlGpuFabricState_t (1 not started, 2 in progress, 3 completed); status an nvmlReturn_t.
  Reading<unsigned> fabric_state;
  Reading<int> fabric_status;
  Reading<unsigned> fabric_clique_id;
  Reading<std::string> fabric_cluster_uuid;  ///< "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
  /// nvmlDeviceGetMemoryErrorCounter by location (nvidia-smi -q "ECC Errors"); not_supported with
  /// ECC off or unsupported.
  EccLocationCounts ecc_volatile_by_location;
  EccLocationCounts ecc_aggregate_by_location;
  SramEccStatus sram_ecc;  ///< collect_extended only (query, status --json)

  // GPM (Hopper+), percent over the interval between two GPM samples
  Reading<double> gpm_graphics_util_pct;  ///< NVML_GPM_METRIC_GRAPHICS_UTIL (graphics/compute engine)
  Reading<double> gpm_sm_util_pct;
  Reading<double> gpm_sm_occupancy_pct;
  Reading<double> gpm_tensor_util_pct;
  Reading<double> gpm_dram_bw_util_pct;
  Reading<double> gpm_pcie_tx_mib_s;
  Reading<double> gpm_pcie_rx_mib_s;
  Reading<double> gpm_nvlink_tx_mib_s;
  Reading<double> gpm_nvlink_rx_mib_s;

  /// NVLink data (payload) transmitted plus received over all links, KiB/s: the mean over the tick
  /// from NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX / _RX (fields 138/139, cumulative KiB, scopeId
  /// UINT_MAX = all links; src/device/nvml/nvml_nvlink.cpp). not_supported on a GPU without NVLink
  /// (NVML_FI_DEV_NVLINK_LINK_COUNT 0) or a driver without the fields; not_available on the first
  /// tick and after a counter reset.
  Reading<double> nvlink_data_kib_s;
};

/// One MIG instance a process is listed on (nvmlProcessInfo_t gpuInstanceId / computeInstanceId).
struct MigInstanceRef {
  unsigned gpu_instance_id = 0;
  unsigned compute_instance_id = 0;
  friend bool operator==(const MigInstanceRef&, const MigInstanceRef&) = default;
};

/// How long a per-process utilisation sample is shown when the driver has none newer (seconds).
/// nvitop asks for the samples of the last second at every read (libnvml.py, lastSeenTimeStamp =
/// now - 1 s), so it shows a value for 1 s; 2 s also covers a driver that refreshes once a second
/// read once a second (sample and tick out of phase). An idle process gets no samples (NVML lists
/// only processes with non-zero utilisation), so after this its values are N/A, as in nvidia-smi.
inline constexpr double kProcessUtilHoldS = 2.0;

/// How a GPU process is seen from the /proc trainmon reads (the join with host processes; the rules
/// and the evidence for each value are in include/trainmon/sampler/gpu_process_join.h). Stored as
/// its integer value (series_fields.cpp): keep the numbers.
enum class HostVisibility : std::uint8_t {
  unknown = 0,  ///< not joined (no host collection)
  visible,      ///< the local process with this pid is the GPU process (pid and start time agree)
  /// Not visible from this PID namespace: no local process can be shown to be it, and it may well be
  /// alive elsewhere (our /proc is a container's, or hides other users' processes). A local process
  /// with the same number is another process. Never a ghost, never signalled.
  not_visible,
  zombie,  ///< the local process with this pid, in state Z: holds no CPU yet NVML still lists it
  /// Gone: our /proc shows every process of the initial PID namespace and this pid is not among them
  /// (or now belongs to a process started after NVML listed it): the context outlived its process.
  exited,
};

/// Whether the join matched the GPU process to the local process with the same pid (visible or
/// zombie). Only then may a view put that local process's user, command line, RSS or CPU next to the
/// GPU process, count it as a process of a job, or offer to signal it.
constexpr bool joined_to_host(HostVisibility v) noexcept {
  return v == HostVisibility::visible || v == HostVisibility::zombie;
}

/// Stable lower-case name: "unknown", "visible", "not_visible", "zombie", "exited".
constexpr const char* host_visibility_name(HostVisibility v) noexcept {
  switch (v) {
    case HostVisibility::visible: return "visible";
    case HostVisibility::not_visible: return "not_visible";
    case HostVisibility::zombie: return "zombie";
    case HostVisibility::exited: return "exited";
    case HostVisibility::unknown: break;
  }
  return "unknown";
}

/// One process on one GPU (nvmlDeviceGet{Compute,Graphics}RunningProcesses + ProcessUtilization).
struct GpuProcessSample {
  unsigned gpu_index = 0;
  std::uint32_t pid = 0;  ///< host PID as the driver reports it
  char type = 'C';        ///< 'C' compute, 'G' graphics, 'M' MPS (pmon's C/G)
  /// Listed by both the compute and the graphics list (pmon shows "C+G"); `type` is then 'C'.
  bool compute_and_graphics = false;
  /// Where the driver listed it on this GPU: 0, 1, ... over the compute list then the graphics list
  /// (nvidia-smi --query-compute-apps keeps that order; snapshots are sorted by pid).
  unsigned list_position = 0;
  Reading<std::uint64_t> used_memory_bytes;  ///< not_available under WDDM / without permission
  Reading<unsigned> gpu_instance_id;         ///< MIG only (not_available when MIG is off); the first of
  Reading<unsigned> compute_instance_id;     ///< mig_instances
  /// Every MIG instance the driver lists the pid on, in its order (a pid can hold memory on several
  /// instances, and be listed more than once); empty when MIG is off. used_memory_bytes is the sum
  /// over them (an entry listed by both the compute and the graphics list counts once).
  std::vector<MigInstanceRef> mig_instances;
  Reading<unsigned> sm_util_pct;  ///< nvmlDeviceGetProcessUtilization, last ~1 s
  Reading<unsigned> mem_util_pct;
  Reading<unsigned> enc_util_pct;
  Reading<unsigned> dec_util_pct;
  /// Seconds since the driver took the utilisation sample above (its timeStamp, µs since the epoch).
  /// The driver refreshes per-process samples on its own period; a tick that finds no newer one
  /// keeps the previous values for up to kProcessUtilHoldS, with their age here, instead of showing
  /// N/A every other read. not_available when the values are N/A.
  Reading<double> util_age_s;
  Reading<std::string> process_name;  ///< nvmlSystemGetProcessName or /proc comm
  HostVisibility host = HostVisibility::unknown;
};

/// An NVML event (Xid, ECC, clock change), kept with its time and device.
struct GpuEvent {
  std::int64_t time_unix_ns = 0;  ///< when our event thread received it
  unsigned gpu_index = 0;
  std::uint64_t event_type = 0;  ///< nvmlEventType bit (0x8 = Xid critical error, 0x1/0x2 ECC)
  std::uint64_t xid = 0;         ///< Xid code for Xid events (999 = unknown), else 0
  unsigned gpu_instance_id = 0xFFFFFFFFu;
  unsigned compute_instance_id = 0xFFFFFFFFu;
};

}  // namespace trainmon
