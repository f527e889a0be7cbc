// SPDX-License-Identifier: Apache-2.0
#include "trainmon/core/reading.h"

namespace trainmon {

std::string_view read_status_name(ReadStatus s) noexcept {
  switch (s) {
    case ReadStatus::ok: return "ok";
    case ReadStatus::not_collected: return "not_collected";
    case ReadStatus::not_supported: return "not_supported";
    case ReadStatus::no_permission: return "no_permission";
    case ReadStatus::not_available: return "not_available";
    case ReadStatus::invalid_value: return "invalid_value";
    case ReadStatus::gpu_lost: return "gpu_lost";
    case ReadStatus::timeout: return "timeout";
    case ReadStatus::missing_symbol: return "missing_symbol";
    case ReadStatus::failed: return "failed";
  }
  return "unknown";
}

}  // namespace trainmon
