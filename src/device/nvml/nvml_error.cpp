// SPDX-License-Identifier: Apache-2.0
#include "device/nvml/nvml_error.h"

#include "device/nvml/nvml_api.h"

namespace trainmon::nvml {

namespace {

struct CodeInfo {
  int code;
  std::string_view name;
  std::string_view sentence;
};

// Names and values from nvml.h (NVML-NOTES §6.2); sentences are ours.
constexpr CodeInfo kCodes[] = {
    {NVML_SUCCESS, "NVML_SUCCESS", "the call succeeded"},
    {NVML_ERROR_UNINITIALIZED, "NVML_ERROR_UNINITIALIZED", "NVML was not initialised"},
    {NVML_ERROR_INVALID_ARGUMENT, "NVML_ERROR_INVALID_ARGUMENT", "NVML rejected an argument"},
    {NVML_ERROR_NOT_SUPPORTED, "NVML_ERROR_NOT_SUPPORTED",
     "this device or driver does not support the query"},
    {NVML_ERROR_NO_PERMISSION, "NVML_ERROR_NO_PERMISSION", "the query needs more privileges (root)"},
    {NVML_ERROR_ALREADY_INITIALIZED, "NVML_ERROR_ALREADY_INITIALIZED", "NVML was already initialised"},
    {NVML_ERROR_NOT_FOUND, "NVML_ERROR_NOT_FOUND", "nothing was found (no samples, no such process)"},
    {NVML_ERROR_INSUFFICIENT_SIZE, "NVML_ERROR_INSUFFICIENT_SIZE", "the buffer was too small"},
    {NVML_ERROR_INSUFFICIENT_POWER, "NVML_ERROR_INSUFFICIENT_POWER",
     "a power connector is not attached or the supply is insufficient"},
    {NVML_ERROR_DRIVER_NOT_LOADED, "NVML_ERROR_DRIVER_NOT_LOADED", "the NVIDIA kernel driver is not loaded"},
    {NVML_ERROR_TIMEOUT, "NVML_ERROR_TIMEOUT", "the driver timed out"},
    {NVML_ERROR_IRQ_ISSUE, "NVML_ERROR_IRQ_ISSUE", "the kernel detected an interrupt problem with the GPU"},
    {NVML_ERROR_LIBRARY_NOT_FOUND, "NVML_ERROR_LIBRARY_NOT_FOUND",
     "NVML could not find a shared library it needs (the CUDA stub library answers this)"},
    {NVML_ERROR_FUNCTION_NOT_FOUND, "NVML_ERROR_FUNCTION_NOT_FOUND",
     "the loaded driver does not provide this function (driver too old)"},
    {NVML_ERROR_CORRUPTED_INFOROM, "NVML_ERROR_CORRUPTED_INFOROM", "the GPU's infoROM is corrupted"},
    {NVML_ERROR_GPU_IS_LOST, "NVML_ERROR_GPU_IS_LOST",
     "the GPU has fallen off the bus or is otherwise inaccessible"},
    {NVML_ERROR_RESET_REQUIRED, "NVML_ERROR_RESET_REQUIRED",
     "the GPU needs a reset before it can be used again"},
    {NVML_ERROR_OPERATING_SYSTEM, "NVML_ERROR_OPERATING_SYSTEM", "the operating system blocked the call"},
    {NVML_ERROR_LIB_RM_VERSION_MISMATCH, "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
     "the NVML library and the kernel driver versions differ (reload the nvidia module or reboot)"},
    {NVML_ERROR_IN_USE, "NVML_ERROR_IN_USE", "the GPU is in use"},
    {NVML_ERROR_MEMORY, "NVML_ERROR_MEMORY", "NVML ran out of memory"},
    {NVML_ERROR_NO_DATA, "NVML_ERROR_NO_DATA", "no data"},
    {NVML_ERROR_VGPU_ECC_NOT_SUPPORTED, "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED",
     "ECC is not supported on this vGPU"},
    {NVML_ERROR_INSUFFICIENT_RESOURCES, "NVML_ERROR_INSUFFICIENT_RESOURCES", "not enough resources"},
    {NVML_ERROR_FREQ_NOT_SUPPORTED, "NVML_ERROR_FREQ_NOT_SUPPORTED", "the frequency is not supported"},
    {NVML_ERROR_ARGUMENT_VERSION_MISMATCH, "NVML_ERROR_ARGUMENT_VERSION_MISMATCH",
     "the driver does not accept this structure version"},
    {NVML_ERROR_DEPRECATED, "NVML_ERROR_DEPRECATED", "the function is deprecated"},
    {NVML_ERROR_NOT_READY, "NVML_ERROR_NOT_READY", "the system is not ready"},
    {NVML_ERROR_GPU_NOT_FOUND, "NVML_ERROR_GPU_NOT_FOUND", "the GPU was not found"},
    {NVML_ERROR_INVALID_STATE, "NVML_ERROR_INVALID_STATE", "the resource is in an invalid state"},
    {NVML_ERROR_RESET_TYPE_NOT_SUPPORTED, "NVML_ERROR_RESET_TYPE_NOT_SUPPORTED",
     "the reset type is not supported"},
    {NVML_ERROR_UNKNOWN, "NVML_ERROR_UNKNOWN", "the driver reported an unknown error"},
};

const CodeInfo* find(int code) noexcept {
  for (const auto& c : kCodes) {
    if (c.code == code) return &c;
  }
  return nullptr;
}

}  // namespace

std::string_view nvml_error_name(int code) noexcept {
  const CodeInfo* c = find(code);
  return c ? c->name : std::string_view{};
}

std::string nvml_error_name_or_number(int code) {
  const CodeInfo* c = find(code);
  if (c) return std::string(c->name);
  return "NVML_ERROR_(" + std::to_string(code) + ")";
}

std::string_view nvml_error_sentence(int code) noexcept {
  const CodeInfo* c = find(code);
  return c ? c->sentence : std::string_view{"the driver returned an undocumented error code"};
}

ReadStatus nvml_read_status(int code) noexcept {
  switch (code) {
    case NVML_SUCCESS: return ReadStatus::ok;
    case NVML_ERROR_NOT_SUPPORTED: return ReadStatus::not_supported;
    case NVML_ERROR_NO_PERMISSION: return ReadStatus::no_permission;
    case NVML_ERROR_GPU_IS_LOST:
    case NVML_ERROR_RESET_REQUIRED: return ReadStatus::gpu_lost;
    case NVML_ERROR_TIMEOUT: return ReadStatus::timeout;
    case NVML_ERROR_FUNCTION_NOT_FOUND: return ReadStatus::missing_symbol;
    default: return ReadStatus::failed;
  }
}

bool nvml_device_fatal(int code) noexcept {
  return code == NVML_ERROR_GPU_IS_LOST || code == NVML_ERROR_RESET_REQUIRED;
}

Error nvml_error(int code, std::string_view what) {
  Error e;
  e.domain = ErrorDomain::nvml;
  e.code = code;
  e.name = nvml_error_name_or_number(code);
  e.message = std::string(what) + ": " + e.name + " (" + std::string(nvml_error_sentence(code)) + ")";
  return e;
}

}  // namespace trainmon::nvml
