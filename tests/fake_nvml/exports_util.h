// SPDX-License-Identifier: Apache-2.0
// Small helpers shared by the export files.
#pragma once

#include <algorithm>
#include <cmath>

#include "state.h"

/// Enters the calling entry point for `device`; returns its code early unless SUCCESS.
#define FAKE_ENTER(device)                                    \
  ::fake_nvml::Call c = ::fake_nvml::enter(__func__, device); \
  if (c.rc != NVML_SUCCESS) return c.rc

/// Rejects a null output pointer the way the driver does.
#define FAKE_NEED(ptr) \
  if ((ptr) == nullptr) return NVML_ERROR_INVALID_ARGUMENT

namespace fake_nvml {

/// A metric value rounded to the nearest non-negative integer of type T.
template <typename T>
T rounded(double v) {
  if (!(v > 0)) return T{0};
  return static_cast<T>(std::llround(v));
}

/// NVML's all-ones "not available" value of T (NVML_VALUE_NOT_AVAILABLE for 64-bit values).
template <typename T>
constexpr T all_ones() {
  return static_cast<T>(~T{0});
}

/// A metric value as the driver answers it: the rounded value, or all ones where the scenario's
/// timeline says `null` (no value).
template <typename T>
T driver_value(double v) {
  return std::isnan(v) ? all_ones<T>() : rounded<T>(v);
}

/// Writes metric `key` at the call time to *out; NOT_SUPPORTED when the scenario omits it, NVML's
/// all-ones value where its timeline is `null`.
template <typename T>
int put_metric(const Call& c, const char* key, T* out) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const auto v = c.metric(key);
  if (!v) return NVML_ERROR_NOT_SUPPORTED;
  *out = driver_value<T>(*v);
  return NVML_SUCCESS;
}

/// Like put_metric but a missing metric reads as `fallback`.
template <typename T>
int put_metric_or(const Call& c, const char* key, T* out, double fallback) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *out = rounded<T>(c.metric(key).value_or(fallback));
  return NVML_SUCCESS;
}

/// Physical-GPU-only entry points answer NOT_SUPPORTED on a MIG device handle.
inline bool on_mig_handle(const Call& c) {
  return c.mig != nullptr;
}

/// Memory in use (bytes) at the call time: the "memory_used" metric, else the sum of the live
/// processes' used_memory on that GPU (or MIG device).
unsigned long long memory_used(const Call& c);

}  // namespace fake_nvml
