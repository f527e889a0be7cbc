// SPDX-License-Identifier: Apache-2.0
// Every value of a scenario read exactly, through open_nvml_backend() and the fake driver.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "nvml_test_util.h"

namespace trainmon {
namespace {

using testing::device_scenario;
using testing::open_fake;
using testing::tick;

template <class T>
void expect_ok(const Reading<T>& r, const T& v, const char* what) {
  EXPECT_EQ(r.status, ReadStatus::ok)
      << what << " status " << read_status_name(r.status) << " code " << r.code;
  EXPECT_EQ(r.value, v) << what;
}
#define EXPECT_READ(field, expected) expect_ok(field, decltype((field).value)(expected), #field)

TEST(NvmlBackendValues, DriverInfo) {
  auto b = open_fake(device_scenario("exact-2gpu.json"));
  DriverInfo d = b->driver_info();
  EXPECT_TRUE(d.loaded) << d.error;
  EXPECT_EQ(d.error, "");
  EXPECT_EQ(d.library_path, TRAINMON_FAKE_NVML_PATH);
  EXPECT_READ(d.driver_version, std::string("590.48.01"));
  EXPECT_READ(d.nvml_version, std::string("13.590.48.01"));
  EXPECT_READ(d.cuda_driver_version, 13010);
  EXPECT_READ(d.device_count, 2u);
  EXPECT_EQ(b->device_count(), 2u);
}

TEST(NvmlBackendValues, StaticInfoOfBothGpus) {
  auto b = open_fake(device_scenario("exact-2gpu.json"));
  auto t = tick(*b);
  ASSERT_EQ(t.gpus.size(), 2u);
  ASSERT_NE(t.gpus[0].info, nullptr);
  const GpuStaticInfo& i = *t.gpus[0].info;
  EXPECT_EQ(i.index, 0u);
  EXPECT_READ(i.name, std::string("NVIDIA H100 80GB HBM3"));
  EXPECT_READ(i.uuid, std::string("GPU-6f8e2a10-0000-4000-8000-000000000001"));
  EXPECT_READ(i.serial, std::string("1650123000001"));
  EXPECT_READ(i.vbios_version, std::string("96.00.99.00.01"));
  EXPECT_READ(i.pci_bus_id, std::string("00000000:18:00.0"));
  EXPECT_READ(i.pci_domain, 0u);
  EXPECT_READ(i.pci_bus, 24u);
  EXPECT_READ(i.pci_device, 0u);
  EXPECT_READ(i.pci_device_id, 0x233010DEu);
  EXPECT_READ(i.pci_sub_device_id, 0x16C110DEu);
  EXPECT_READ(i.compute_cap_major, 9);
  EXPECT_READ(i.compute_cap_minor, 0);
  EXPECT_READ(i.brand, 14u);        // NVML_BRAND_NVIDIA
  EXPECT_READ(i.architecture, 9u);  // NVML_DEVICE_ARCH_HOPPER
  EXPECT_READ(i.pcie_link_gen_max, 5u);
  EXPECT_READ(i.pcie_link_gen_gpumax, 5u);
  EXPECT_READ(i.pcie_link_width_max, 16u);
  EXPECT_READ(i.memory_total_bytes, 85520809984ull);
  EXPECT_READ(i.bar1_total_bytes, 137438953472ull);
  EXPECT_READ(i.power_default_limit_mw, 700000u);
  EXPECT_READ(i.power_min_limit_mw, 200000u);
  EXPECT_READ(i.power_max_limit_mw, 700000u);
  EXPECT_READ(i.temperature_shutdown_c, 92u);
  EXPECT_READ(i.temperature_slowdown_c, 89u);
  EXPECT_READ(i.temperature_gpu_max_c, 87u);
  EXPECT_READ(i.temperature_mem_max_c, 95u);
  EXPECT_READ(i.clocks_max_graphics_mhz, 1980u);
  EXPECT_READ(i.clocks_max_sm_mhz, 1980u);
  EXPECT_READ(i.clocks_max_memory_mhz, 2619u);
  EXPECT_READ(i.clocks_event_reasons_supported, 0x1FFull);
  EXPECT_READ(i.num_fans, 0u);
  EXPECT_READ(i.gpm_supported, true);

  const GpuStaticInfo& j = *t.gpus[1].info;
  EXPECT_EQ(j.index, 1u);
  EXPECT_READ(j.name, std::string("NVIDIA A100-SXM4-40GB"));
  EXPECT_READ(j.pci_bus_id, std::string("00000000:3B:00.0"));
  EXPECT_READ(j.brand, 2u);         // TESLA
  EXPECT_READ(j.architecture, 7u);  // NVML_DEVICE_ARCH_AMPERE
  EXPECT_READ(j.compute_cap_major, 8);
  EXPECT_EQ(j.temperature_gpu_max_c.status, ReadStatus::not_supported);
  EXPECT_EQ(j.clocks_event_reasons_supported.status, ReadStatus::not_supported);
  EXPECT_READ(j.gpm_supported, false);
  EXPECT_READ(j.num_fans, 1u);
}

TEST(NvmlBackendValues, DynamicValuesOfGpu0) {
  auto b = open_fake(device_scenario("exact-2gpu.json"));
  auto t = tick(*b);
  ASSERT_EQ(t.gpus.size(), 2u);
  const GpuSample& s = t.gpus[0];
  EXPECT_EQ(s.index, 0u);
  EXPECT_READ(s.responsive, true);
  EXPECT_READ(s.memory_total_bytes, 85520809984ull);
  EXPECT_READ(s.memory_reserved_bytes, 564133888ull);
  EXPECT_READ(s.memory_used_bytes, 65498251264ull);
  EXPECT_READ(s.memory_free_bytes, 85520809984ull - 65498251264ull - 564133888ull);
  EXPECT_READ(s.bar1_used_bytes, 5242880ull);
  EXPECT_READ(s.bar1_free_bytes, 137438953472ull - 5242880ull);
  EXPECT_READ(s.utilization_gpu_pct, 93u);
  EXPECT_READ(s.utilization_memory_pct, 48u);
  EXPECT_READ(s.utilization_encoder_pct, 3u);
  EXPECT_READ(s.utilization_decoder_pct, 4u);
  EXPECT_READ(s.utilization_jpeg_pct, 5u);
  EXPECT_READ(s.utilization_ofa_pct, 6u);
  ASSERT_FALSE(s.gpu_utilization_samples.empty());
  for (const auto& v : s.gpu_utilization_samples) EXPECT_EQ(v.value, 93.0);
  ASSERT_FALSE(s.power_samples.empty());
  for (const auto& v : s.power_samples) EXPECT_EQ(v.value, 560000.0);
  EXPECT_READ(s.temperature_gpu_c, 64u);
  EXPECT_READ(s.temperature_memory_c, 72u);
  EXPECT_READ(s.power_draw_mw, 560000u);
  EXPECT_READ(s.power_draw_instant_mw, 560000u);
  EXPECT_READ(s.power_limit_mw, 650000u);
  EXPECT_READ(s.enforced_power_limit_mw, 640000u);
  EXPECT_READ(s.total_energy_mj, 123456789ull);
  EXPECT_EQ(s.fan_speed_pct.status, ReadStatus::not_supported);  // fan-less board
  EXPECT_EQ(s.fan_speed_pct.code, 3);
  EXPECT_READ(s.pstate, 2u);
  EXPECT_READ(s.clocks_graphics_mhz, 1755u);
  EXPECT_READ(s.clocks_sm_mhz, 1755u);
  EXPECT_READ(s.clocks_memory_mhz, 2619u);
  EXPECT_READ(s.clocks_video_mhz, 1545u);
  EXPECT_READ(s.clocks_event_reasons_active, 0x4ull);
  EXPECT_READ(s.violation_power_ns, 1000ull);
  EXPECT_READ(s.violation_thermal_ns, 2000ull);
  EXPECT_READ(s.violation_sw_thermal_ns, 3000ull);
  EXPECT_READ(s.violation_hw_thermal_ns, 4000ull);
  EXPECT_READ(s.violation_hw_power_brake_ns, 5000ull);
  EXPECT_READ(s.ecc_mode_current, true);
  EXPECT_READ(s.ecc_mode_pending, false);
  EXPECT_READ(s.ecc_corrected_volatile, 7ull);
  EXPECT_READ(s.ecc_uncorrected_volatile, 1ull);
  EXPECT_READ(s.ecc_corrected_aggregate, 70ull);
  EXPECT_READ(s.ecc_uncorrected_aggregate, 2ull);
  EXPECT_READ(s.retired_pages_sbe, 3u);
  EXPECT_READ(s.retired_pages_dbe, 1u);
  EXPECT_READ(s.retired_pages_pending, true);
  EXPECT_READ(s.remapped_rows_correctable, 5u);
  EXPECT_READ(s.remapped_rows_uncorrectable, 0u);
  EXPECT_READ(s.remapped_rows_pending, false);
  EXPECT_READ(s.remapped_rows_failure, false);
  EXPECT_READ(s.pcie_link_gen_current, 4u);
  EXPECT_READ(s.pcie_link_width_current, 8u);
  EXPECT_READ(s.pcie_rx_kib_s, 850000u);
  EXPECT_READ(s.pcie_tx_kib_s, 320000u);
  EXPECT_READ(s.pcie_replay_count, 12u);
  EXPECT_READ(s.persistence_mode, true);
  EXPECT_READ(s.compute_mode, 3u);  // EXCLUSIVE_PROCESS
  EXPECT_READ(s.display_active, false);
  EXPECT_READ(s.mig_mode_current, 0u);
  EXPECT_READ(s.mig_mode_pending, 0u);
  EXPECT_TRUE(s.mig_devices.empty());
  // GPM needs two samples: the first tick has none yet
  EXPECT_EQ(s.gpm_sm_util_pct.status, ReadStatus::not_available);
}

TEST(NvmlBackendValues, GpmOnSecondTick) {
  auto b = open_fake(device_scenario("exact-2gpu.json"));
  tick(*b);
  auto t = tick(*b);
  const GpuSample& s = t.gpus[0];
  EXPECT_READ(s.gpm_graphics_util_pct, 91.0);
  EXPECT_READ(s.gpm_sm_util_pct, 88.0);
  EXPECT_READ(s.gpm_sm_occupancy_pct, 61.0);
  EXPECT_READ(s.gpm_tensor_util_pct, 52.0);
  EXPECT_READ(s.gpm_dram_bw_util_pct, 44.0);
  EXPECT_READ(s.gpm_pcie_tx_mib_s, 1200.0);
  EXPECT_READ(s.gpm_pcie_rx_mib_s, 3400.0);
  EXPECT_READ(s.gpm_nvlink_tx_mib_s, 5600.0);
  EXPECT_READ(s.gpm_nvlink_rx_mib_s, 7800.0);
  EXPECT_EQ(t.gpus[1].gpm_sm_util_pct.status, ReadStatus::not_supported);  // A100: no GPM
  EXPECT_EQ(t.gpus[1].gpm_graphics_util_pct.status, ReadStatus::not_supported);
}

TEST(NvmlBackendValues, NvlinkThroughputFromTheDataCounters) {
  // The scenario's clock runs (no frozen time): the counters grow at nvlink_tx + nvlink_rx KiB/s.
  auto b = open_fake(device_scenario("exact-2gpu.json"), std::nullopt);
  auto first = tick(*b);
  EXPECT_EQ(first.gpus[0].nvlink_data_kib_s.status, ReadStatus::not_available);  // nothing to subtract yet
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto t = tick(*b);
  ASSERT_EQ(t.gpus[0].nvlink_data_kib_s.status, ReadStatus::ok) << t.gpus[0].nvlink_data_kib_s.code;
  EXPECT_NEAR(t.gpus[0].nvlink_data_kib_s.value, 2000000.0, 2000000.0 * 0.01);
  // No NVLink on GPU 1 (no links, no counters): no value, never a 0.
  EXPECT_EQ(t.gpus[1].nvlink_data_kib_s.status, ReadStatus::not_supported);
}

TEST(NvmlBackendValues, EccCountsByLocationWithExtendedValues) {
  BackendOptions o;
  o.collect_extended = true;
  auto b = open_fake(device_scenario("exact-2gpu.json"), 30, o);
  auto t = tick(*b);
  const GpuSample& s = t.gpus[0];
  // SRAM as scripted, DRAM the rest of each total (fake driver: docs/fake-nvml.md)
  EXPECT_READ(s.ecc_volatile_by_location.sram_corrected, 3u);
  EXPECT_READ(s.ecc_volatile_by_location.dram_corrected, 4u);
  EXPECT_READ(s.ecc_volatile_by_location.sram_uncorrected, 0u);
  EXPECT_READ(s.ecc_volatile_by_location.dram_uncorrected, 1u);
  EXPECT_READ(s.ecc_aggregate_by_location.sram_corrected, 0u);
  EXPECT_READ(s.ecc_aggregate_by_location.dram_corrected, 70u);
  EXPECT_READ(s.ecc_aggregate_by_location.sram_uncorrected, 2u);
  EXPECT_READ(s.ecc_aggregate_by_location.dram_uncorrected, 0u);
  // Not asked for without collect_extended
  auto plain = open_fake(device_scenario("exact-2gpu.json"));
  EXPECT_EQ(tick(*plain).gpus[0].ecc_volatile_by_location.sram_corrected.status, ReadStatus::not_collected);
}

TEST(NvmlBackendValues, DynamicValuesOfGpu1) {
  auto b = open_fake(device_scenario("exact-2gpu.json"));
  auto t = tick(*b);
  const GpuSample& s = t.gpus[1];
  EXPECT_READ(s.responsive, true);
  EXPECT_READ(s.memory_used_bytes, 1073741824ull);
  EXPECT_READ(s.memory_reserved_bytes, 0ull);
  EXPECT_READ(s.utilization_gpu_pct, 20u);
  EXPECT_READ(s.fan_speed_pct, 35u);
  EXPECT_READ(s.temperature_gpu_c, 41u);
  EXPECT_EQ(s.temperature_memory_c.status, ReadStatus::not_supported);
  EXPECT_READ(s.power_limit_mw, 400000u);
  EXPECT_READ(s.enforced_power_limit_mw, 400000u);  // defaults to current
  EXPECT_READ(s.persistence_mode, false);
  EXPECT_READ(s.display_active, true);
  EXPECT_READ(s.compute_mode, 0u);
  EXPECT_EQ(s.ecc_mode_current.status, ReadStatus::not_supported);
  EXPECT_EQ(s.ecc_corrected_volatile.status, ReadStatus::not_supported);
}

TEST(NvmlBackendValues, HighResSamplesAreNewerThanThePreviousTick) {
  auto b = open_fake(device_scenario("exact-2gpu.json"));
  auto t1 = tick(*b);
  ASSERT_FALSE(t1.gpus[0].gpu_utilization_samples.empty());
  std::uint64_t last = t1.gpus[0].gpu_utilization_samples.back().time_us;
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // the fake samples every 1/6 s
  auto t2 = tick(*b);
  ASSERT_FALSE(t2.gpus[0].gpu_utilization_samples.empty());
  for (const auto& v : t2.gpus[0].gpu_utilization_samples) {
    EXPECT_GT(v.time_us, last);
    EXPECT_EQ(v.value, 93.0);
  }
  EXPECT_GE(t2.gpus[0].gpu_utilization_samples.size(), 2u);
}

TEST(NvmlBackendValues, ProcessesDedupedNamedAndUtilised) {
  auto b = open_fake(device_scenario("exact-2gpu.json"));
  auto t = tick(*b);
  ASSERT_EQ(t.processes.size(), 4u);
  const auto& p0 = t.processes[0];
  EXPECT_EQ(p0.gpu_index, 0u);
  EXPECT_EQ(p0.pid, 1001u);
  EXPECT_EQ(p0.type, 'C');
  EXPECT_FALSE(p0.compute_and_graphics);
  EXPECT_READ(p0.used_memory_bytes, 1073741824ull);
  EXPECT_READ(p0.process_name, std::string("python"));
  EXPECT_READ(p0.sm_util_pct, 50u);
  EXPECT_READ(p0.mem_util_pct, 20u);
  EXPECT_READ(p0.enc_util_pct, 1u);
  EXPECT_READ(p0.dec_util_pct, 2u);
  EXPECT_EQ(p0.gpu_instance_id.status, ReadStatus::not_available);  // MIG off: 0xFFFFFFFF
  EXPECT_EQ(p0.compute_instance_id.status, ReadStatus::not_available);

  const auto& p1 = t.processes[1];
  EXPECT_EQ(p1.pid, 1002u);
  EXPECT_EQ(p1.type, 'G');
  EXPECT_READ(p1.process_name, std::string("Xorg"));
  EXPECT_READ(p1.used_memory_bytes, 67108864ull);
  // no utilisation sample for an idle process: pmon's "-"
  EXPECT_EQ(p1.sm_util_pct.status, ReadStatus::not_available);
  EXPECT_EQ(p1.sm_util_pct.code, 6);  // NVML_ERROR_NOT_FOUND

  const auto& p2 = t.processes[2];
  EXPECT_EQ(p2.pid, 1003u);
  EXPECT_EQ(p2.type, 'C');
  EXPECT_TRUE(p2.compute_and_graphics);
  EXPECT_READ(p2.sm_util_pct, 10u);
  EXPECT_READ(p2.process_name, std::string("blender"));

  const auto& p3 = t.processes[3];
  EXPECT_EQ(p3.gpu_index, 1u);
  EXPECT_EQ(p3.pid, 2001u);
  EXPECT_READ(p3.sm_util_pct, 30u);
  EXPECT_READ(p3.mem_util_pct, 12u);
  EXPECT_READ(p3.process_name, std::string("train.py"));
}

TEST(NvmlBackendValues, ProcessCollectionCanBeSwitchedOff) {
  BackendOptions o;
  o.collect_processes = false;
  o.collect_pcie_throughput = false;
  o.collect_high_res_samples = false;
  o.collect_gpm = false;
  auto b = open_fake(device_scenario("exact-2gpu.json"), 30, o);
  auto t = tick(*b);
  EXPECT_TRUE(t.processes.empty());
  EXPECT_EQ(t.gpus[0].pcie_rx_kib_s.status, ReadStatus::not_collected);
  EXPECT_TRUE(t.gpus[0].gpu_utilization_samples.empty());
  EXPECT_EQ(t.gpus[0].gpm_sm_util_pct.status, ReadStatus::not_collected);
  EXPECT_READ(t.gpus[0].utilization_gpu_pct, 93u);
}

}  // namespace
}  // namespace trainmon
