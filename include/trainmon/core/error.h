// SPDX-License-Identifier: Apache-2.0
// Error: what crosses a module boundary when an operation fails (inside std::expected).
#pragma once

#include <cstdint>
#include <expected>
#include <string>

namespace trainmon {

/// Which kind of source produced an Error (selects how `code` is named).
enum class ErrorDomain : std::uint8_t { none, nvml, os, store, usage, internal };

/// A failure with the source's own code and name kept, plus one human sentence.
/// Example: {nvml, 9, "NVML_ERROR_DRIVER_NOT_LOADED", "the NVIDIA kernel driver is not loaded"}.
struct Error {
  ErrorDomain domain = ErrorDomain::internal;
  std::int32_t code = 0;   ///< nvmlReturn_t, errno, sqlite code ...; 0 when not applicable
  std::string name;        ///< the source's symbolic name ("NVML_ERROR_GPU_IS_LOST", "ENOENT")
  std::string message;     ///< one sentence for a human: what failed and what to check
};

template <class T>
using Expected = std::expected<T, Error>;

}  // namespace trainmon
