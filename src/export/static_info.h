// SPDX-License-Identifier: Apache-2.0
// The static facts of a sampled GPU, for the nvidia-smi-compatible writers.
#pragma once

#include "trainmon/core/gpu_sample.h"

namespace trainmon::exp {

/// `g.info`, or an empty GpuStaticInfo (every field unset) when the sample has none: the writers
/// then print nvidia-smi's "not available" text for each static field. Never null.
inline const GpuStaticInfo& info_of(const GpuSample& g) {
  static const GpuStaticInfo empty;
  return g.info ? *g.info : empty;
}

}  // namespace trainmon::exp
