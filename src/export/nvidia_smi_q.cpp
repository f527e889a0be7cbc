// SPDX-License-Identifier: Apache-2.0
// `nvidia-smi -q`: the NVSMI LOG text for the values trainmon reads. Layout from the captures'
// `-q` sections (drivers 590.48.01 and 595.71.05): 4 spaces per level, keys padded so that ": " starts
// in column 56 (column 43 inside a process entry), N/A for a value the GPU does not give, the
// driver's deprecation text where the driver deprecated the row. Rows trainmon has no source for
// are left out; every row printed is one of the capture's rows, in its order
// (tests/e2e/test_views_golden.py: test_query_text_matches_capture).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <tuple>

#include "export/static_info.h"
#include "trainmon/core/units.h"
#include "trainmon/export/nvidia_smi_views.h"

namespace trainmon::exp {

namespace {

constexpr std::size_t kKeyWidth = 55;      ///< ": " after column 55
constexpr std::size_t kProcessWidth = 42;  ///< inside "Processes"
constexpr std::string_view kDeprecated = "Requested functionality has been deprecated";

struct Writer {
  std::string out;
  void row(int level, std::string_view key, std::string_view value, std::size_t width = kKeyWidth) {
    std::string k = std::string(static_cast<std::size_t>(level) * 4, ' ') + std::string(key);
    if (k.size() < width) k += std::string(width - k.size(), ' ');
    fmt::format_to(std::back_inserter(out), "{}: {}\n", k, value);
  }
  void section(int level, std::string_view name) {
    out += std::string(static_cast<std::size_t>(level) * 4, ' ') + std::string(name) + '\n';
  }
};

template <class T, class F>
std::string fmt_or_na(const Reading<T>& r, F f) {
  return r.ok() ? f(*r) : std::string("N/A");
}
template <class T>
std::string plain(const Reading<T>& r) {
  return fmt_or_na(r, [](const T& v) {
    if constexpr (std::is_same_v<T, std::string>) {
      return v;
    } else {
      return fmt::format("{}", v);
    }
  });
}
template <class T>
std::string with_unit(const Reading<T>& r, std::string_view unit) {
  return fmt_or_na(r, [&](const T& v) { return fmt::format("{} {}", v, unit); });
}
std::string mib(const Reading<std::uint64_t>& r) {
  return fmt_or_na(r, [](std::uint64_t b) { return fmt::format("{} MiB", bytes_to_mib(b)); });
}
std::string watts(const Reading<unsigned>& r) {
  return fmt_or_na(r, [](unsigned mw) { return mw_to_watts_2dp(mw) + " W"; });
}
std::string words(const Reading<bool>& r, std::string_view yes, std::string_view no) {
  return fmt_or_na(r, [&](bool b) { return std::string(b ? yes : no); });
}
std::string mode_words(const Reading<unsigned>& r) {
  return fmt_or_na(r, [](unsigned m) { return std::string(m ? "Enabled" : "Disabled"); });
}
std::string us_from_ns(const Reading<std::uint64_t>& r) {
  return fmt_or_na(r, [](std::uint64_t ns) { return fmt::format("{} us", ns / 1000); });
}

std::string brand_name(const Reading<unsigned>& r) {
  return fmt_or_na(r, [](unsigned b) -> std::string {
    switch (b) {  // nvmlBrandType_t (NVML-NOTES §6.2), as nvidia-smi names them
      case 1: return "Quadro";
      case 2: return "Tesla";
      case 3: return "NVS";
      case 4: return "GRID";
      case 5: return "GeForce";
      case 6: return "Titan";
      case 12: return "Quadro RTX";
      case 13: return "NVIDIA RTX";
      case 14: return "NVIDIA";
      case 15: return "GeForce RTX";
      case 16: return "Titan RTX";
      default: return "N/A";
    }
  });
}

std::string architecture_name(const Reading<unsigned>& r) {
  return fmt_or_na(r, [](unsigned a) -> std::string {
    switch (a) {  // nvmlDeviceArchitecture_t
      case 2: return "Kepler";
      case 3: return "Maxwell";
      case 4: return "Pascal";
      case 5: return "Volta";
      case 6: return "Turing";
      case 7: return "Ampere";
      case 8: return "Ada Lovelace";
      case 9: return "Hopper";
      case 10: return "Blackwell";
      default: return "N/A";
    }
  });
}

std::string compute_mode_name(const Reading<unsigned>& r) {
  return fmt_or_na(r, [](unsigned m) -> std::string {
    switch (m) {
      case 0: return "Default";
      case 1: return "Exclusive_Thread";
      case 2: return "Prohibited";
      case 3: return "Exclusive_Process";
      default: return "N/A";
    }
  });
}

std::string driver_model_name(const Reading<unsigned>& r) {
  return fmt_or_na(r, [](unsigned m) -> std::string { return m == 0 ? "WDDM" : m == 1 ? "TCC" : "MCDM"; });
}

std::string reason(const GpuSample& g, std::uint64_t bit) {
  return fmt_or_na(g.clocks_event_reasons_active,
                   [bit](std::uint64_t r) { return std::string((r & bit) ? "Active" : "Not Active"); });
}

std::string fabric_state_name(const Reading<unsigned>& r) {
  return fmt_or_na(r, [](unsigned s) -> std::string {
    return s == 1 ? "Not Started" : s == 2 ? "In Progress" : s == 3 ? "Completed" : "N/A";
  });
}

/// ctime(3)'s layout, as nvidia-smi prints its Timestamp: "Tue Jul 14 08:12:38 2026".
std::string log_time(std::int64_t unix_ns) {
  const std::time_t t = static_cast<std::time_t>(unix_ns / 1'000'000'000);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a %b %e %H:%M:%S %Y", &tm);
  return buf;
}

/// One ECC Errors row: the count nvmlDeviceGetMemoryErrorCounter gave for the location, N/A when it
/// gave none (ECC off or not supported, as on the Turing capture).
std::string count_or_na(const Reading<std::uint64_t>& r) {
  return r.ok() ? fmt::format("{}", *r) : std::string("N/A");
}

/// An SRAM uncorrectable row of the Hopper split (parity / SEC-DED) from
/// nvmlDeviceGetSramEccErrorStatus; without that call (drivers before NVML 12.4) both rows are 0
/// when the SRAM uncorrectable count is 0, else N/A (never a guess at the split).
std::string sram_split(const Reading<std::uint64_t>& part, const Reading<std::uint64_t>& unc) {
  if (part.ok()) return fmt::format("{}", *part);
  return unc.ok() && *unc == 0 ? std::string("0") : std::string("N/A");
}

void ecc_errors(Writer& w, const GpuSample& g, const GpuStaticInfo& i) {
  // Hopper and later split SRAM uncorrectable errors into parity and SEC-DED (the H100 / H200
  // captures); the Turing capture (595.71.05) has one SRAM Uncorrectable row.
  const bool split = i.architecture.ok() && *i.architecture >= 9;
  const SramEccStatus& st = g.sram_ecc;
  w.section(1, "ECC Errors");
  for (const auto& [name, e] : {std::pair{"Volatile", &g.ecc_volatile_by_location},
                                std::pair{"Aggregate", &g.ecc_aggregate_by_location}}) {
    const bool vol = e == &g.ecc_volatile_by_location;
    w.section(2, name);
    w.row(3, "SRAM Correctable", count_or_na(e->sram_corrected));
    if (split) {
      w.row(3, "SRAM Uncorrectable Parity",
            sram_split(vol ? st.volatile_uncorrected_parity : st.aggregate_uncorrected_parity,
                       e->sram_uncorrected));
      w.row(3, "SRAM Uncorrectable SEC-DED",
            sram_split(vol ? st.volatile_uncorrected_secded : st.aggregate_uncorrected_secded,
                       e->sram_uncorrected));
    } else {
      w.row(3, "SRAM Uncorrectable", count_or_na(e->sram_uncorrected));
    }
    w.row(3, "DRAM Correctable", count_or_na(e->dram_corrected));
    w.row(3, "DRAM Uncorrectable", count_or_na(e->dram_uncorrected));
    if (!vol && st.threshold_exceeded.ok())
      w.row(3, "SRAM Threshold Exceeded", *st.threshold_exceeded ? "Yes" : "No");
  }
  // The aggregate uncorrectable SRAM errors by unit: only where the driver gave the split.
  if (st.aggregate_uncorrected_l2.ok()) {
    w.section(2, "Aggregate Uncorrectable SRAM Sources");
    w.row(3, "SRAM L2", count_or_na(st.aggregate_uncorrected_l2));
    w.row(3, "SRAM SM", count_or_na(st.aggregate_uncorrected_sm));
    w.row(3, "SRAM Microcontroller", count_or_na(st.aggregate_uncorrected_mcu));
    w.row(3, "SRAM PCIE", count_or_na(st.aggregate_uncorrected_pcie));
    w.row(3, "SRAM Other", count_or_na(st.aggregate_uncorrected_other));
  }
}

std::string kb_s(const Reading<unsigned>& r) {
  return fmt_or_na(r, [](unsigned v) { return fmt::format("{} KB/s", v); });
}

void supported_clocks(Writer& w, const GpuStaticInfo& i) {
  if (!i.supported_clocks.ok() || i.supported_clocks->empty()) {
    w.row(1, "Supported Clocks", "N/A");
    return;
  }
  w.section(1, "Supported Clocks");
  for (const SupportedClocks& c : *i.supported_clocks) {
    w.row(2, "Memory", fmt::format("{} MHz", c.memory_mhz));
    for (unsigned gr : c.graphics_mhz) w.row(3, "Graphics", fmt::format("{} MHz", gr));
  }
}

void identity_text(Writer& w, const GpuSample& g, const GpuStaticInfo& i, int major) {
  w.row(1, "Product Name", plain(i.name));
  w.row(1, "Product Brand", brand_name(i.brand));
  w.row(1, "Product Architecture", architecture_name(i.architecture));
  if (major >= 580) w.row(1, "Display Mode", kDeprecated);
  w.row(1, "Display Attached", words(g.display_attached, "Yes", "No"));
  w.row(1, "Display Active", words(g.display_active, "Enabled", "Disabled"));
  w.row(1, "Persistence Mode", words(g.persistence_mode, "Enabled", "Disabled"));
  w.section(1, "MIG Mode");
  w.row(2, "Current", mode_words(g.mig_mode_current));
  w.row(2, "Pending", mode_words(g.mig_mode_pending));
  for (const MigDeviceSample& m : g.mig_devices) {
    w.section(1, "MIG Device");
    w.row(2, "Index", fmt::format("{}", m.index));
    w.row(2, "GPU Instance ID", plain(m.gpu_instance_id));
    w.row(2, "Compute Instance ID", plain(m.compute_instance_id));
    w.section(2, "Shared FB Memory Usage");
    w.row(3, "Total", mib(m.memory_total_bytes));
    w.row(3, "Used", mib(m.memory_used_bytes));
  }
  w.row(1, "Accounting Mode", words(g.accounting_mode, "Enabled", "Disabled"));
  w.row(1, "Accounting Mode Buffer Size", plain(g.accounting_buffer_size));
  w.section(1, "Driver Model");
  w.row(2, "Current", driver_model_name(i.driver_model_current));
  w.row(2, "Pending", driver_model_name(i.driver_model_pending));
  w.row(1, "Serial Number", plain(i.serial));
  w.row(1, "GPU UUID", plain(i.uuid));
  w.row(1, "VBIOS Version", plain(i.vbios_version));
  w.section(1, "Inforom Version");
  w.row(2, "Image Version", plain(i.inforom_image));
  w.row(2, "OEM Object", plain(i.inforom_oem));
  w.row(2, "ECC Object", plain(i.inforom_ecc));
  w.row(2, "Power Management Object", plain(i.inforom_power));
  w.section(1, "PCI");
  w.row(2, "Bus", fmt_or_na(i.pci_bus, [](unsigned v) { return fmt::format("0x{:02X}", v); }));
  w.row(2, "Device", fmt_or_na(i.pci_device, [](unsigned v) { return fmt::format("0x{:02X}", v); }));
  w.row(2, "Domain", fmt_or_na(i.pci_domain, [](unsigned v) { return fmt::format("0x{:04X}", v); }));
  w.row(2, "Device Id", fmt_or_na(i.pci_device_id, [](unsigned v) { return fmt::format("0x{:08X}", v); }));
  w.row(2, "Bus Id", plain(i.pci_bus_id));
  w.row(2, "Sub System Id",
        fmt_or_na(i.pci_sub_device_id, [](unsigned v) { return fmt::format("0x{:08X}", v); }));
  w.section(2, "GPU Link Info");
  w.section(3, "PCIe Generation");
  w.row(4, "Max", plain(i.pcie_link_gen_max));
  w.row(4, "Current", plain(g.pcie_link_gen_current));
  w.row(4, "Device Current", plain(g.pcie_link_gen_current));
  w.row(4, "Device Max", plain(i.pcie_link_gen_gpumax));
  w.section(3, "Link Width");
  w.row(4, "Max", fmt_or_na(i.pcie_link_width_max, [](unsigned v) { return fmt::format("{}x", v); }));
  w.row(4, "Current", fmt_or_na(g.pcie_link_width_current, [](unsigned v) { return fmt::format("{}x", v); }));
  w.row(2, "Replays Since Reset", plain(g.pcie_replay_count));
  w.row(2, "Tx Throughput", kb_s(g.pcie_tx_kib_s));
  w.row(2, "Rx Throughput", kb_s(g.pcie_rx_kib_s));
  w.row(1, "Fan Speed", with_unit(g.fan_speed_pct, "%"));
}

void performance_text(Writer& w, const GpuSample& g) {
  namespace ce = clock_event;
  w.row(1, "Performance State", fmt_or_na(g.pstate, [](unsigned p) { return fmt::format("P{}", p); }));
  w.section(1, "Clocks Event Reasons");
  w.row(2, "Idle", reason(g, ce::gpu_idle));
  w.row(2, "Applications Clocks Setting", reason(g, ce::applications_clocks_setting));
  w.row(2, "SW Power Cap", reason(g, ce::sw_power_cap));
  w.row(2, "HW Slowdown", reason(g, ce::hw_slowdown));
  w.row(3, "HW Thermal Slowdown", reason(g, ce::hw_thermal_slowdown));
  w.row(3, "HW Power Brake Slowdown", reason(g, ce::hw_power_brake_slowdown));
  w.row(2, "Sync Boost", reason(g, ce::sync_boost));
  w.row(2, "SW Thermal Slowdown", reason(g, ce::sw_thermal_slowdown));
  w.row(2, "Display Clock Setting", reason(g, ce::display_clock_setting));
  w.section(1, "Clocks Event Reasons Counters");
  w.row(2, "SW Power Capping", us_from_ns(g.violation_power_ns));
  w.row(2, "Sync Boost", us_from_ns(g.violation_sync_boost_ns));
  w.row(2, "SW Thermal Slowdown", us_from_ns(g.violation_sw_thermal_ns));
  w.row(2, "HW Thermal Slowdown", us_from_ns(g.violation_hw_thermal_ns));
  w.row(2, "HW Power Braking", us_from_ns(g.violation_hw_power_brake_ns));
}

void memory_text(Writer& w, const GpuSample& g, const GpuStaticInfo& i) {
  w.section(1, "FB Memory Usage");
  w.row(2, "Total", mib(g.memory_total_bytes.ok() ? g.memory_total_bytes : i.memory_total_bytes));
  w.row(2, "Reserved", mib(g.memory_reserved_bytes));
  w.row(2, "Used", mib(g.memory_used_bytes));
  w.row(2, "Free", mib(g.memory_free_bytes));
  w.section(1, "BAR1 Memory Usage");
  w.row(2, "Total", mib(i.bar1_total_bytes));
  w.row(2, "Used", mib(g.bar1_used_bytes));
  w.row(2, "Free", mib(g.bar1_free_bytes));
}

void utilization_text(Writer& w, const GpuSample& g) {
  w.section(1, "Utilization");
  w.row(2, "GPU", with_unit(g.utilization_gpu_pct, "%"));
  w.row(2, "Memory", with_unit(g.utilization_memory_pct, "%"));
  w.row(2, "Encoder", with_unit(g.utilization_encoder_pct, "%"));
  w.row(2, "Decoder", with_unit(g.utilization_decoder_pct, "%"));
  w.row(2, "JPEG", with_unit(g.utilization_jpeg_pct, "%"));
  w.row(2, "OFA", with_unit(g.utilization_ofa_pct, "%"));
}

void remapped_rows_text(Writer& w, const GpuSample& g) {
  if (g.remapped_rows_correctable.status == ReadStatus::not_supported) {
    w.row(1, "Remapped Rows", "N/A");  // nvidia-smi folds the section on a GPU without row remapping
  } else {
    w.section(1, "Remapped Rows");
    w.row(2, "Correctable Error", plain(g.remapped_rows_correctable));
    w.row(2, "Uncorrectable Error", plain(g.remapped_rows_uncorrectable));
    w.row(2, "Pending", words(g.remapped_rows_pending, "Yes", "No"));
    w.row(2, "Remapping Failure Occurred", words(g.remapped_rows_failure, "Yes", "No"));
  }
}

void power_text(Writer& w, const GpuSample& g, const GpuStaticInfo& i, int major) {
  w.section(1, "GPU Power Readings");
  w.row(2, "Average Power Draw", watts(g.power_draw_average_mw));
  w.row(2, "Instantaneous Power Draw", watts(g.power_draw_instant_mw));
  if (major < 610) {  // 610 moved these under a "GPU Ceiling Power Limit" subsection: left out there
    w.row(2, "Current Power Limit", watts(g.enforced_power_limit_mw));
    w.row(2, "Requested Power Limit", watts(g.power_limit_mw));
    w.row(2, "Default Power Limit", watts(i.power_default_limit_mw));
  }
  w.row(2, "Min Power Limit", watts(i.power_min_limit_mw));
  w.row(2, "Max Power Limit", watts(i.power_max_limit_mw));
}

void clocks_text(Writer& w, const GpuSample& g, const GpuStaticInfo& i, int major) {
  w.section(1, "Clocks");
  w.row(2, "Graphics", with_unit(g.clocks_graphics_mhz, "MHz"));
  w.row(2, "SM", with_unit(g.clocks_sm_mhz, "MHz"));
  w.row(2, "Memory", with_unit(g.clocks_memory_mhz, "MHz"));
  w.row(2, "Video", with_unit(g.clocks_video_mhz, "MHz"));
  if (major >= 590) {
    for (const char* s : {"Applications Clocks", "Default Applications Clocks"}) {
      w.section(1, s);
      w.row(2, "Graphics", kDeprecated);
      w.row(2, "Memory", kDeprecated);
    }
  }
  w.section(1, "Max Clocks");
  w.row(2, "Graphics", with_unit(i.clocks_max_graphics_mhz, "MHz"));
  w.row(2, "SM", with_unit(i.clocks_max_sm_mhz, "MHz"));
  w.row(2, "Memory", with_unit(i.clocks_max_memory_mhz, "MHz"));
}

void processes_text(Writer& w, const Snapshot& snap, const GpuSample& g) {
  std::vector<const GpuProcessSample*> procs;
  for (const auto& p : snap.gpu_processes)
    if (p.gpu_index == g.index) procs.push_back(&p);
  // In pid order (the snapshot's): the one capture with graphics and compute processes lists
  // them 1696 G, 4584 G, 5267 C, 5268 C, which is pid order and not the compute-then-graphics order
  // of --query-compute-apps.
  if (procs.empty()) {
    w.row(1, "Processes", "None");
    return;
  }
  w.section(1, "Processes");
  for (const GpuProcessSample* p : procs) {
    w.row(2, "GPU instance ID", plain(p->gpu_instance_id), kProcessWidth);
    w.row(2, "Compute instance ID", plain(p->compute_instance_id), kProcessWidth);
    w.row(2, "Process ID", fmt::format("{}", p->pid), kProcessWidth);
    w.row(3, "Type", p->compute_and_graphics ? std::string("C+G") : std::string(1, p->type), kProcessWidth);
    w.row(3, "Name", plain(p->process_name), kProcessWidth);
    w.row(3, "Used GPU Memory", mib(p->used_memory_bytes), kProcessWidth);
  }
}

void gpu_text(Writer& w, const Snapshot& snap, const GpuSample& g, unsigned display) {
  namespace ce = clock_event;
  const GpuStaticInfo& i = info_of(g);
  const int major = driver_major(snap);
  const bool all = display == kQueryDisplayAll;
  auto on = [display](unsigned bit) { return (display & bit) != 0; };
  w.section(0, "GPU " + plain(i.pci_bus_id));
  if (all) identity_text(w, g, i, major);
  if (on(kQdAccounting) && !all) {
    w.row(1, "Accounting Mode", words(g.accounting_mode, "Enabled", "Disabled"));
    w.row(1, "Accounting Mode Buffer Size", plain(g.accounting_buffer_size));
  }
  if (on(kQdPerformance)) performance_text(w, g);
  if (on(kQdMemory)) memory_text(w, g, i);
  if (on(kQdCompute)) w.row(1, "Compute Mode", compute_mode_name(g.compute_mode));
  if (on(kQdUtilization)) utilization_text(w, g);
  if (on(kQdEncoderStats)) {
    w.section(1, "Encoder Stats");
    w.row(2, "Active Sessions", plain(g.encoder_session_count));
    w.row(2, "Average FPS", plain(g.encoder_average_fps));
    w.row(2, "Average Latency", plain(g.encoder_average_latency_us));
  }
  if (on(kQdEcc)) {
    w.section(1, "ECC Mode");
    w.row(2, "Current", words(g.ecc_mode_current, "Enabled", "Disabled"));
    w.row(2, "Pending", words(g.ecc_mode_pending, "Enabled", "Disabled"));
    ecc_errors(w, g, i);
  }
  if (on(kQdPageRetirement)) {
    w.section(1, "Retired Pages");
    w.row(2, "Single Bit ECC", plain(g.retired_pages_sbe));
    w.row(2, "Double Bit ECC", plain(g.retired_pages_dbe));
    w.row(2, "Pending Page Blacklist", words(g.retired_pages_pending, "Yes", "No"));
  }
  if (on(kQdRowRemapper)) remapped_rows_text(w, g);
  if (on(kQdTemperature)) {
    w.section(1, "Temperature");
    w.row(2, "GPU Current Temp", with_unit(g.temperature_gpu_c, "C"));
    w.row(2, "GPU T.Limit Temp", with_unit(g.temperature_tlimit_c, "C"));
    w.row(2, "Memory Current Temp", with_unit(g.temperature_memory_c, "C"));
  }
  if (on(kQdPower)) power_text(w, g, i, major);
  if (on(kQdClock)) clocks_text(w, g, i, major);
  if (on(kQdSupportedClocks) && !all) supported_clocks(w, i);
  if (all) {
    w.section(1, "Fabric");
    w.row(2, "State", fabric_state_name(g.fabric_state));
    w.row(2, "Status", fmt_or_na(g.fabric_status, [](int s) {
            return s == 0 ? std::string("Success") : fmt::format("Error {}", s);
          }));
    w.row(2, "CliqueId", plain(g.fabric_clique_id));
    w.row(2, "ClusterUUID", plain(g.fabric_cluster_uuid));
  }
  if (on(kQdPids)) processes_text(w, snap, g);
}

}  // namespace

std::string query_text(const Snapshot& snap, std::span<const std::size_t> order, unsigned display) {
  Writer w;
  w.out = "\n==============NVSMI LOG==============\n\n";
  w.row(0, "Timestamp", log_time(snap.time_unix_ns));
  w.row(0, "Driver Version", plain(snap.driver.driver_version));
  const auto& cuda = snap.driver.cuda_driver_version;
  w.row(0, "CUDA Version",
        fmt_or_na(cuda, [](int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }));
  w.out += '\n';
  w.row(0, "Attached GPUs",
        fmt::format("{}", snap.driver.device_count.value_or(static_cast<unsigned>(snap.gpus.size()))));
  for (std::size_t pos : order) gpu_text(w, snap, snap.gpus.at(pos), display);
  return w.out;
}

namespace {

constexpr QueryDisplayName kDisplayNames[] = {
    {"MEMORY", kQdMemory},
    {"UTILIZATION", kQdUtilization},
    {"ECC", kQdEcc},
    {"TEMPERATURE", kQdTemperature},
    {"POWER", kQdPower},
    {"CLOCK", kQdClock},
    {"COMPUTE", kQdCompute},
    {"PIDS", kQdPids},
    {"PERFORMANCE", kQdPerformance},
    {"SUPPORTED_CLOCKS", kQdSupportedClocks},
    {"PAGE_RETIREMENT", kQdPageRetirement},
    {"ACCOUNTING", kQdAccounting},
    {"ENCODER_STATS", kQdEncoderStats},
    {"SUPPORTED_GPU_TARGET_TEMP", kQdSupportedGpuTargetTemp},
    {"VOLTAGE", kQdVoltage},
    {"FBC_STATS", kQdFbcStats},
    {"ROW_REMAPPER", kQdRowRemapper},
    {"GSP_FIRMWARE_VERSION", kQdGspFirmwareVersion},
    {"POWER_SMOOTHING", kQdPowerSmoothing},
    {"POWER_PROFILES", kQdPowerProfiles},
};

}  // namespace

std::span<const QueryDisplayName> query_display_names() {
  return kDisplayNames;
}

std::expected<unsigned, std::string> parse_query_display(std::string_view list) {
  unsigned mask = 0;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    std::string name(list.substr(start, comma - start));
    while (!name.empty() && name.front() == ' ') name.erase(0, 1);
    while (!name.empty() && name.back() == ' ') name.pop_back();
    for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    const auto it = std::find_if(std::begin(kDisplayNames), std::end(kDisplayNames),
                                 [&](const QueryDisplayName& d) { return d.name == name; });
    if (it == std::end(kDisplayNames)) {
      std::string valid;
      for (const auto& d : kDisplayNames) valid += (valid.empty() ? "" : ", ") + std::string(d.name);
      return std::unexpected(
          (name.empty() ? std::string("an empty display type") : "\"" + name + "\" is not a display type") +
          " for -d (one or more of " + valid + ", comma separated)");
    }
    mask |= it->bit;
    start = comma + 1;
  }
  return mask;
}

}  // namespace trainmon::exp
