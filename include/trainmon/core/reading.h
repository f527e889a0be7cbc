// SPDX-License-Identifier: Apache-2.0
// Reading<T>: one metric value as collected, or why there is none.
//
// A metric that a device, driver or kernel does not provide is not an error: it is a Reading whose
// status says so. Views print `[N/A]` / `[Not Supported]` the way nvidia-smi does; JSON prints `null`
// with the reason alongside. A field that failed on one tick is tried again on the next.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace trainmon {

/// Why a Reading has (or has no) value.
enum class ReadStatus : std::uint8_t {
  ok = 0,            ///< value is valid
  not_collected,     ///< nobody asked for it this tick (default state)
  not_supported,     ///< device/driver/kernel does not provide it (NVML_ERROR_NOT_SUPPORTED, missing file)
  no_permission,     ///< provided but not readable by this user (NVML_ERROR_NO_PERMISSION, EACCES)
  not_available,     ///< the source answered "no value" (an all-ones sentinel, WDDM, N/A)
  invalid_value,     ///< the source answered a value that fails a sanity check (used > total, 250 %)
  gpu_lost,          ///< the device fell off the bus (NVML_ERROR_GPU_IS_LOST) or must be reset
  timeout,           ///< the call did not return within the per-device deadline
  missing_symbol,    ///< the loaded driver does not export the entry point (old driver)
  failed,            ///< any other failure this tick; `code` holds the source's return code
};

/// Short stable name for JSON ("ok", "not_supported", ...).
std::string_view read_status_name(ReadStatus s) noexcept;

/// A value or the reason there is none.
/// `code` keeps the source's own error code (an nvmlReturn_t, or an errno for /proc readers) so the
/// original name (e.g. "NVML_ERROR_NOT_SUPPORTED") can be shown; 0 when ok.
template <class T>
struct Reading {
  T value{};
  ReadStatus status = ReadStatus::not_collected;
  std::int32_t code = 0;

  static Reading of(T v) { return Reading{std::move(v), ReadStatus::ok, 0}; }
  static Reading fail(ReadStatus s, std::int32_t c = 0) { return Reading{T{}, s, c}; }

  [[nodiscard]] bool ok() const noexcept { return status == ReadStatus::ok; }
  explicit operator bool() const noexcept { return ok(); }
  const T& operator*() const noexcept { return value; }
  const T* operator->() const noexcept { return &value; }
  /// The value when ok, else `fallback`.
  T value_or(T fallback) const { return ok() ? value : fallback; }

  friend bool operator==(const Reading&, const Reading&) = default;
};

}  // namespace trainmon
