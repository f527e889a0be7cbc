// SPDX-License-Identifier: Apache-2.0
// load_run_series: the offline path of the diagnosis (docs/diagnosis.md): a recorded run read back
// from the store into the same RunSeries the live path builds with diagnose::append_snapshot.
#pragma once

#include <cstdint>

#include "trainmon/core/error.h"
#include "trainmon/diagnose/series.h"
#include "trainmon/store/store.h"

namespace trainmon::store {

/// Every tick of run `run_id` (host rows give the timeline), its GPUs, GPU processes, the job's
/// processes, NVML events, training events and JobFacts (exit, signal, OOM verdict, the GPUs the
/// job used, root pid). Times become seconds since the run's start. An aggregated (downsampled)
/// chunk contributes its mean row.
Expected<diagnose::RunSeries> load_run_series(Store& store, std::int64_t run_id);

}  // namespace trainmon::store
