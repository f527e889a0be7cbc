// SPDX-License-Identifier: Apache-2.0
// The training loop's rows as the detectors D23-D26 (and the GPU-side detectors that give way to them,
// timed_rows) read them: per rank, the rows that completed steps as compact columns of doubles (a row of
// TrainSeries is 136 bytes, of which each pass over the windows needs 8 to 40), and the merged report
// times of every rank. Built once per DiagnosisEngine::run_all (detail::RunAllMemo remembers it) instead
// of every detector walking the full rows again; every figure is the row's own value, converted to
// double exactly as the detectors converted it, so each sum and median is the one they computed before.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "trainmon/diagnose/series.h"

namespace trainmon::diagnose::detail {

/// One rank's rows with steps > 0, in row order (time order).
struct RankStepColumns {
  std::vector<double> t;         ///< TrainWindow::t
  std::vector<double> steps;     ///< TrainWindow::steps (> 0)
  std::vector<double> samples;   ///< TrainWindow::samples (NaN: not said)
  std::vector<double> step_sum;  ///< TrainWindow::step.sum (NaN: not said)
  std::vector<double> data_sum;  ///< TrainWindow::data.sum (NaN: not said)
  std::vector<double> step_v;    ///< the row's p50 step time, else step_sum / steps, else NaN
  std::vector<double> data_v;    ///< the row's p50 data wait, else data_sum / steps, else NaN
  std::vector<double> comm_sum;  ///< TrainWindow::comm.sum (NaN: not said, protocol < 3)
  /// The row's mean compute per step, (step_sum - data_sum - comm_sum) / steps (data NaN read as 0),
  /// at least 0; NaN without step_sum or comm_sum. What D24 scores ranks on in a synchronous job.
  std::vector<double> compute_v;
  [[nodiscard]] std::size_t size() const noexcept { return t.size(); }
};

/// Every rank of RunSeries::train (same order) as RankStepColumns, and the sorted, distinct times of
/// their rows with steps (what rank_row_times(ranks, true) gives).
struct TrainColumns {
  std::vector<RankStepColumns> ranks;
  std::vector<double> step_times;
  std::vector<double> scratch;  ///< room for merging step_times (no meaning)
};

/// The columns of `s.train`. While a RunAllMemo for `s` lives on this thread the same object is
/// returned to every caller (built on the first call); otherwise a new one. Never null.
/// Memory: the memo's columns go back to a per-thread spare when it ends, whose vectors the next
/// build refills (their capacity kept: only the values are computed again, from the series given).
/// Building a megabyte of fresh columns every live evaluation cost more than it saved: freed, the
/// heap's top is returned to the system (glibc's trim threshold) and the next evaluation page-faults
/// it in again.
std::shared_ptr<const TrainColumns> train_columns(const RunSeries& s);
/// Builds the columns of `s.train` into `into` (what train_columns() remembers), reusing its vectors'
/// capacity; every value is replaced. O(rows of every rank).
void compute_train_columns(const RunSeries& s, TrainColumns& into);

}  // namespace trainmon::diagnose::detail
