// SPDX-License-Identifier: Apache-2.0
#include "trainmon/core/gpu_fields.h"

namespace trainmon::gpu_fields {

Value device_state(const GpuSample& g) noexcept {
  const auto code = [](std::int64_t c) { return Value{true, false, c, static_cast<double>(c)}; };
  if (g.responsive.ok()) return code(g.responsive.value ? kDeviceStateOk : kDeviceStateFailed);
  switch (g.responsive.status) {
    case ReadStatus::not_collected: return {};
    case ReadStatus::gpu_lost: return code(kDeviceStateLost);
    case ReadStatus::timeout: return code(kDeviceStateTimeout);
    case ReadStatus::no_permission: return code(kDeviceStateNoPermission);
    default: return code(kDeviceStateFailed);
  }
}

Value responsive(const GpuSample& g) noexcept {
  const Value st = device_state(g);
  if (!st.ok) return {};
  const bool up = st.i == kDeviceStateOk;
  return {true, false, up ? 1 : 0, up ? 1.0 : 0.0};
}

Value processes_unknown_nvml_code(const GpuSample& g) noexcept {
  const auto& c = g.process_count;
  if (c.ok() || c.status == ReadStatus::not_collected || c.code == 0) return {};
  return {true, false, std::int64_t{c.code}, static_cast<double>(c.code)};
}

}  // namespace trainmon::gpu_fields
