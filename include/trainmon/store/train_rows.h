// SPDX-License-Identifier: Apache-2.0
// A training rank's timing window as a stored row of series kind train_rank (series_fields.h) and
// back. Seconds are stored as whole microseconds, times as Unix milliseconds (the row's own time
// too), a figure that is not known (NaN) as NULL.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "trainmon/diagnose/train_series.h"

namespace trainmon::store {

/// The row of `w` in fields_of(SeriesKind::train_rank) order. `run_start_unix_ms` maps the run clock
/// (TrainWindow times) to Unix milliseconds.
std::vector<std::int64_t> train_window_row(const diagnose::TrainWindow& w, std::int64_t run_start_unix_ms);

/// The window of a stored row taken at `t_ms` (Unix ms). A row with fewer columns than today's
/// (written by an older trainmon) leaves the missing figures NaN.
diagnose::TrainWindow train_window_from_row(std::int64_t t_ms, std::span<const std::int64_t> row,
                                            std::int64_t run_start_unix_ms);

}  // namespace trainmon::store
