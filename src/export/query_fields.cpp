// SPDX-License-Identifier: Apache-2.0
// The `--query-gpu` and `--query-compute-apps` field tables. Each row: nvidia-smi's name, aliases,
// unit and a formatter over (Snapshot, GpuSample). Value formats follow nvidia-smi 590.48 as seen
// in the captures (tests/captures): decimal integers, "0x%08X" ids, "%.2f W", MiB floors,
// Enabled/Disabled, Active/Not Active, Yes/No, "0x%016X" bitmasks.
#include "trainmon/export/query_fields.h"
#include "export/static_info.h"

#include "trainmon/core/text_escape.h"

#include <fmt/format.h>

#include <algorithm>

#include "trainmon/core/units.h"
#include "trainmon/export/processes_unknown.h"

namespace trainmon::exp {

namespace {

template <class T>
FieldValue na(const Reading<T>& r) {
  return {std::string(nvidia_smi_na_text(r.status)), true, r.status == ReadStatus::not_supported};
}

constexpr std::string_view kDeprecated = "[Requested functionality has been deprecated]";

template <class T>
const Reading<T>& get(const GpuSample& g, Reading<T> GpuSample::*m) {
  return g.*m;
}
template <class T>
const Reading<T>& get(const GpuSample& g, Reading<T> GpuStaticInfo::*m) {
  return info_of(g).*m;
}

using GpuFormat = std::function<FieldValue(const Snapshot&, const GpuSample&)>;

/// Decimal integer (or string as is).
template <class M>
GpuFormat plain(M m) {
  return [m](const Snapshot&, const GpuSample& g) -> FieldValue {
    const auto& r = get(g, m);
    if (!r.ok()) return na(r);
    if constexpr (std::is_same_v<std::decay_t<decltype(*r)>, std::string>) {
      return {*r};
    } else {
      return {fmt::format("{}", *r)};
    }
  };
}

/// Hex with a fixed number of digits: "0x83", "0x233510DE".
template <class M>
GpuFormat hex(M m, int digits) {
  return [m, digits](const Snapshot&, const GpuSample& g) -> FieldValue {
    const auto& r = get(g, m);
    if (!r.ok()) return na(r);
    return {fmt::format("0x{:0{}X}", static_cast<std::uint64_t>(*r), digits)};
  };
}

/// Bytes as whole MiB (floor).
template <class M>
GpuFormat mib(M m) {
  return [m](const Snapshot&, const GpuSample& g) -> FieldValue {
    const auto& r = get(g, m);
    if (!r.ok()) return na(r);
    return {fmt::format("{}", bytes_to_mib(*r))};
  };
}

/// Milliwatts as "%.2f" watts.
template <class M>
GpuFormat watts(M m) {
  return [m](const Snapshot&, const GpuSample& g) -> FieldValue {
    const auto& r = get(g, m);
    if (!r.ok()) return na(r);
    return {mw_to_watts_2dp(*r)};
  };
}

/// Nanoseconds as whole microseconds (the clocks_event_reasons_counters fields).
template <class M>
GpuFormat ns_to_us(M m) {
  return [m](const Snapshot&, const GpuSample& g) -> FieldValue {
    const auto& r = get(g, m);
    if (!r.ok()) return na(r);
    return {fmt::format("{}", *r / 1000)};
  };
}

/// A boolean (or 0/1 mode) as two words.
template <class M>
GpuFormat words(M m, std::string_view yes, std::string_view no) {
  return [m, yes, no](const Snapshot&, const GpuSample& g) -> FieldValue {
    const auto& r = get(g, m);
    if (!r.ok()) return na(r);
    return {std::string(*r ? yes : no)};
  };
}

/// A Reading inside a struct member of the sample (the ECC counts by location, the SRAM status):
/// decimal, or Yes / No for a boolean (nvidia-smi's ecc.errors.uncorrected.aggregate.sram.thresholdExceeded).
template <class T>
GpuFormat inner(const Reading<T>& (*read)(const GpuSample&)) {
  return [read](const Snapshot&, const GpuSample& g) -> FieldValue {
    const auto& r = read(g);
    if (!r.ok()) return na(r);
    if constexpr (std::is_same_v<T, bool>) {
      return {std::string(*r ? "Yes" : "No")};
    } else {
      return {fmt::format("{}", *r)};
    }
  };
}

/// One bit of clocks_event_reasons.active as Active / Not Active.
GpuFormat reason_bit(std::uint64_t bit) {
  return [bit](const Snapshot&, const GpuSample& g) -> FieldValue {
    const auto& r = g.clocks_event_reasons_active;
    if (!r.ok()) return na(r);
    return {(*r & bit) ? "Active" : "Not Active"};
  };
}

/// memory.total: the per-tick reading, else the static one.
FieldValue memory_total(const Snapshot&, const GpuSample& g) {
  const auto& r = g.memory_total_bytes.ok() ? g.memory_total_bytes : info_of(g).memory_total_bytes;
  if (!r.ok()) return na(r);
  return {fmt::format("{}", bytes_to_mib(*r))};
}

FieldValue compute_mode(const Snapshot&, const GpuSample& g) {
  const auto& r = g.compute_mode;
  if (!r.ok()) return na(r);
  switch (*r) {
    case 0: return {"Default"};
    case 1: return {"Exclusive_Thread"};
    case 2: return {"Prohibited"};
    case 3: return {"Exclusive_Process"};
    default: return {"[Unknown Error]", true};
  }
}

FieldValue compute_cap(const Snapshot&, const GpuSample& g) {
  const auto& i = info_of(g);
  if (!i.compute_cap_major.ok()) return na(i.compute_cap_major);
  if (!i.compute_cap_minor.ok()) return na(i.compute_cap_minor);
  return {fmt::format("{}.{}", *i.compute_cap_major, *i.compute_cap_minor)};
}

FieldValue pstate(const Snapshot&, const GpuSample& g) {
  if (!g.pstate.ok()) return na(g.pstate);
  if (*g.pstate > 15) return {"[Unknown]", true};
  return {fmt::format("P{}", *g.pstate)};
}

FieldValue memory_temperature(const Snapshot&, const GpuSample& g) {
  // nvidia-smi prints this one without brackets when the GPU has no HBM sensor (RTX capture: N/A).
  if (!g.temperature_memory_c.ok()) {
    const ReadStatus s = g.temperature_memory_c.status;
    if (s == ReadStatus::not_supported || s == ReadStatus::not_available || s == ReadStatus::not_collected ||
        s == ReadStatus::missing_symbol)
      return {"N/A", true};
    return na(g.temperature_memory_c);
  }
  return {fmt::format("{}", *g.temperature_memory_c)};
}

/// nvidia-smi's "N/A" without brackets (fabric.*, temperature.memory on a board without HBM).
template <class T>
FieldValue bare_na(const Reading<T>& r) {
  const ReadStatus s = r.status;
  if (s == ReadStatus::not_supported || s == ReadStatus::not_available || s == ReadStatus::not_collected ||
      s == ReadStatus::missing_symbol)
    return {"N/A", true};
  return na(r);
}

FieldValue kmd_version(const Snapshot& s, const GpuSample&) {
  const auto& r = s.driver.driver_version;  // the kernel-mode driver's version, nvidia-smi 595+
  return r.ok() ? FieldValue{*r} : na(r);
}

FieldValue driver_model(const Reading<unsigned>& r) {
  if (!r.ok()) return na(r);
  switch (*r) {
    case 0: return {"WDDM"};
    case 1: return {"TCC"};
    case 2: return {"MCDM"};
    default: return {"[Unknown Error]", true};
  }
}

FieldValue checksum_validation(const Snapshot&, const GpuSample& g) {
  const auto& r = info_of(g).inforom_valid;
  if (!r.ok()) return na(r);
  return {*r ? "valid" : "invalid"};
}

FieldValue tlimit(const Snapshot&, const GpuSample& g) {
  const auto& r = g.temperature_tlimit_c;
  if (!r.ok()) return na(r);
  return {fmt::format("{}", *r)};
}

FieldValue fabric_state(const Snapshot&, const GpuSample& g) {
  const auto& r = g.fabric_state;
  if (!r.ok()) return bare_na(r);
  switch (*r) {
    case 1: return {"Not Started"};
    case 2: return {"In Progress"};
    case 3: return {"Completed"};
    default: return {"N/A", true};
  }
}

FieldValue fabric_status(const Snapshot&, const GpuSample& g) {
  const auto& r = g.fabric_status;
  if (!r.ok()) return bare_na(r);
  return {*r == 0 ? std::string("Success") : fmt::format("Error {}", *r)};
}

/// fabric.health.*: nvidia-smi 580-610 print N/A for these on every capture, also on a completed
/// registration; the health mask is not decoded (docs/cli.md).
FieldValue bare_na_always(const Snapshot&, const GpuSample&) {
  return {"N/A", true};
}

std::vector<GpuField> make_gpu_fields() {
  using G = GpuSample;
  using I = GpuStaticInfo;
  namespace ce = clock_event;
  std::vector<GpuField> f;
  f.push_back({"timestamp",
               {},
               "",
               "Local time of the sample, YYYY/MM/DD HH:MM:SS.msec.",
               [](const Snapshot& s, const GpuSample&) -> FieldValue {
                 return {nvidia_smi_timestamp(s.time_unix_ns)};
               }});
  f.push_back({"driver_version",
               {},
               "",
               "Installed NVIDIA driver version.",
               [](const Snapshot& s, const GpuSample&) -> FieldValue {
                 const auto& r = s.driver.driver_version;
                 return r.ok() ? FieldValue{*r} : na(r);
               }});
  f.push_back(
      {"kmd_version", {}, "", "Installed kernel-mode driver version (nvidia-smi 595+).", kmd_version});
  f.push_back({"count",
               {},
               "",
               "Number of NVIDIA GPUs in the system.",
               [](const Snapshot& s, const GpuSample&) -> FieldValue {
                 const auto& r = s.driver.device_count;
                 return {fmt::format("{}", r.ok() ? *r : static_cast<unsigned>(s.gpus.size()))};
               }});
  f.push_back({"name", {"gpu_name"}, "", "Product name.", plain(&I::name)});
  f.push_back({"serial", {"gpu_serial"}, "", "Board serial number.", plain(&I::serial)});
  f.push_back({"uuid", {"gpu_uuid"}, "", "Globally unique GPU identifier.", plain(&I::uuid)});
  f.push_back(
      {"pci.bus_id", {"gpu_bus_id"}, "", "PCI bus id, domain:bus:device.function.", plain(&I::pci_bus_id)});
  f.push_back({"pci.domain", {}, "", "PCI domain, hex.", hex(&I::pci_domain, 4)});
  f.push_back({"pci.bus", {}, "", "PCI bus, hex.", hex(&I::pci_bus, 2)});
  f.push_back({"pci.device", {}, "", "PCI device, hex.", hex(&I::pci_device, 2)});
  f.push_back({"pci.device_id", {}, "", "PCI vendor device id, hex.", hex(&I::pci_device_id, 8)});
  f.push_back({"pci.sub_device_id", {}, "", "PCI sub system id, hex.", hex(&I::pci_sub_device_id, 8)});
  f.push_back({"pcie.link.gen.current",
               {},
               "",
               "Current PCIe link generation (deprecated name).",
               plain(&G::pcie_link_gen_current)});
  f.push_back({"pcie.link.gen.gpucurrent",
               {},
               "",
               "Current PCIe link generation.",
               plain(&G::pcie_link_gen_current)});
  f.push_back(
      {"pcie.link.gen.max", {}, "", "Max PCIe generation of GPU and system.", plain(&I::pcie_link_gen_max)});
  f.push_back(
      {"pcie.link.gen.gpumax", {}, "", "Max PCIe generation of the GPU.", plain(&I::pcie_link_gen_gpumax)});
  f.push_back({"pcie.link.width.current",
               {},
               "",
               "Current PCIe link width (lanes).",
               plain(&G::pcie_link_width_current)});
  f.push_back(
      {"pcie.link.width.max", {}, "", "Max PCIe link width (lanes).", plain(&I::pcie_link_width_max)});
  f.push_back(
      {"index", {}, "", "NVML index (PCI bus order).", [](const Snapshot&, const GpuSample& g) -> FieldValue {
         return {fmt::format("{}", g.index)};
       }});
  f.push_back({"display_attached",
               {},
               "",
               "A monitor is connected to one of the GPU's outputs: Yes / No.",
               words(&G::display_attached, "Yes", "No")});
  f.push_back({"display_active",
               {},
               "",
               "A display is initialised on the GPU: Enabled / Disabled.",
               words(&G::display_active, "Enabled", "Disabled")});
  f.push_back({"persistence_mode",
               {},
               "",
               "Persistence mode: Enabled / Disabled.",
               words(&G::persistence_mode, "Enabled", "Disabled")});
  f.push_back({"accounting.mode",
               {},
               "",
               "Per-process accounting: Enabled / Disabled.",
               words(&G::accounting_mode, "Enabled", "Disabled")});
  f.push_back({"accounting.buffer_size",
               {},
               "",
               "Processes the accounting buffer holds.",
               plain(&G::accounting_buffer_size)});
  f.push_back(
      {"driver_model.current",
       {},
       "",
       "Windows driver model: WDDM, TCC or MCDM ([N/A] on Linux).",
       [](const Snapshot&, const GpuSample& g) { return driver_model(info_of(g).driver_model_current); }});
  f.push_back(
      {"driver_model.pending",
       {},
       "",
       "Driver model after the next reboot.",
       [](const Snapshot&, const GpuSample& g) { return driver_model(info_of(g).driver_model_pending); }});
  f.push_back({"vbios_version", {}, "", "VBIOS version.", plain(&I::vbios_version)});
  f.push_back(
      {"inforom.img", {"inforom.image"}, "", "Version of the infoROM image.", plain(&I::inforom_image)});
  f.push_back({"inforom.oem", {}, "", "Version of the infoROM's OEM configuration.", plain(&I::inforom_oem)});
  f.push_back({"inforom.ecc", {}, "", "Version of the infoROM's ECC record.", plain(&I::inforom_ecc)});
  f.push_back({"inforom.pwr",
               {"inforom.power"},
               "",
               "Version of the infoROM's power record.",
               plain(&I::inforom_power)});
  f.push_back(
      {"inforom.checksum_validation", {}, "", "infoROM checksum: valid / invalid.", checksum_validation});
  f.push_back({"fan.speed", {}, "%", "Fan speed, percent of maximum.", plain(&G::fan_speed_pct)});
  f.push_back({"pstate", {}, "", "Performance state, P0 (max) to P12 (min).", pstate});
  f.push_back({"clocks_event_reasons.supported",
               {"clocks_throttle_reasons.supported"},
               "",
               "Bitmask of supported clock event reasons.",
               hex(&I::clocks_event_reasons_supported, 16)});
  f.push_back({"clocks_event_reasons.active",
               {"clocks_throttle_reasons.active"},
               "",
               "Bitmask of active clock event reasons.",
               hex(&G::clocks_event_reasons_active, 16)});
  f.push_back({"clocks_event_reasons.gpu_idle",
               {"clocks_throttle_reasons.gpu_idle"},
               "",
               "Nothing runs: clocks lowered.",
               reason_bit(ce::gpu_idle)});
  f.push_back({"clocks_event_reasons.applications_clocks_setting",
               {"clocks_throttle_reasons.applications_clocks_setting"},
               "",
               "Clocks limited by the applications clocks setting.",
               reason_bit(ce::applications_clocks_setting)});
  f.push_back({"clocks_event_reasons.sw_power_cap",
               {"clocks_throttle_reasons.sw_power_cap"},
               "",
               "Software power cap lowers clocks.",
               reason_bit(ce::sw_power_cap)});
  f.push_back({"clocks_event_reasons.hw_slowdown",
               {"clocks_throttle_reasons.hw_slowdown"},
               "",
               "Hardware slowdown (thermal or power brake) active.",
               reason_bit(ce::hw_slowdown)});
  f.push_back({"clocks_event_reasons.hw_thermal_slowdown",
               {"clocks_throttle_reasons.hw_thermal_slowdown"},
               "",
               "Hardware thermal slowdown active.",
               reason_bit(ce::hw_thermal_slowdown)});
  f.push_back({"clocks_event_reasons.hw_power_brake_slowdown",
               {"clocks_throttle_reasons.hw_power_brake_slowdown"},
               "",
               "External power brake slowdown active.",
               reason_bit(ce::hw_power_brake_slowdown)});
  f.push_back({"clocks_event_reasons.sw_thermal_slowdown",
               {"clocks_throttle_reasons.sw_thermal_slowdown"},
               "",
               "Software thermal slowdown active.",
               reason_bit(ce::sw_thermal_slowdown)});
  f.push_back({"clocks_event_reasons.sync_boost",
               {"clocks_throttle_reasons.sync_boost"},
               "",
               "Clocks held down by a sync-boost group.",
               reason_bit(ce::sync_boost)});
  f.push_back({"clocks_event_reasons_counters.sw_power_cap",
               {},
               "us",
               "Time held by the software power cap.",
               ns_to_us(&G::violation_power_ns)});
  f.push_back({"clocks_event_reasons_counters.sync_boost",
               {},
               "us",
               "Time held down by a sync-boost group.",
               ns_to_us(&G::violation_sync_boost_ns)});
  f.push_back({"clocks_event_reasons_counters.sw_thermal_slowdown",
               {},
               "us",
               "Time in software thermal slowdown.",
               ns_to_us(&G::violation_sw_thermal_ns)});
  f.push_back({"clocks_event_reasons_counters.hw_thermal_slowdown",
               {},
               "us",
               "Time in hardware thermal slowdown.",
               ns_to_us(&G::violation_hw_thermal_ns)});
  f.push_back({"clocks_event_reasons_counters.hw_power_brake_slowdown",
               {},
               "us",
               "Time in power brake slowdown.",
               ns_to_us(&G::violation_hw_power_brake_ns)});
  f.push_back({"memory.total", {}, "MiB", "Total framebuffer memory.", memory_total});
  f.push_back({"memory.reserved",
               {},
               "MiB",
               "Memory reserved by the driver and firmware.",
               mib(&G::memory_reserved_bytes)});
  f.push_back({"memory.used", {}, "MiB", "Memory allocated by active contexts.", mib(&G::memory_used_bytes)});
  f.push_back({"memory.free", {}, "MiB", "Free memory.", mib(&G::memory_free_bytes)});
  f.push_back(
      {"compute_mode", {}, "", "Default, Exclusive_Thread, Prohibited or Exclusive_Process.", compute_mode});
  f.push_back({"compute_cap", {}, "", "CUDA compute capability, major.minor.", compute_cap});
  f.push_back({"utilization.gpu",
               {},
               "%",
               "Time a kernel ran over the last sample period.",
               plain(&G::utilization_gpu_pct)});
  f.push_back({"utilization.memory",
               {},
               "%",
               "Time memory was read or written over the last sample period.",
               plain(&G::utilization_memory_pct)});
  f.push_back(
      {"utilization.encoder", {}, "%", "Video encoder utilisation.", plain(&G::utilization_encoder_pct)});
  f.push_back(
      {"utilization.decoder", {}, "%", "Video decoder utilisation.", plain(&G::utilization_decoder_pct)});
  f.push_back({"utilization.jpeg", {}, "%", "JPEG decoder utilisation.", plain(&G::utilization_jpeg_pct)});
  f.push_back(
      {"utilization.ofa", {}, "%", "Optical flow accelerator utilisation.", plain(&G::utilization_ofa_pct)});
  f.push_back({"encoder.stats.sessionCount",
               {},
               "",
               "Encoder sessions running on the GPU.",
               plain(&G::encoder_session_count)});
  f.push_back({"encoder.stats.averageFps",
               {},
               "",
               "Average frames per second of the encoder sessions.",
               plain(&G::encoder_average_fps)});
  f.push_back({"encoder.stats.averageLatency",
               {},
               "",
               "Average encode latency of the sessions, us.",
               plain(&G::encoder_average_latency_us)});
  f.push_back({"ecc.mode.current",
               {},
               "",
               "Current ECC mode: Enabled / Disabled.",
               words(&G::ecc_mode_current, "Enabled", "Disabled")});
  f.push_back({"ecc.mode.pending",
               {},
               "",
               "ECC mode after the next reboot.",
               words(&G::ecc_mode_pending, "Enabled", "Disabled")});
  f.push_back({"ecc.errors.corrected.volatile.total",
               {},
               "",
               "Corrected ECC errors since driver load.",
               plain(&G::ecc_corrected_volatile)});
  f.push_back({"ecc.errors.corrected.aggregate.total",
               {},
               "",
               "Corrected ECC errors over the GPU's life.",
               plain(&G::ecc_corrected_aggregate)});
  f.push_back({"ecc.errors.uncorrected.volatile.total",
               {},
               "",
               "Uncorrected ECC errors since driver load (non-zero: stop, check the GPU).",
               plain(&G::ecc_uncorrected_volatile)});
  f.push_back({"ecc.errors.uncorrected.aggregate.total",
               {},
               "",
               "Uncorrected ECC errors over the GPU's life.",
               plain(&G::ecc_uncorrected_aggregate)});
  // By location (nvmlDeviceGetMemoryErrorCounter; device_memory is DRAM: NVML's
  // NVML_MEMORY_LOCATION_DEVICE_MEMORY = NVML_MEMORY_LOCATION_DRAM) and the SRAM split
  // (nvmlDeviceGetSramEccErrorStatus): the values nvidia-smi prints on the H100 / H200 captures.
  // register_file, l1_cache, l2_cache, texture_memory and cbu stay [N/A] (docs/cli.md).
  using Count = const Reading<std::uint64_t>& (*)(const GpuSample&);
  struct ByLocation {
    std::string_view name, description;
    Count read;
  };
  static constexpr ByLocation kByLocation[] = {
      {"ecc.errors.corrected.volatile.device_memory",
       "Corrected ECC errors in device memory (DRAM), since driver load.",
       [](const GpuSample& g) -> const Reading<std::uint64_t>& {
         return g.ecc_volatile_by_location.dram_corrected;
       }},
      {"ecc.errors.corrected.volatile.dram", "Corrected ECC errors in DRAM, since driver load.",
       [](const GpuSample& g) -> const Reading<std::uint64_t>& {
         return g.ecc_volatile_by_location.dram_corrected;
       }},
      {"ecc.errors.corrected.volatile.sram", "Corrected ECC errors in SRAM, since driver load.",
       [](const GpuSample& g) -> const Reading<std::uint64_t>& {
         return g.ecc_volatile_by_location.sram_corrected;
       }},
      {"ecc.errors.uncorrected.volatile.device_memory",
       "Uncorrected ECC errors in device memory (DRAM), since driver load.",
       [](const GpuSample& g) -> const Reading<std::uint64_t>& {
         return g.ecc_volatile_by_location.dram_uncorrected;
       }},
      {"ecc.errors.uncorrected.volatile.dram", "Uncorrected ECC errors in DRAM, since driver load.",
       [](const GpuSample& g) -> const Reading<std::uint64_t>& {
         return g.ecc_volatile_by_location.dram_uncorrected;
       }},
      {"ecc.errors.uncorrected.volatile.sram", "Uncorrected ECC errors in SRAM, since driver load.",
       [](const GpuSample& g) -> const Reading<std::uint64_t>& {
         return g.ecc_volatile_by_location.sram_uncorrected;
       }},
      {"ecc.errors.corrected.aggregate.device_memory",
       "Corrected ECC errors in device memory (DRAM), over the GPU's life.",
       [](const GpuSample& g) -> const Reading<std::uint64_t>& {
         return g.ecc_aggregate_by_location.dram_corrected;
       }},
      {"ecc.errors.corrected.aggregate.dram", "Corrected ECC errors in DRAM, over the GPU's life.",
       [](const GpuSample& g) -> const Reading<std::uint64_t>& {
         return g.ecc_aggregate_by_location.dram_corrected;
       }},
      {"ecc.errors.corrected.aggregate.sram", "Corrected ECC errors in SRAM, over the GPU's life.",
       [](const GpuSample& g) -> const Reading<std::uint64_t>& {
         return g.ecc_aggregate_by_location.sram_corrected;
       }},
      {"ecc.errors.uncorrected.aggregate.device_memory",
       "Uncorrected ECC errors in device memory (DRAM), over the GPU's life.",
       [](const GpuSample& g) -> const Reading<std::uint64_t>& {
         return g.ecc_aggregate_by_location.dram_uncorrected;
       }},
      {"ecc.errors.uncorrected.aggregate.dram", "Uncorrected ECC errors in DRAM, over the GPU's life.",
       [](const GpuSample& g) -> const Reading<std::uint64_t>& {
         return g.ecc_aggregate_by_location.dram_uncorrected;
       }},
      {"ecc.errors.uncorrected.aggregate.sram", "Uncorrected ECC errors in SRAM, over the GPU's life.",
       [](const GpuSample& g) -> const Reading<std::uint64_t>& {
         return g.ecc_aggregate_by_location.sram_uncorrected;
       }},
      {"ecc.errors.uncorrected.volatile.sram.parity", "Uncorrected SRAM parity errors since driver load.",
       [](const GpuSample& g) -> const Reading<std::uint64_t>& {
         return g.sram_ecc.volatile_uncorrected_parity;
       }},
      {"ecc.errors.uncorrected.volatile.sram.secded", "Uncorrected SRAM SEC-DED errors since driver load.",
       [](const GpuSample& g) -> const Reading<std::uint64_t>& {
         return g.sram_ecc.volatile_uncorrected_secded;
       }},
      {"ecc.errors.uncorrected.aggregate.sram.parity", "Uncorrected SRAM parity errors over the GPU's life.",
       [](const GpuSample& g) -> const Reading<std::uint64_t>& {
         return g.sram_ecc.aggregate_uncorrected_parity;
       }},
      {"ecc.errors.uncorrected.aggregate.sram.secded", "Uncorrected SRAM SEC-DED errors over the GPU's life.",
       [](const GpuSample& g) -> const Reading<std::uint64_t>& {
         return g.sram_ecc.aggregate_uncorrected_secded;
       }},
      {"ecc.errors.uncorrected.aggregate.sram.l2", "Uncorrected SRAM errors in L2 over the GPU's life.",
       [](const GpuSample& g) -> const Reading<std::uint64_t>& {
         return g.sram_ecc.aggregate_uncorrected_l2;
       }},
      {"ecc.errors.uncorrected.aggregate.sram.sm", "Uncorrected SRAM errors in SMs over the GPU's life.",
       [](const GpuSample& g) -> const Reading<std::uint64_t>& {
         return g.sram_ecc.aggregate_uncorrected_sm;
       }},
      {"ecc.errors.uncorrected.aggregate.sram.mcu", "Uncorrected SRAM errors in the MCU over the GPU's life.",
       [](const GpuSample& g) -> const Reading<std::uint64_t>& {
         return g.sram_ecc.aggregate_uncorrected_mcu;
       }},
      {"ecc.errors.uncorrected.aggregate.sram.pcie", "Uncorrected SRAM errors in PCIe over the GPU's life.",
       [](const GpuSample& g) -> const Reading<std::uint64_t>& {
         return g.sram_ecc.aggregate_uncorrected_pcie;
       }},
      {"ecc.errors.uncorrected.aggregate.sram.other",
       "Uncorrected SRAM errors elsewhere over the GPU's life.",
       [](const GpuSample& g) -> const Reading<std::uint64_t>& {
         return g.sram_ecc.aggregate_uncorrected_other;
       }},
  };
  for (const auto& e : kByLocation) f.push_back({e.name, {}, "", e.description, inner(e.read)});
  f.push_back(
      {"ecc.errors.uncorrected.aggregate.sram.thresholdExceeded",
       {},
       "",
       "Yes when the SRAM uncorrectable error threshold is exceeded (replace the GPU).",
       inner(+[](const GpuSample& g) -> const Reading<bool>& { return g.sram_ecc.threshold_exceeded; })});
  f.push_back({"retired_pages.single_bit_ecc.count",
               {"retired_pages.sbe"},
               "",
               "Pages retired for single-bit errors.",
               plain(&G::retired_pages_sbe)});
  f.push_back({"retired_pages.double_bit.count",
               {"retired_pages.dbe"},
               "",
               "Pages retired for double-bit errors.",
               plain(&G::retired_pages_dbe)});
  f.push_back({"retired_pages.pending",
               {},
               "",
               "A page retirement waits for a reboot: Yes / No.",
               words(&G::retired_pages_pending, "Yes", "No")});
  f.push_back({"remapped_rows.correctable",
               {"remapped_rows.sbe"},
               "",
               "Rows remapped for correctable errors.",
               plain(&G::remapped_rows_correctable)});
  f.push_back({"remapped_rows.uncorrectable",
               {"remapped_rows.dbe"},
               "",
               "Rows remapped for uncorrectable errors.",
               plain(&G::remapped_rows_uncorrectable)});
  f.push_back({"remapped_rows.pending",
               {},
               "",
               "A row remap waits for a GPU reset: Yes / No.",
               words(&G::remapped_rows_pending, "Yes", "No")});
  f.push_back({"remapped_rows.failure",
               {},
               "",
               "A row remap failed: Yes / No.",
               words(&G::remapped_rows_failure, "Yes", "No")});
  f.push_back({"temperature.gpu", {}, "", "Core GPU temperature, degrees C.", plain(&G::temperature_gpu_c)});
  f.push_back(
      {"temperature.gpu.tlimit", {}, "", "Degrees C left before the GPU slows down (T.Limit).", tlimit});
  f.push_back({"temperature.memory", {}, "", "HBM temperature, degrees C.", memory_temperature});
  f.push_back({"power.draw",
               {},
               "W",
               "Board power draw (1 s average on Ampere and later).",
               watts(&G::power_draw_mw)});
  f.push_back({"power.draw.average",
               {"gpu.power.draw.average"},
               "W",
               "Board power averaged over 1 s (Ampere and later, not GA100).",
               watts(&G::power_draw_average_mw)});
  f.push_back({"power.draw.instant",
               {"gpu.power.draw.instant"},
               "W",
               "Instantaneous power draw.",
               watts(&G::power_draw_instant_mw)});
  f.push_back({"power.limit",
               {"gpu.power.requested_limit"},
               "W",
               "Requested software power limit.",
               watts(&G::power_limit_mw)});
  f.push_back({"enforced.power.limit",
               {"gpu.power.current_limit"},
               "W",
               "Power limit the GPU enforces.",
               watts(&G::enforced_power_limit_mw)});
  f.push_back({"power.default_limit",
               {"gpu.power.default_limit"},
               "W",
               "Default power limit.",
               watts(&I::power_default_limit_mw)});
  f.push_back({"power.min_limit",
               {"gpu.power.min_limit"},
               "W",
               "Lowest settable power limit.",
               watts(&I::power_min_limit_mw)});
  f.push_back({"power.max_limit",
               {"gpu.power.max_limit"},
               "W",
               "Highest settable power limit.",
               watts(&I::power_max_limit_mw)});
  f.push_back(
      {"clocks.current.graphics", {"clocks.gr"}, "MHz", "Graphics clock.", plain(&G::clocks_graphics_mhz)});
  f.push_back({"clocks.current.sm", {"clocks.sm"}, "MHz", "SM clock.", plain(&G::clocks_sm_mhz)});
  f.push_back(
      {"clocks.current.memory", {"clocks.mem"}, "MHz", "Memory clock.", plain(&G::clocks_memory_mhz)});
  f.push_back({"clocks.current.video",
               {"clocks.video"},
               "MHz",
               "Video (encoder/decoder) clock.",
               plain(&G::clocks_video_mhz)});
  f.push_back({"clocks.max.graphics",
               {"clocks.max.gr"},
               "MHz",
               "Max graphics clock.",
               plain(&I::clocks_max_graphics_mhz)});
  f.push_back({"clocks.max.sm", {}, "MHz", "Max SM clock.", plain(&I::clocks_max_sm_mhz)});
  f.push_back({"clocks.max.memory",
               {"clocks.max.mem"},
               "MHz",
               "Max memory clock.",
               plain(&I::clocks_max_memory_mhz)});
  f.push_back({"mig.mode.current",
               {},
               "",
               "MIG mode: Enabled / Disabled.",
               words(&G::mig_mode_current, "Enabled", "Disabled")});
  f.push_back({"mig.mode.pending",
               {},
               "",
               "MIG mode after the next reset.",
               words(&G::mig_mode_pending, "Enabled", "Disabled")});
  f.push_back({"fabric.state",
               {},
               "",
               "NVLink fabric registration: Not Started, In Progress, Completed (N/A without a fabric).",
               fabric_state});
  f.push_back({"fabric.status", {}, "", "Result of a completed fabric registration.", fabric_status});
  f.push_back({"fabric.cliqueId",
               {},
               "",
               "Fabric clique of the GPU.",
               [](const Snapshot&, const GpuSample& g) -> FieldValue {
                 const auto& r = g.fabric_clique_id;
                 return r.ok() ? FieldValue{fmt::format("{}", *r)} : bare_na(r);
               }});
  f.push_back({"fabric.clusterUuid",
               {},
               "",
               "UUID of the fabric cluster.",
               [](const Snapshot&, const GpuSample& g) -> FieldValue {
                 const auto& r = g.fabric_cluster_uuid;
                 return r.ok() ? FieldValue{*r} : bare_na(r);
               }});
  for (const char* health :
       {"fabric.health.summary", "fabric.health.bandwidth", "fabric.health.route_recovery_in_progress",
        "fabric.health.route_unhealthy", "fabric.health.access_timeout_recovery",
        "fabric.health.incorrect_configuration", "fabric.health.partition_assigned"})
    f.push_back({health, {}, "", "Fabric health: N/A (the health mask is not decoded).", bare_na_always});
  return f;
}

/// What nvidia-smi prints for a catalog field trainmon has no source for, on the snapshot's driver.
FieldValue placeholder(std::string_view name, const Snapshot& snap) {
  if (name.starts_with("fabric.")) return {"N/A", true};
  const int major = driver_major(snap);
  // Deprecated by the driver: the captures of R580 (display_mode) and R590+ (the rest) print this.
  if (name == "display_mode" && major >= 580) return {std::string(kDeprecated), true};
  if ((name == "power.management" || name.starts_with("clocks.applications.") ||
       name.starts_with("clocks.default_applications.")) &&
      major >= 590)
    return {std::string(kDeprecated), true};
  return {"[N/A]", true};
}

bool in_table(const std::vector<GpuField>& t, std::string_view name) {
  return std::any_of(t.begin(), t.end(), [&](const GpuField& f) { return f.name == name; });
}

std::vector<GpuField> make_no_source_fields(const std::vector<GpuField>& with_source) {
  std::vector<GpuField> f;
  for (const KnownGpuField& k : nvidia_smi_gpu_field_catalog()) {
    if (in_table(with_source, k.name)) continue;
    std::vector<std::string_view> aliases;
    for (auto a : k.aliases)
      if (!a.empty()) aliases.push_back(a);
    const std::string_view name = k.name;
    f.push_back({name, aliases, k.unit,
                 "no source in trainmon: what nvidia-smi prints when it cannot read it",
                 [name](const Snapshot& s, const GpuSample&) { return placeholder(name, s); }});
  }
  return f;
}

const std::vector<GpuField>& gpu_table() {
  static const std::vector<GpuField> t = make_gpu_fields();
  return t;
}
const std::vector<GpuField>& no_source_table() {
  static const std::vector<GpuField> t = make_no_source_fields(gpu_table());
  return t;
}

using AppFormat = std::function<FieldValue(const Snapshot&, const GpuSample&, const GpuProcessSample&)>;

AppFormat app_gpu(GpuFormat f) {
  return
      [f = std::move(f)](const Snapshot& s, const GpuSample& g, const GpuProcessSample&) { return f(s, g); };
}

const std::vector<AppField>& app_table() {
  static const std::vector<AppField> t = [] {
    using I = GpuStaticInfo;
    std::vector<AppField> f;
    f.push_back({"timestamp",
                 {},
                 "",
                 "Local time of the sample.",
                 [](const Snapshot& s, const GpuSample&, const GpuProcessSample&) -> FieldValue {
                   return {nvidia_smi_timestamp(s.time_unix_ns)};
                 }});
    f.push_back({"gpu_name", {}, "", "Product name of the process's GPU.", app_gpu(plain(&I::name))});
    f.push_back({"gpu_bus_id", {}, "", "PCI bus id of the process's GPU.", app_gpu(plain(&I::pci_bus_id))});
    f.push_back({"gpu_serial", {}, "", "Serial number of the process's GPU.", app_gpu(plain(&I::serial))});
    f.push_back({"gpu_uuid", {}, "", "UUID of the process's GPU.", app_gpu(plain(&I::uuid))});
    f.push_back({"pid",
                 {},
                 "",
                 "Process id as the driver reports it.",
                 [](const Snapshot&, const GpuSample&, const GpuProcessSample& p) -> FieldValue {
                   return {fmt::format("{}", p.pid)};
                 }});
    f.push_back({"process_name",
                 {"name"},
                 "",
                 "Process name.",
                 [](const Snapshot&, const GpuSample&, const GpuProcessSample& p) -> FieldValue {
                   return p.process_name.ok() ? FieldValue{*p.process_name} : na(p.process_name);
                 }});
    f.push_back({"used_gpu_memory",
                 {"used_memory"},
                 "MiB",
                 "GPU memory used by the process's context.",
                 [](const Snapshot&, const GpuSample&, const GpuProcessSample& p) -> FieldValue {
                   if (!p.used_memory_bytes.ok()) return na(p.used_memory_bytes);
                   return {fmt::format("{}", bytes_to_mib(*p.used_memory_bytes))};
                 }});
    return f;
  }();
  return t;
}

template <class Field>
const Field* find_in(const std::vector<Field>& table, std::string_view name) {
  for (const auto& f : table) {
    if (f.name == name) return &f;
    if (std::find(f.aliases.begin(), f.aliases.end(), name) != f.aliases.end()) return &f;
  }
  return nullptr;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_commas(std::string_view list) {
  std::vector<std::string_view> out;
  while (true) {
    const auto comma = list.find(',');
    out.push_back(trim(list.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

std::string invalid_field(std::string_view name) {
  return fmt::format("Field \"{}\" is not a valid field to query.", name);
}

template <class Field>
std::string header_of(const std::vector<const Field*>& fields, const CsvOptions& opt) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ", ";
    out += fields[i]->name;
    if (opt.units && !fields[i]->unit.empty())
      fmt::format_to(std::back_inserter(out), " [{}]", fields[i]->unit);
  }
  return out;
}

void append_value(std::string& out, const FieldValue& v, std::string_view unit, const CsvOptions& opt,
                  int major = 0) {
  if (v.not_supported && v.text == "[N/A]" && major > 0 && major < 450) {
    out += "[Not Supported]";
    return;
  }
  // Names, serials and process names come from the driver: one field, no control reaches the
  // terminal (text::csv_smi leaves every value nvidia-smi prints as it is).
  out += v.na ? v.text : text::csv_smi(v.text);
  if (!v.na && opt.units && !unit.empty()) {
    out += ' ';
    out += unit;
  }
}

}  // namespace

int driver_major(const Snapshot& snap) {
  if (!snap.driver.driver_version.ok()) return 0;
  const std::string& v = *snap.driver.driver_version;
  int major = 0;
  for (char c : v) {
    if (c < '0' || c > '9') break;
    major = major * 10 + (c - '0');
    if (major > 100000) return 0;
  }
  return major;
}

std::span<const GpuField> gpu_fields() {
  return gpu_table();
}
std::span<const GpuField> gpu_fields_without_source() {
  return no_source_table();
}
std::span<const AppField> app_fields() {
  return app_table();
}

const GpuField* find_gpu_field(std::string_view name) {
  if (const auto* f = find_in(gpu_table(), name)) return f;
  return find_in(no_source_table(), name);
}
const AppField* find_app_field(std::string_view name) {
  return find_in(app_table(), name);
}

std::expected<CsvOptions, std::string> parse_csv_format(std::string_view spec) {
  CsvOptions opt;
  bool csv = false;
  for (auto tok : split_commas(spec)) {
    if (tok == "csv") {
      csv = true;
    } else if (tok == "noheader") {
      opt.header = false;
    } else if (tok == "nounits") {
      opt.units = false;
    } else {
      return std::unexpected(
          fmt::format("\"{}\" is not a valid format option (use csv, noheader, nounits).", tok));
    }
  }
  if (!csv) return std::unexpected(std::string("--format must include csv."));
  return opt;
}

std::expected<GpuQuery, std::string> parse_gpu_query(std::string_view list) {
  GpuQuery q;
  for (auto name : split_commas(list)) {
    const GpuField* f = find_gpu_field(name);
    if (!f) return std::unexpected(invalid_field(name));
    q.fields.push_back(f);
  }
  return q;
}

std::expected<AppQuery, std::string> parse_app_query(std::string_view list) {
  AppQuery q;
  for (auto name : split_commas(list)) {
    const AppField* f = find_app_field(name);
    if (!f) return std::unexpected(invalid_field(name));
    q.fields.push_back(f);
  }
  return q;
}

std::string csv_header(const GpuQuery& q, const CsvOptions& opt) {
  return header_of(q.fields, opt);
}
std::string csv_header(const AppQuery& q, const CsvOptions& opt) {
  return header_of(q.fields, opt);
}

std::string csv_gpu_row(const GpuQuery& q, const CsvOptions& opt, const Snapshot& snap,
                        const GpuSample& gpu) {
  std::string out;
  for (std::size_t i = 0; i < q.fields.size(); ++i) {
    if (i) out += ", ";
    append_value(out, q.fields[i]->format(snap, gpu), q.fields[i]->unit, opt, driver_major(snap));
  }
  return out;
}

std::string csv_query_gpu(const GpuQuery& q, const CsvOptions& opt, const Snapshot& snap,
                          std::span<const std::size_t> gpu_order, bool with_header) {
  std::string out;
  if (with_header && opt.header) out += csv_header(q, opt) + '\n';
  for (std::size_t pos : gpu_order) out += csv_gpu_row(q, opt, snap, snap.gpus.at(pos)) + '\n';
  return out;
}

std::string csv_query_apps(const AppQuery& q, const CsvOptions& opt, const Snapshot& snap,
                           std::span<const std::size_t> gpu_order, bool with_header) {
  std::string out;
  if (with_header && opt.header) out += csv_header(q, opt) + '\n';
  for (std::size_t pos : gpu_order) {
    const GpuSample& gpu = snap.gpus.at(pos);
    std::vector<const GpuProcessSample*> procs;
    for (const auto& p : snap.gpu_processes)
      if (p.gpu_index == gpu.index && (p.type == 'C' || p.type == 'M')) procs.push_back(&p);
    // In the driver's order, as nvidia-smi lists them (snapshots are sorted by pid).
    std::stable_sort(procs.begin(), procs.end(),
                     [](const auto* a, const auto* b) { return a->list_position < b->list_position; });
    for (const GpuProcessSample* pp : procs) {
      const GpuProcessSample& p = *pp;
      for (std::size_t i = 0; i < q.fields.size(); ++i) {
        if (i) out += ", ";
        append_value(out, q.fields[i]->format(snap, gpu, p), q.fields[i]->unit, opt, driver_major(snap));
      }
      out += '\n';
    }
    // Lists that failed: one row for the GPU whose process fields say why, in nvidia-smi's words
    // ("[Insufficient Permissions]"), never no row next to the memory those processes hold.
    if (!processes_unknown_reason(gpu.process_count).empty()) {
      const GpuProcessSample none{};
      const FieldValue unknown{std::string(nvidia_smi_na_text(gpu.process_count.status)), true};
      for (std::size_t i = 0; i < q.fields.size(); ++i) {
        if (i) out += ", ";
        const auto& f = *q.fields[i];
        const bool gpu_field = f.name.starts_with("gpu_") || f.name == "timestamp";
        append_value(out, gpu_field ? f.format(snap, gpu, none) : unknown, f.unit, opt);
      }
      out += '\n';
    }
  }
  return out;
}

namespace {
template <class Field>
void help_entry(std::string& out, const Field& f) {
  out += '"';
  out += f.name;
  out += '"';
  for (auto a : f.aliases) fmt::format_to(std::back_inserter(out), " or \"{}\"", a);
  if (!f.unit.empty()) fmt::format_to(std::back_inserter(out), "  [{}]", f.unit);
  fmt::format_to(std::back_inserter(out), "\n{}\n\n", f.description);
}
}  // namespace

std::string help_query_gpu() {
  std::string out = "List of valid properties to query for the switch \"--query-gpu\":\n\n";
  for (const auto& f : gpu_table()) help_entry(out, f);
  out +=
      "Accepted for compatibility with nvidia-smi; no data source in trainmon, they print what nvidia-smi "
      "prints for a value it cannot read ([N/A], N/A, or that the driver deprecated the field):\n\n";
  for (const auto& f : no_source_table()) {
    out += '"';
    out += f.name;
    out += '"';
    for (auto a : f.aliases) fmt::format_to(std::back_inserter(out), " or \"{}\"", a);
    out += '\n';
  }
  return out;
}

std::string help_query_compute_apps() {
  std::string out = "List of valid properties to query for the switch \"--query-compute-apps\":\n\n";
  for (const auto& f : app_table()) help_entry(out, f);
  return out;
}

std::expected<std::vector<std::size_t>, std::string> select_gpus(const Snapshot& snap,
                                                                 std::string_view spec) {
  std::vector<std::size_t> out;
  if (trim(spec).empty()) {
    for (std::size_t i = 0; i < snap.gpus.size(); ++i) out.push_back(i);
    return out;
  }
  auto lower = [](std::string_view s) {
    std::string r(s);
    for (auto& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return r;
  };
  for (auto id : split_commas(spec)) {
    if (id.empty()) return std::unexpected(std::string("empty GPU id in -i/--id"));
    const std::string want = lower(id);
    std::vector<std::size_t> hits;
    const bool numeric = std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; });
    for (std::size_t i = 0; i < snap.gpus.size(); ++i) {
      const auto& g = snap.gpus[i];
      const auto& inf = info_of(g);
      if (numeric) {
        if (fmt::format("{}", g.index) == id) hits.push_back(i);
        continue;
      }
      if (inf.uuid.ok() && lower(*inf.uuid).starts_with(want)) {
        hits.push_back(i);
        continue;
      }
      if (inf.pci_bus_id.ok()) {
        const std::string bus = lower(*inf.pci_bus_id);
        // Full "00000000:83:00.0", or a short form matching its tail ("83:00.0", "0000:83:00.0").
        if (bus == want ||
            (bus.size() > want.size() && bus.ends_with(want) && bus[bus.size() - want.size() - 1] == ':'))
          hits.push_back(i);
      }
    }
    if (hits.size() != 1)
      return std::unexpected(fmt::format("No GPU matches id \"{}\"{}.", id, hits.empty() ? "" : " uniquely"));
    // The same GPU named twice (0,0; an index and its UUID) is listed once, where first named.
    if (std::find(out.begin(), out.end(), hits.front()) == out.end()) out.push_back(hits.front());
  }
  return out;
}

}  // namespace trainmon::exp
