// SPDX-License-Identifier: Apache-2.0
// The training loop's charts of a report, computed on the report's time grid (pure; tests feed it
// synthetic TrainSeries): the job's throughput, its step time split into data wait and the rest, and
// each rank's step time.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "report/reduce.h"
#include "trainmon/diagnose/train_series.h"

namespace trainmon::report {

/// Per bucket of the grid (NaN: nothing to draw there).
struct TrainChartData {
  /// The job's samples/s: each rank's samples over its step time in the bucket, summed over the ranks.
  /// A bucket in which a rank ended no step, between its first and last step, lies inside a step
  /// that ended later: the rank counts with that step's rate (samples per step of the next bucket
  /// with a step, over the longest step there), so a step longer than a bucket does not make the
  /// sum dip, and a stall of 40 s shows as 40 s at that step's rate.
  std::vector<float> samples_per_s;
  /// Mean per step over every rank's steps that ended in the bucket: data wait, and the rest (compute +
  /// synchronisation); their sum is the mean step time. data_wait_s is all NaN when no rank sent its
  /// data wait (then step_s holds the whole step time and compute_s is NaN). A bucket in which no rank
  /// ended a step, inside the job's steps, holds the step in progress: the longest of the steps that
  /// ended next (per rank; the longest rank's), and its longest data wait as its data part, so a
  /// stall is drawn as a plateau at its length (no line is drawn across buckets).
  std::vector<float> data_wait_s, compute_s, step_s;
  /// Each rank's mean step time per bucket (a bucket inside a step: that step's length, as above), labelled
  /// "rank 0" / "pid 4242" (with the host when the job spans several), in rank order.
  std::vector<std::pair<std::string, std::vector<float>>> rank_step_s;
  std::vector<int> gpus;  ///< NVML indices the ranks use (known ones), ascending
};

/// The chart data of `train` on `grid` (rows with grid.edges[i] < t <= grid.edges[i + 1] fall in
/// bucket i; others are left out).
TrainChartData train_chart_data(const Grid& grid, const diagnose::TrainSeries& train);

}  // namespace trainmon::report
