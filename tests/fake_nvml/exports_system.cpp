// SPDX-License-Identifier: Apache-2.0
// System-level entry points: init/shutdown, versions, error strings, process names.
#include <cstdio>
#include <cstring>
#include <string>

#include "state.h"

using fake_nvml::Call;
using fake_nvml::enter;

namespace {

/// True in the cuda_stub variant: every init fails like CUDA's stubs/libnvidia-ml.so.
bool is_stub() {
  return std::strcmp(fake_nvml::variant(), "cuda_stub") == 0;
}

int stub_init() {
  std::fprintf(
      stderr,
      "WARNING: You should always run with libnvidia-ml.so that is installed with your NVIDIA Display "
      "Driver. By default it's installed in /usr/lib and /usr/lib64. libnvidia-ml.so in GDK package is a "
      "stub library that is attached only for build purposes (e.g. machine that you build your "
      "application doesn't have to have Display Driver installed).\n");
  return NVML_ERROR_LIBRARY_NOT_FOUND;
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlInit(void) {
  return is_stub() ? stub_init() : fake_nvml::init("nvmlInit");
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlInit_v2(void) {
  return is_stub() ? stub_init() : fake_nvml::init("nvmlInit_v2");
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int /*flags*/) {
  return is_stub() ? stub_init() : fake_nvml::init("nvmlInitWithFlags");
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlShutdown(void) {
  return fake_nvml::shutdown();
}

FAKE_NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER: return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_IRQ_ISSUE: return "Interrupt request issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM: return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED: return "GPU requires restart";
    case NVML_ERROR_OPERATING_SYSTEM: return "The operating system has blocked the request.";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "RM has detected an NVML/RM version mismatch.";
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_MEMORY: return "Insufficient Memory";
    case NVML_ERROR_NO_DATA: return "No data";
    case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Ran out of critical resources, other than memory";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Version mismatch";
    case NVML_ERROR_DEPRECATED: return "Deprecated";
    case NVML_ERROR_NOT_READY: return "Not ready";
    case NVML_ERROR_GPU_NOT_FOUND: return "GPU not found";
    case NVML_ERROR_INVALID_STATE: return "Invalid state";
    default: return "Unknown Error";
  }
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  Call c = enter("nvmlSystemGetDriverVersion", nullptr, false);
  if (c.rc != NVML_SUCCESS) return c.rc;
  return fake_nvml::copy_string(c.sc->driver_version, version, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  Call c = enter("nvmlSystemGetNVMLVersion", nullptr, false);
  if (c.rc != NVML_SUCCESS) return c.rc;
  return fake_nvml::copy_string(c.sc->nvml_version, version, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* cudaDriverVersion) {
  Call c = enter("nvmlSystemGetCudaDriverVersion", nullptr, false);
  if (c.rc != NVML_SUCCESS) return c.rc;
  if (cudaDriverVersion == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *cudaDriverVersion = c.sc->cuda_version;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* cudaDriverVersion) {
  Call c = enter("nvmlSystemGetCudaDriverVersion_v2", nullptr, false);
  if (c.rc != NVML_SUCCESS) return c.rc;
  if (cudaDriverVersion == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *cudaDriverVersion = c.sc->cuda_version;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char* name, unsigned int length) {
  Call c = enter("nvmlSystemGetProcessName", nullptr, false);
  if (c.rc != NVML_SUCCESS) return c.rc;
  // Scenario processes first (their pids may not exist on this host), then the host's /proc.
  for (const auto& p : c.sc->processes)
    if (p.pid == pid && p.alive(c.t)) {
      if (name == nullptr || length == 0) return NVML_ERROR_INVALID_ARGUMENT;
      std::snprintf(name, length, "%s", p.name.c_str());  // the driver truncates silently
      return NVML_SUCCESS;
    }
  const std::string path = "/proc/" + std::to_string(pid) + "/comm";
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return NVML_ERROR_NOT_FOUND;
  char buf[256] = {};
  const bool ok = std::fgets(buf, sizeof buf, f) != nullptr;
  std::fclose(f);
  if (!ok) return NVML_ERROR_NOT_FOUND;
  buf[std::strcspn(buf, "\n")] = '\0';
  if (name == nullptr || length == 0) return NVML_ERROR_INVALID_ARGUMENT;
  std::snprintf(name, length, "%s", buf);
  return NVML_SUCCESS;
}
