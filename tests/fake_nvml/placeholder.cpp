// SPDX-License-Identifier: Apache-2.0
// Placeholder until the scenario-driven fake lands: every init fails as "driver not loaded".
#include "device/nvml/nvml_api.h"
extern "C" __attribute__((visibility("default"))) nvmlReturn_t nvmlInit_v2(void) { return NVML_ERROR_DRIVER_NOT_LOADED; }
