// SPDX-License-Identifier: Apache-2.0
// The build variant name, set per CMake target (FAKE_NVML_VARIANT); see docs/fake-nvml.md.
#include "state.h"

#ifndef FAKE_NVML_VARIANT
#define FAKE_NVML_VARIANT "current"
#endif

namespace fake_nvml {
const char* variant() {
  return FAKE_NVML_VARIANT;
}
}  // namespace fake_nvml
