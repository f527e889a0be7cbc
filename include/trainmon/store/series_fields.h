// SPDX-License-Identifier: Apache-2.0
// Which columns each kind of stored series has, and how a sample becomes a row of integers.
// The column order is part of the stored format: new columns are only ever appended (a chunk
// written before then simply has fewer columns). Values are integers in base units; a field whose
// `scale` is not 1 is stored multiplied by it (percent x 100 keeps two decimals).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "trainmon/core/gpu_sample.h"
#include "trainmon/core/host_sample.h"

namespace trainmon::store {

/// What one stored series describes. Numbers are stored in the database: never renumber.
enum class SeriesKind : std::uint8_t {
  gpu = 1,          ///< one GPU's dynamic metrics, one row per tick (key: gpu index)
  gpu_util_hr = 2,  ///< the driver's high-resolution utilisation samples (key: gpu index)
  host = 3,         ///< host CPU, memory, pressure, load, one row per tick
  process = 4,      ///< one host process of the watched tree (key: pid + start time)
  gpu_process = 5,  ///< one process on one GPU (key: gpu index + pid)
  train_rank = 6,   ///< one training rank's step timing, one row per tick it reported (key: rank_key)
};

/// Stable lower-case name ("gpu", "gpu_util_hr", "host", "process", "gpu_process", "train_rank").
std::string_view series_kind_name(SeriesKind kind) noexcept;
/// Inverse of series_kind_name; empty for an unknown name.
std::optional<SeriesKind> parse_series_kind(std::string_view name) noexcept;

/// One stored column: its name (with its unit) and the factor it was multiplied by when stored.
/// Values of the gpu series' `device_state` column (NULL: the sampler did not judge the device),
/// from GpuSample::responsive: it answers; it fails (responsive false, or another error); NVML
/// reports it lost (NVML_ERROR_GPU_IS_LOST); its calls hang past the per-device deadline; the
/// driver refuses this user (NVML_ERROR_NO_PERMISSION: not a fault of the GPU, never D14).
inline constexpr std::int64_t kDeviceStateOk = 0;
inline constexpr std::int64_t kDeviceStateFailed = 1;
inline constexpr std::int64_t kDeviceStateLost = 2;
inline constexpr std::int64_t kDeviceStateTimeout = 3;
inline constexpr std::int64_t kDeviceStateNoPermission = 4;

struct FieldDef {
  std::string_view name;
  double scale = 1;
};

/// The columns of a kind, in stored order.
std::span<const FieldDef> fields_of(SeriesKind kind) noexcept;
/// Index of a named column of `kind`; empty when there is none.
std::optional<std::size_t> field_index(SeriesKind kind, std::string_view name) noexcept;

/// Rows in stored order (kNull for a Reading that is not ok).
std::vector<std::int64_t> gpu_row(const GpuSample& gpu);
std::vector<std::int64_t> host_row(const HostSample& host);
std::vector<std::int64_t> process_row(const ProcessSample& process);
std::vector<std::int64_t> gpu_process_row(const GpuProcessSample& process);

}  // namespace trainmon::store
