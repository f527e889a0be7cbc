// SPDX-License-Identifier: Apache-2.0
// "processes unknown: <reason>": what every view shows for a GPU whose process lists failed this tick
// (GpuSample::process_count), instead of an empty list next to the memory those processes hold.
#pragma once

#include <string>

#include "trainmon/core/reading.h"

namespace trainmon::exp {

/// Why the processes are unknown, from GpuSample::process_count (its status and NVML code): e.g.
/// "NVML_ERROR_NO_PERMISSION: the query needs more privileges (root)", "the list kept changing size
/// while it was read (NVML_ERROR_INSUFFICIENT_SIZE on every retry)", "the GPU is not responding".
/// Empty when the lists were read, or were not asked for (not_collected).
std::string processes_unknown_reason(const Reading<unsigned>& process_count);
/// "processes unknown: " + processes_unknown_reason(), or "" when that is empty.
std::string processes_unknown_text(const Reading<unsigned>& process_count);

}  // namespace trainmon::exp
