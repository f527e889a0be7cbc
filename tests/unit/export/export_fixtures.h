// SPDX-License-Identifier: Apache-2.0
// Snapshot values built from the H200 capture (tests/captures, nvidia-smi 590.48.01) for the
// export view tests, and a reader for the capture's `--query-gpu` CSV.
#pragma once

#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "trainmon/core/snapshot.h"

namespace trainmon::testing {

inline constexpr std::uint64_t kMiB = 1024ull * 1024ull;

/// Static facts of the captured H200.
inline std::shared_ptr<GpuStaticInfo> h200_info() {
  auto i = std::make_shared<GpuStaticInfo>();
  i->index = 0;
  i->name = Reading<std::string>::of("NVIDIA H200");
  i->uuid = Reading<std::string>::of("GPU-00000000-0000-0000-0000-000000000000");
  i->serial = Reading<std::string>::of("0000000000000");
  i->pci_bus_id = Reading<std::string>::of("00000000:83:00.0");
  i->pci_domain = Reading<unsigned>::of(0);
  i->pci_bus = Reading<unsigned>::of(0x83);
  i->pci_device = Reading<unsigned>::of(0);
  i->pci_device_id = Reading<unsigned>::of(0x233510DE);
  i->pci_sub_device_id = Reading<unsigned>::of(0x18BE10DE);
  i->vbios_version = Reading<std::string>::of("96.00.A5.00.03");
  i->compute_cap_major = Reading<int>::of(9);
  i->compute_cap_minor = Reading<int>::of(0);
  i->pcie_link_gen_max = Reading<unsigned>::of(5);
  i->pcie_link_gen_gpumax = Reading<unsigned>::of(5);
  i->pcie_link_width_max = Reading<unsigned>::of(16);
  i->memory_total_bytes = Reading<std::uint64_t>::of(143771 * kMiB + 123);
  i->power_default_limit_mw = Reading<unsigned>::of(700000);
  i->power_min_limit_mw = Reading<unsigned>::of(200000);
  i->power_max_limit_mw = Reading<unsigned>::of(700000);
  i->clocks_max_graphics_mhz = Reading<unsigned>::of(1980);
  i->clocks_max_sm_mhz = Reading<unsigned>::of(1980);
  i->clocks_max_memory_mhz = Reading<unsigned>::of(3201);
  i->clocks_event_reasons_supported = Reading<std::uint64_t>::of(0x1FF);
  i->num_fans = Reading<unsigned>::fail(ReadStatus::not_supported);
  return i;
}

/// The H200 idle GPU sample (capture section "idle :: query-gpu" and the first dmon line).
inline GpuSample h200_idle() {
  GpuSample g;
  g.index = 0;
  g.info = h200_info();
  g.responsive = Reading<bool>::of(true);
  g.memory_total_bytes = Reading<std::uint64_t>::of(143771 * kMiB + 123);
  g.memory_reserved_bytes = Reading<std::uint64_t>::of(614 * kMiB + 5);
  g.memory_used_bytes = Reading<std::uint64_t>::of(0);
  g.memory_free_bytes = Reading<std::uint64_t>::of(143158 * kMiB + 7);
  g.utilization_gpu_pct = Reading<unsigned>::of(0);
  g.utilization_memory_pct = Reading<unsigned>::of(0);
  g.utilization_encoder_pct = Reading<unsigned>::of(0);
  g.utilization_decoder_pct = Reading<unsigned>::of(0);
  g.utilization_jpeg_pct = Reading<unsigned>::of(0);
  g.utilization_ofa_pct = Reading<unsigned>::of(0);
  g.temperature_gpu_c = Reading<unsigned>::of(28);
  g.temperature_memory_c = Reading<unsigned>::of(32);
  g.power_draw_mw = Reading<unsigned>::of(77710);
  g.power_draw_instant_mw = Reading<unsigned>::of(78210);
  g.power_limit_mw = Reading<unsigned>::of(700000);
  g.enforced_power_limit_mw = Reading<unsigned>::of(700000);
  g.fan_speed_pct = Reading<unsigned>::fail(ReadStatus::not_supported, 3);
  g.pstate = Reading<unsigned>::of(0);
  g.clocks_graphics_mhz = Reading<unsigned>::of(345);
  g.clocks_sm_mhz = Reading<unsigned>::of(345);
  g.clocks_memory_mhz = Reading<unsigned>::of(3201);
  g.clocks_video_mhz = Reading<unsigned>::of(765);
  g.clocks_event_reasons_active = Reading<std::uint64_t>::of(0x1);
  g.violation_power_ns = Reading<std::uint64_t>::of(0);
  g.violation_sw_thermal_ns = Reading<std::uint64_t>::of(0);
  g.violation_hw_thermal_ns = Reading<std::uint64_t>::of(0);
  g.violation_hw_power_brake_ns = Reading<std::uint64_t>::of(0);
  g.ecc_mode_current = Reading<bool>::of(true);
  g.ecc_mode_pending = Reading<bool>::of(true);
  g.ecc_corrected_volatile = Reading<std::uint64_t>::of(0);
  g.ecc_uncorrected_volatile = Reading<std::uint64_t>::of(0);
  g.ecc_corrected_aggregate = Reading<std::uint64_t>::of(0);
  g.ecc_uncorrected_aggregate = Reading<std::uint64_t>::of(0);
  g.retired_pages_sbe = Reading<unsigned>::fail(ReadStatus::not_supported);
  g.retired_pages_dbe = Reading<unsigned>::fail(ReadStatus::not_supported);
  g.retired_pages_pending = Reading<bool>::fail(ReadStatus::not_supported);
  g.remapped_rows_correctable = Reading<unsigned>::of(0);
  g.remapped_rows_uncorrectable = Reading<unsigned>::of(0);
  g.remapped_rows_pending = Reading<bool>::of(false);
  g.remapped_rows_failure = Reading<bool>::of(false);
  g.pcie_link_gen_current = Reading<unsigned>::of(5);
  g.pcie_link_width_current = Reading<unsigned>::of(16);
  g.persistence_mode = Reading<bool>::of(true);
  g.compute_mode = Reading<unsigned>::of(0);
  g.display_active = Reading<bool>::of(false);
  g.mig_mode_current = Reading<unsigned>::of(0);
  g.mig_mode_pending = Reading<unsigned>::of(0);
  return g;
}

/// A snapshot holding the idle H200 and the driver facts of the capture.
inline Snapshot h200_snapshot() {
  Snapshot s;
  s.time_unix_ns = 1'783'116'646'109'000'000;
  s.monotonic_ns = 1'000'000'000;
  s.driver.loaded = true;
  s.driver.driver_version = Reading<std::string>::of("590.48.01");
  s.driver.device_count = Reading<unsigned>::of(1);
  s.gpus.push_back(h200_idle());
  s.host.hostname = "gpu-node-01";
  return s;
}

/// Add a compute process as in the H200 load capture.
inline GpuProcessSample gpu_process(std::uint32_t pid, std::string name, std::uint64_t mib,
                                    unsigned gpu = 0) {
  GpuProcessSample p;
  p.gpu_index = gpu;
  p.pid = pid;
  p.type = 'C';
  p.process_name = Reading<std::string>::of(std::move(name));
  p.used_memory_bytes = Reading<std::uint64_t>::of(mib * kMiB + 4096);
  p.sm_util_pct = Reading<unsigned>::fail(ReadStatus::not_available);
  p.mem_util_pct = Reading<unsigned>::fail(ReadStatus::not_available);
  p.enc_util_pct = Reading<unsigned>::fail(ReadStatus::not_available);
  p.dec_util_pct = Reading<unsigned>::fail(ReadStatus::not_available);
  return p;
}

/// The capture file's text.
inline std::string read_capture(const std::string& file) {
  std::ifstream in(std::string(TRAINMON_SOURCE_DIR) + "/tests/captures/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The capture's `--query-gpu` CSV of `state` ("idle" / "load") as header name -> value text.
/// Header names keep their unit ("memory.used [MiB]").
inline std::map<std::string, std::string> capture_query_gpu(const std::string& text,
                                                            const std::string& state) {
  std::map<std::string, std::string> out;
  const auto at = text.find("# " + state + " :: query-gpu (csv");
  if (at == std::string::npos) return out;
  std::istringstream in(text.substr(at));
  std::string line, header, values;
  for (int i = 0; i < 3; ++i) std::getline(in, line);  // section title, command, rule
  std::getline(in, header);
  std::getline(in, values);
  auto split = [](const std::string& s) {
    std::vector<std::string> v;
    std::size_t start = 0;
    while (true) {
      auto p = s.find(", ", start);
      v.push_back(s.substr(start, p - start));
      if (p == std::string::npos) break;
      start = p + 2;
    }
    return v;
  };
  auto h = split(header);
  auto v = split(values);
  for (std::size_t i = 0; i < h.size() && i < v.size(); ++i) out[h[i]] = v[i];
  return out;
}

}  // namespace trainmon::testing
