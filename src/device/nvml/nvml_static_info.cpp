// SPDX-License-Identifier: Apache-2.0
// Static facts of one GPU, read once and re-probed only where they failed (STYLE.md item 1).
#include <algorithm>
#include <array>

#include "device/nvml/nvml_device.h"
#include "device/nvml/nvml_validate.h"

namespace trainmon::nvml {

namespace {

bool transient(ReadStatus s) {
  switch (s) {
    case ReadStatus::ok:
    case ReadStatus::not_supported:
    case ReadStatus::no_permission:
    case ReadStatus::missing_symbol:
    case ReadStatus::not_available: return false;
    default: return true;  // not_collected, failed, timeout, gpu_lost, invalid_value
  }
}

Reading<unsigned> as_u32(const unsigned& v) {
  return checked_u32(v);
}
Reading<int> as_int(const int& v) {
  return Reading<int>::of(v);
}

template <std::size_t N>
Reading<std::string> as_string(int rc, const std::array<char, N>& buf) {
  if (rc != NVML_SUCCESS) return nvml_fail<std::string>(rc);
  return checked_string(buf.data(), N);
}

}  // namespace

void read_static_info(DeviceContext& ctx, Call& call) {
  const bool full = ctx.info == nullptr || ++ctx.ticks_since_full_probe >= kFullReprobeTicks;
  if (full) ctx.ticks_since_full_probe = 0;
  GpuStaticInfo info = ctx.info ? *ctx.info : GpuStaticInfo{};
  info.index = ctx.index;
  bool attempted = false;
  auto want = [&](const auto& r) {
    bool w = !r.ok() && (full || transient(r.status));
    attempted = attempted || w;
    return w;
  };
  const NvmlApi& a = *ctx.api;
  nvmlDevice_t h = ctx.handle;

  if (want(info.name)) {
    std::array<char, NVML_DEVICE_NAME_V2_BUFFER_SIZE> buf{};
    info.name = as_string(call(a.device_get_name, h, buf.data(), unsigned{buf.size()}), buf);
  }
  if (want(info.uuid)) {
    std::array<char, NVML_DEVICE_UUID_V2_BUFFER_SIZE> buf{};
    info.uuid = as_string(call(a.device_get_uuid, h, buf.data(), unsigned{buf.size()}), buf);
  }
  if (want(info.serial)) {
    std::array<char, NVML_DEVICE_SERIAL_BUFFER_SIZE> buf{};
    info.serial = as_string(call(a.device_get_serial, h, buf.data(), unsigned{buf.size()}), buf);
  }
  if (want(info.vbios_version)) {
    std::array<char, NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE> buf{};
    info.vbios_version =
        as_string(call(a.device_get_vbios_version, h, buf.data(), unsigned{buf.size()}), buf);
  }
  if (want(info.pci_bus_id) || want(info.pci_domain) || want(info.pci_device_id)) {
    nvmlPciInfo_t pci{};
    int rc = call(a.device_get_pci_info, h, &pci);
    std::array<char, sizeof pci.busId> bus_id{};
    std::copy(std::begin(pci.busId), std::end(pci.busId), bus_id.begin());
    info.pci_bus_id = as_string(rc, bus_id);
    auto plain = [](const unsigned& v) { return Reading<unsigned>::of(v); };
    info.pci_domain = checked(rc, pci.domain, plain);
    info.pci_bus = checked(rc, pci.bus, plain);
    info.pci_device = checked(rc, pci.device, plain);
    info.pci_device_id = checked(rc, pci.pciDeviceId, plain);
    info.pci_sub_device_id = checked(rc, pci.pciSubSystemId, plain);
  }
  if (want(info.compute_cap_major) || want(info.compute_cap_minor)) {
    int major = 0, minor = 0;
    int rc = call(a.device_get_cuda_compute_capability, h, &major, &minor);
    info.compute_cap_major = checked(rc, major, as_int);
    info.compute_cap_minor = checked(rc, minor, as_int);
  }
  auto read_u32 = [&](Reading<unsigned>& field, auto fn, auto... args) {
    if (!want(field)) return;
    unsigned v = 0;
    field = checked(call(fn, h, args..., &v), v, as_u32);
  };
  read_u32(info.brand, a.device_get_brand);
  read_u32(info.architecture, a.device_get_architecture);
  read_u32(info.pcie_link_gen_max, a.device_get_max_pcie_link_generation);
  read_u32(info.pcie_link_gen_gpumax, a.device_get_gpu_max_pcie_link_generation);
  read_u32(info.pcie_link_width_max, a.device_get_max_pcie_link_width);
  read_u32(info.temperature_shutdown_c, a.device_get_temperature_threshold,
           NVML_TEMPERATURE_THRESHOLD_SHUTDOWN);
  read_u32(info.temperature_slowdown_c, a.device_get_temperature_threshold,
           NVML_TEMPERATURE_THRESHOLD_SLOWDOWN);
  read_u32(info.temperature_gpu_max_c, a.device_get_temperature_threshold,
           NVML_TEMPERATURE_THRESHOLD_GPU_MAX);
  read_u32(info.temperature_mem_max_c, a.device_get_temperature_threshold,
           NVML_TEMPERATURE_THRESHOLD_MEM_MAX);
  read_u32(info.clocks_max_graphics_mhz, a.device_get_max_clock_info, NVML_CLOCK_GRAPHICS);
  read_u32(info.clocks_max_sm_mhz, a.device_get_max_clock_info, NVML_CLOCK_SM);
  read_u32(info.clocks_max_memory_mhz, a.device_get_max_clock_info, NVML_CLOCK_MEM);
  read_u32(info.num_fans, a.device_get_num_fans);

  if (want(info.memory_total_bytes)) {
    nvmlMemory_v2_t m2{};
    m2.version = TRAINMON_NVML_STRUCT_VERSION(nvmlMemory_v2_t, 2);
    int rc = call(a.device_get_memory_info_v2, h, &m2);
    std::uint64_t total = m2.total;
    if (nvml_answer_means_try_older(rc) || rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
      nvmlMemory_t m1{};
      const int rc1 = call(a.device_get_memory_info_v1, h, &m1);
      if (rc1 != NVML_ERROR_FUNCTION_NOT_FOUND) {  // else the newer one's answer says more
        rc = rc1;
        total = m1.total;
      }
    }
    info.memory_total_bytes = checked(rc, total, [](const std::uint64_t& t) {
      return t == 0 ? Reading<std::uint64_t>::fail(ReadStatus::not_available) : checked_u64(t);
    });
  }
  if (want(info.bar1_total_bytes)) {
    nvmlBAR1Memory_t b{};
    int rc = call(a.device_get_bar1_memory_info, h, &b);
    info.bar1_total_bytes = checked(rc, b.bar1Total, checked_u64);
  }
  if (want(info.power_default_limit_mw)) {
    unsigned v = 0;
    info.power_default_limit_mw =
        checked(call(a.device_get_power_management_default_limit, h, &v), v, checked_power_limit);
  }
  if (want(info.power_min_limit_mw) || want(info.power_max_limit_mw)) {
    unsigned lo = 0, hi = 0;
    int rc = call(a.device_get_power_management_limit_constraints, h, &lo, &hi);
    info.power_min_limit_mw = checked(rc, lo, checked_power_limit);
    info.power_max_limit_mw = checked(rc, hi, checked_power_limit);
  }
  if (want(info.clocks_event_reasons_supported)) {
    unsigned long long v = 0;
    const int rc = call(a.device_get_supported_clocks_event_reasons, h, &v);
    info.clocks_event_reasons_supported = checked(rc, std::uint64_t{v}, checked_u64);
  }
  if (want(info.gpm_supported)) {
    nvmlGpmSupport_t g{};
    g.version = NVML_GPM_SUPPORT_VERSION;
    int rc = call(a.gpm_query_device_support, h, &g);
    info.gpm_supported =
        checked(rc, g.isSupportedDevice, [](const unsigned& v) { return Reading<bool>::of(v != 0); });
  }

  if (ctx.options.collect_extended) {
    auto inforom = [&](Reading<std::string>& field, auto fn, auto... args) {
      if (!want(field)) return;
      std::array<char, NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE> buf{};
      field = as_string(call(fn, h, args..., buf.data(), unsigned{buf.size()}), buf);
    };
    inforom(info.inforom_image, a.device_get_inforom_image_version);
    inforom(info.inforom_oem, a.device_get_inforom_version, NVML_INFOROM_OEM);
    inforom(info.inforom_ecc, a.device_get_inforom_version, NVML_INFOROM_ECC);
    inforom(info.inforom_power, a.device_get_inforom_version, NVML_INFOROM_POWER);
    if (want(info.inforom_valid)) {
      const int rc = call(a.device_validate_inforom, h);
      info.inforom_valid = rc == NVML_ERROR_CORRUPTED_INFOROM ? Reading<bool>::of(false)
                           : rc == NVML_SUCCESS               ? Reading<bool>::of(true)
                                                              : nvml_fail<bool>(rc);
    }
    if (want(info.driver_model_current) || want(info.driver_model_pending)) {
      unsigned cur = 0, pend = 0;
      const int rc = call(a.device_get_driver_model, h, &cur, &pend);
      auto model = [](const unsigned& v) {
        return v <= NVML_DRIVER_MCDM ? Reading<unsigned>::of(v)
                                     : Reading<unsigned>::fail(ReadStatus::invalid_value);
      };
      info.driver_model_current = checked(rc, cur, model);
      info.driver_model_pending = checked(rc, pend, model);
    }
  }
  if (ctx.options.collect_supported_clocks && want(info.supported_clocks)) {
    // Two-call pattern twice: memory clocks, then the graphics clocks of each (NVML-NOTES §6.1).
    auto list = [&](auto fn, auto... args) -> std::pair<int, std::vector<unsigned>> {
      unsigned n = 0;
      int rc = call(fn, h, args..., &n, static_cast<unsigned*>(nullptr));
      if (rc != NVML_SUCCESS && rc != NVML_ERROR_INSUFFICIENT_SIZE) return {rc, {}};
      std::vector<unsigned> v(std::min(n, 4096u) + 8);
      n = static_cast<unsigned>(v.size());
      rc = call(fn, h, args..., &n, v.data());
      v.resize(rc == NVML_SUCCESS ? std::min<std::size_t>(n, v.size()) : 0);
      return {rc, v};
    };
    auto [rc, mems] = list(a.device_get_supported_memory_clocks);
    std::vector<SupportedClocks> table;
    for (unsigned m : mems) {
      if (rc != NVML_SUCCESS) break;
      auto [grc, gr] = list(a.device_get_supported_graphics_clocks, m);
      if (grc != NVML_SUCCESS) rc = grc;
      table.push_back({m, std::move(gr)});
    }
    info.supported_clocks = rc == NVML_SUCCESS ? Reading<std::vector<SupportedClocks>>::of(std::move(table))
                                               : nvml_fail<std::vector<SupportedClocks>>(rc);
  }

  if (attempted || ctx.info == nullptr) ctx.info = std::make_shared<const GpuStaticInfo>(std::move(info));
}

}  // namespace trainmon::nvml
