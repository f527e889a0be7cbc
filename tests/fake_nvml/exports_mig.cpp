// SPDX-License-Identifier: Apache-2.0
// MIG topology: mode, MIG device handles, GPU/compute instance ids.
#include "exports_util.h"

using namespace fake_nvml;

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* currentMode,
                                                   unsigned int* pendingMode) {
  FAKE_ENTER(device);
  FAKE_NEED(currentMode);
  FAKE_NEED(pendingMode);
  if (on_mig_handle(c) || !c.dev->mig_current) return NVML_ERROR_NOT_SUPPORTED;
  *currentMode = *c.dev->mig_current;
  *pendingMode = c.dev->mig_pending.value_or(*c.dev->mig_current);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  FAKE_ENTER(device);
  FAKE_NEED(count);
  if (on_mig_handle(c) || !c.dev->mig_current) return NVML_ERROR_NOT_SUPPORTED;
  *count = c.dev->max_mig_devices;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                                  nvmlDevice_t* migDevice) {
  FAKE_ENTER(device);
  FAKE_NEED(migDevice);
  if (on_mig_handle(c)) return NVML_ERROR_INVALID_ARGUMENT;
  if (!c.dev->mig_current) return NVML_ERROR_NOT_SUPPORTED;
  if (!c.dev->mig_enabled()) return NVML_ERROR_INVALID_STATE;
  if (index >= c.dev->max_mig_devices || index >= kMaxMig) return NVML_ERROR_INVALID_ARGUMENT;
  if (index >= c.dev->mig_devices.size()) return NVML_ERROR_NOT_FOUND;  // an empty slot
  *migDevice = handle_of(c.gpu, static_cast<int>(index));
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int* isMigDevice) {
  FAKE_ENTER(device);
  FAKE_NEED(isMigDevice);
  *isMigDevice = on_mig_handle(c) ? 1 : 0;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice,
                                                                           nvmlDevice_t* device) {
  FAKE_ENTER(migDevice);
  FAKE_NEED(device);
  if (!on_mig_handle(c)) return NVML_ERROR_INVALID_ARGUMENT;
  *device = handle_of(c.gpu);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  FAKE_ENTER(device);
  FAKE_NEED(id);
  if (!on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;
  *id = c.mig->gi_id;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id) {
  FAKE_ENTER(device);
  FAKE_NEED(id);
  if (!on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;
  *id = c.mig->ci_id;
  return NVML_SUCCESS;
}
