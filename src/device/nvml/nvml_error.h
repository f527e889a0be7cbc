// SPDX-License-Identifier: Apache-2.0
// The one place where NVML return codes become trainmon statuses and errors (DESIGN.md
// "Conventions"; STYLE.md item 3). No global "last error": every call site keeps its own code.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "trainmon/core/error.h"
#include "trainmon/core/reading.h"

namespace trainmon::nvml {

/// Symbolic name of an nvmlReturn_t ("NVML_SUCCESS", "NVML_ERROR_GPU_IS_LOST"); codes NVML does not
/// define give "NVML_ERROR_<n>" style names via `nvml_error_name_or_number`.
std::string_view nvml_error_name(int code) noexcept;
/// As nvml_error_name, but an unknown code is rendered with its number ("NVML_ERROR_(1234)").
std::string nvml_error_name_or_number(int code);
/// One human sentence for the code (ours, not nvmlErrorString: works without a loaded library).
std::string_view nvml_error_sentence(int code) noexcept;
/// The ReadStatus a field gets when its NVML call returned `code`:
/// SUCCESS→ok, NOT_SUPPORTED→not_supported, NO_PERMISSION→no_permission,
/// GPU_IS_LOST/RESET_REQUIRED→gpu_lost, TIMEOUT→timeout, FUNCTION_NOT_FOUND→missing_symbol,
/// everything else→failed.
ReadStatus nvml_read_status(int code) noexcept;
/// True when the code means the whole device is gone for this tick (GPU_IS_LOST, RESET_REQUIRED).
bool nvml_device_fatal(int code) noexcept;
/// An Error in the nvml domain: `what` says which call failed ("nvmlInit_v2"), the sentence follows.
Error nvml_error(int code, std::string_view what);

/// A failed Reading for `code`, keeping the code (Reading::code) for display.
template <class T>
Reading<T> nvml_fail(int code) {
  return Reading<T>::fail(nvml_read_status(code), code);
}

}  // namespace trainmon::nvml
