// SPDX-License-Identifier: Apache-2.0
// The parsed scenario of the fake NVML: static device facts, metric timelines, processes, events and
// error injection rules. Immutable once loaded; the format is documented in docs/fake-nvml.md.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "timeline.h"

namespace fake_nvml {

/// A MIG device (GPU instance + compute instance) of a MIG-enabled GPU.
struct MigDevice {
  unsigned gi_id = 0;
  unsigned ci_id = 0;
  std::string uuid;
  std::string name;
  unsigned long long memory_total = 0;      // bytes
  std::map<std::string, Timeline> metrics;  // "memory_used", "bar1_used"
};

/// How nvmlDeviceGetFieldValues answers NVML_FI_DEV_PCIE_COUNT_{TX,RX}_BYTES (197/198): cumulative
/// bytes = 1024 × the integral of the pcie_tx / pcie_rx timelines (KB/s) over scenario time.
struct PcieCounters {
  bool unsigned_int = false;         // answer NVML_VALUE_TYPE_UNSIGNED_INT (the bytes mod 2^32)
  unsigned width_bits = 64;          // the counter wraps at 2^width_bits (32 or 64)
  std::optional<double> reset_at_s;  // from this scenario time the counters restart at 0
  bool timestamps = true;            // false: nvmlFieldValue_t::timestamp = 0
  // Added to both counters before any reset: by default a driver loaded long ago (1 TiB moved).
  unsigned long long start_bytes = 1ull << 40;
};

/// nvmlDeviceGetGpuFabricInfo(V): NVLink fabric registration (absent: NOT_SUPPORTED).
struct Fabric {
  unsigned state = 3;  // nvmlGpuFabricState_t: 1 not started, 2 in progress, 3 completed
  int status = 0;      // nvmlReturn_t
  unsigned clique_id = 0;
  std::array<unsigned char, 16> cluster_uuid{};
};

/// One memory clock and its graphics clocks (MHz), nvmlDeviceGetSupported{Memory,Graphics}Clocks.
struct ClockPair {
  unsigned memory = 0;
  std::vector<unsigned> graphics;
};

/// Static facts and metric timelines of one GPU.
struct Device {
  std::string name, uuid, serial, vbios, board_part_number;
  std::string bus_id;  // "00000000:18:00.0"
  unsigned pci_domain = 0, pci_bus = 0, pci_device = 0, pci_device_id = 0, pci_subsystem_id = 0;
  int cc_major = 0, cc_minor = 0;
  unsigned brand = 0, architecture = 0;
  unsigned long long memory_total = 0, bar1_total = 0;  // bytes
  std::optional<unsigned> power_limit, power_default_limit, power_enforced_limit, power_min_limit,
      power_max_limit;                                  // mW
  std::map<unsigned, unsigned> temperature_thresholds;  // NVML threshold enum → °C
  std::map<unsigned, unsigned> max_clocks;              // NVML clock type → MHz
  std::optional<unsigned long long> supported_clock_reasons;
  unsigned num_fans = 0;
  std::optional<unsigned> ecc_current, ecc_pending;  // unset: ECC not supported
  std::optional<unsigned> mig_current, mig_pending;  // unset: MIG not supported
  unsigned max_mig_devices = 7;
  std::vector<MigDevice> mig_devices;
  std::optional<unsigned> persistence_mode, compute_mode, display_active, display_mode;
  std::optional<unsigned> accounting_mode, accounting_buffer_size;     // unset: NOT_SUPPORTED
  std::optional<unsigned> driver_model_current, driver_model_pending;  // nvmlDriverModel_t; unset: Linux
  std::optional<std::string> inforom_image, inforom_oem, inforom_ecc, inforom_power;
  std::optional<bool> inforom_valid;  // ValidateInforom: SUCCESS / CORRUPTED_INFOROM
  std::optional<Fabric> fabric;
  std::vector<ClockPair> supported_clocks;  // empty: NOT_SUPPORTED
  unsigned pcie_gen_max = 0, pcie_gen_gpu_max = 0, pcie_width_max = 0, pcie_gen_current = 0,
           pcie_width_current = 0;
  bool gpm_supported = false;
  unsigned nvlink_links = 0;  // NVML_FI_DEV_NVLINK_LINK_COUNT; 0: no NVLink (fields 138/139 NOT_SUPPORTED)
  unsigned long long supported_event_types = 0;
  PcieCounters pcie_counters;
  std::set<std::string> not_supported;  // entry points (and NVML_FI_* field names) answering NOT_SUPPORTED
  std::map<std::string, Timeline> metrics;  // dynamic metrics by key (docs: "Metrics")
  unsigned process_growth_extra = 0;        // processes added between count and buffer calls
  unsigned process_growth_times = 0;        // how many buffer calls grow the list
  bool process_list_never_settles = false;  // every buffer call: INSUFFICIENT_SIZE, a larger count
  unsigned process_util_period_ms = 0;      // per-process utilization sample period (0: 1/6 s)

  /// The timeline of a metric, or nullptr when the scenario does not give it.
  [[nodiscard]] const Timeline* metric(const std::string& key) const {
    auto it = metrics.find(key);
    return it == metrics.end() ? nullptr : &it->second;
  }
  [[nodiscard]] bool mig_enabled() const { return mig_current.value_or(0) == 1; }
};

/// A process on one GPU, alive in [start_s, end_s).
struct Process {
  unsigned pid = 0;
  unsigned gpu = 0;
  bool compute = true, graphics = false, mps = false;
  std::string name;
  double start_s = 0, end_s = 1e300;
  unsigned gi_id = 0xFFFFFFFFu, ci_id = 0xFFFFFFFFu;
  Timeline used_memory, sm_util, mem_util, enc_util, dec_util;
  Timeline sample_time_offset_s = Timeline::constant(0);  ///< added to its utilisation samples' timeStamp
  [[nodiscard]] bool alive(double t) const { return t >= start_s && t < end_s; }
};

/// An event delivered by nvmlEventSetWait once scenario time reaches t.
struct Event {
  double t = 0;
  unsigned gpu = 0;
  unsigned long long type = 0;  // NVML event type bit
  unsigned long long data = 0;  // Xid code for Xid events
  unsigned gi_id = 0xFFFFFFFFu, ci_id = 0xFFFFFFFFu;
};

/// An error injection rule: when it matches a call, the call hangs hang_ms and/or returns `ret`.
struct ErrorRule {
  std::string function = "*";                     // entry point name or "*"
  std::optional<unsigned> gpu;                    // unset: any device (and device-less calls)
  double from_s = -1e300, to_s = 1e300;           // scenario-time window [from, to)
  std::set<unsigned long long> calls;             // 1-based numbers of matching calls; empty: every call
  unsigned long long call_from = 0, call_to = 0;  // inclusive range when call_to > 0
  std::optional<int> ret;
  unsigned hang_ms = 0;
  std::optional<bool> mig_handle;  // true: MIG device handles only; false: never them
};

/// A whole scenario file.
struct Scenario {
  std::string path, name;
  std::string driver_version = "590.48.01", nvml_version = "13.590.48.01";
  int cuda_version = 13010;
  std::string generation;  // informative: driver generation the scenario was captured from
  double time_scale = 1.0, start_offset_s = 0;
  std::optional<int> init_error;
  std::vector<Device> devices;
  std::vector<Process> processes;
  std::vector<Event> events;  // sorted by t
  std::vector<ErrorRule> errors;
};

/// Parses a scenario file; throws std::runtime_error whose message names the problem.
Scenario load_scenario(const std::string& path);
/// Parses scenario JSON text (path is only used in messages).
Scenario parse_scenario(const std::string& text, const std::string& path);
/// Maps "NVML_ERROR_GPU_IS_LOST" (or "GPU_IS_LOST", or a number) to its code; throws if unknown.
int parse_return_code(const nlohmann::json& j);
/// The NVML name of a return code, e.g. "NVML_ERROR_TIMEOUT".
const char* return_code_name(int code);

}  // namespace fake_nvml
