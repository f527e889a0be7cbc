// SPDX-License-Identifier: Apache-2.0
#include "trainmon/export/processes_unknown.h"

#include "device/nvml/nvml_api.h"
#include "device/nvml/nvml_error.h"

namespace trainmon::exp {

std::string processes_unknown_reason(const Reading<unsigned>& process_count) {
  if (process_count.ok() || process_count.status == ReadStatus::not_collected) return {};
  const int code = process_count.code;
  if (code == NVML_ERROR_INSUFFICIENT_SIZE)
    return "the list kept changing size while it was read (NVML_ERROR_INSUFFICIENT_SIZE on every retry)";
  if (code != 0)
    return nvml::nvml_error_name_or_number(code) + ": " + std::string(nvml::nvml_error_sentence(code));
  switch (process_count.status) {
    case ReadStatus::timeout: return "the GPU is not responding (its NVML calls hang)";
    case ReadStatus::gpu_lost: return "the GPU is lost";
    default:
      return "the process lists could not be read (" + std::string(read_status_name(process_count.status)) +
             ")";
  }
}

std::string processes_unknown_text(const Reading<unsigned>& process_count) {
  std::string reason = processes_unknown_reason(process_count);
  return reason.empty() ? reason : "processes unknown: " + reason;
}

}  // namespace trainmon::exp
