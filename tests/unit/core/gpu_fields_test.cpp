// SPDX-License-Identifier: Apache-2.0
// The GPU field registry (core/gpu_fields.h) and the outputs derived from it: the stored column
// order (a database format), the alert metrics, the dcgm families, the nvidia-smi names.
#include "trainmon/core/gpu_fields.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "trainmon/alerts/rules.h"
#include "trainmon/export/query_fields.h"
#include "trainmon/store/chunk_codec.h"
#include "trainmon/store/series_fields.h"

namespace trainmon {
namespace {

// The gpu series' columns as stored before the registry existed. Append-only: a new stored row
// goes at the end of this list, never in between.
constexpr const char* kStoredGpuColumns =
    "responsive memory_total_bytes memory_reserved_bytes memory_used_bytes memory_free_bytes bar1_used_bytes "
    "bar1_free_bytes utilization_gpu_pct utilization_memory_pct utilization_encoder_pct "
    "utilization_decoder_pct "
    "utilization_jpeg_pct utilization_ofa_pct temperature_gpu_c temperature_memory_c power_draw_mw "
    "power_draw_instant_mw power_limit_mw enforced_power_limit_mw total_energy_mj fan_speed_pct pstate "
    "clocks_graphics_mhz clocks_sm_mhz clocks_memory_mhz clocks_video_mhz clocks_event_reasons_active "
    "violation_power_ns violation_thermal_ns violation_sw_thermal_ns violation_hw_thermal_ns "
    "violation_hw_power_brake_ns ecc_mode_current ecc_mode_pending ecc_corrected_volatile "
    "ecc_uncorrected_volatile ecc_corrected_aggregate ecc_uncorrected_aggregate retired_pages_sbe "
    "retired_pages_dbe retired_pages_pending remapped_rows_correctable remapped_rows_uncorrectable "
    "remapped_rows_pending remapped_rows_failure pcie_link_gen_current pcie_link_width_current pcie_rx_kib_s "
    "pcie_tx_kib_s pcie_replay_count persistence_mode compute_mode display_active mig_mode_current "
    "mig_mode_pending gpm_sm_util_pct gpm_sm_occupancy_pct gpm_tensor_util_pct gpm_dram_bw_util_pct "
    "gpm_pcie_tx_mib_s gpm_pcie_rx_mib_s gpm_nvlink_tx_mib_s gpm_nvlink_rx_mib_s temperature_slowdown_c "
    "clocks_max_sm_mhz pcie_link_gen_max pcie_link_width_max device_state processes_unknown_nvml_code "
    "gpm_graphics_util_pct nvlink_data_kib_s";

TEST(GpuFields, StoredColumnOrderIsAppendOnly) {
  std::istringstream in(kStoredGpuColumns);
  std::vector<std::string> want;
  for (std::string w; in >> w;) want.push_back(w);
  const auto cols = store::fields_of(store::SeriesKind::gpu);
  ASSERT_GE(cols.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(cols[i].name, want[i]) << "column " << i;
  for (const auto& c : cols)
    EXPECT_EQ(c.scale, c.name.starts_with("gpm_") || c.name == "nvlink_data_kib_s" ? 100 : 1);
}

TEST(GpuFields, NamesAreUniquePerKind) {
  std::set<std::string_view> keys, store, nvsmi, dcgm, alert, prom;
  for (const auto& f : gpu_fields::kGpuFields) {
    ASSERT_NE(f.read, nullptr) << f.key;
    EXPECT_TRUE(keys.insert(f.key).second) << f.key;
    if (!f.store.empty()) {
      EXPECT_TRUE(store.insert(f.store).second) << f.store;
    }
    if (!f.nvsmi.empty()) {
      EXPECT_TRUE(nvsmi.insert(f.nvsmi).second) << f.nvsmi;
    }
    if (!f.dcgm.empty()) {
      EXPECT_TRUE(dcgm.insert(f.dcgm).second) << f.dcgm;
    }
    if (!f.alert.empty()) {
      EXPECT_TRUE(alert.insert(f.alert).second) << f.alert;
    }
    if (!f.prom.empty()) {
      EXPECT_TRUE(prom.insert(f.prom).second) << f.prom;
    }
    if (!f.dcgm.empty()) {
      EXPECT_TRUE(f.dcgm.starts_with("DCGM_FI_")) << f.dcgm;
      EXPECT_FALSE(f.dcgm_help.empty()) << f.dcgm;
    }
    if (!f.alert.empty()) {
      EXPECT_GE(f.alert_order, 0) << f.alert;
    }
  }
}

// Every nvidia-smi name in the registry is one `trainmon query --query-gpu` accepts.
TEST(GpuFields, NvidiaSmiNamesAreQueryFields) {
  for (const auto& f : gpu_fields::kGpuFields)
    if (!f.nvsmi.empty()) {
      EXPECT_NE(exp::find_gpu_field(f.nvsmi), nullptr) << f.nvsmi;
    }
}

GpuSample sample() {
  GpuSample g;
  g.responsive = Reading<bool>::of(true);
  g.utilization_gpu_pct = Reading<unsigned>::of(87);
  g.memory_used_bytes = Reading<std::uint64_t>::of(3ull << 30);
  g.power_draw_mw = Reading<unsigned>::of(251'500);
  g.gpm_sm_util_pct = Reading<double>::of(42.125);
  g.retired_pages_pending = Reading<bool>::of(true);
  return g;
}

TEST(GpuFields, StoreRowFromRegistry) {
  const GpuSample g = sample();
  const auto row = store::gpu_row(g);
  const auto at = [&](std::string_view name) {
    return row.at(*store::field_index(store::SeriesKind::gpu, name));
  };
  EXPECT_EQ(row.size(), store::fields_of(store::SeriesKind::gpu).size());
  EXPECT_EQ(at("responsive"), 1);
  EXPECT_EQ(at("device_state"), store::kDeviceStateOk);
  EXPECT_EQ(at("utilization_gpu_pct"), 87);
  EXPECT_EQ(at("memory_used_bytes"), std::int64_t{3} << 30);
  EXPECT_EQ(at("gpm_sm_util_pct"), 4213);  // x 100, rounded
  EXPECT_EQ(at("retired_pages_pending"), 1);
  EXPECT_EQ(at("temperature_gpu_c"), store::kNull);  // not collected
  EXPECT_EQ(at("clocks_max_sm_mhz"), store::kNull);  // no static info
  EXPECT_EQ(at("processes_unknown_nvml_code"), store::kNull);

  GpuSample lost;
  lost.responsive = Reading<bool>::fail(ReadStatus::gpu_lost);
  lost.process_count = Reading<unsigned>::fail(ReadStatus::failed, 4);
  const auto r2 = store::gpu_row(lost);
  EXPECT_EQ(r2[*store::field_index(store::SeriesKind::gpu, "device_state")], store::kDeviceStateLost);
  EXPECT_EQ(r2[*store::field_index(store::SeriesKind::gpu, "responsive")], 0);
  EXPECT_EQ(r2[*store::field_index(store::SeriesKind::gpu, "processes_unknown_nvml_code")], 4);
}

TEST(GpuFields, AlertMetricsFromRegistry) {
  // Every registry alert name is an alert metric of the GPU scope, with the row's unit and help.
  std::size_t from_registry = 0;
  for (const auto& m : alerts::metric_table()) {
    const auto* f = gpu_fields::find_alert(m.name);
    if (f == nullptr) continue;
    ++from_registry;
    EXPECT_EQ(m.scope, alerts::Scope::gpu) << m.name;
    EXPECT_EQ(m.unit, f->alert_unit) << m.name;
    EXPECT_EQ(m.help, f->alert_help) << m.name;
  }
  EXPECT_EQ(from_registry, gpu_fields::count_alert());
  EXPECT_EQ(alerts::metric_table().front().name, "utilization.gpu");
  const auto* used = gpu_fields::find_alert("memory.used");
  ASSERT_NE(used, nullptr);
  EXPECT_EQ(used->alert_unit, "MiB");
  const GpuSample g = sample();
  EXPECT_DOUBLE_EQ(used->read(g).d / used->alert_divisor, 3072.0);
  // The derived metrics are not one field.
  EXPECT_NE(alerts::find_metric("memory.used_pct"), nullptr);
  EXPECT_EQ(gpu_fields::find_alert("memory.used_pct"), nullptr);
  EXPECT_EQ(gpu_fields::find_alert("gpu.responsive"), nullptr);
}

TEST(GpuFields, DcgmOrderCoversEveryDcgmRow) {
  constexpr auto order = gpu_fields::dcgm_in_order();
  EXPECT_EQ(order.size(), gpu_fields::count_dcgm());
  EXPECT_EQ(order.front()->dcgm, "DCGM_FI_DEV_SM_CLOCK");
  EXPECT_EQ(order.back()->dcgm, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL");
  const GpuSample g = sample();
  const auto* p = gpu_fields::find_dcgm("DCGM_FI_DEV_POWER_USAGE");
  ASSERT_NE(p, nullptr);
  EXPECT_DOUBLE_EQ(p->read(g).d * p->dcgm_factor, 251.5);
}

}  // namespace
}  // namespace trainmon
