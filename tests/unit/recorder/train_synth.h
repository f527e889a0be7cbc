// SPDX-License-Identifier: Apache-2.0
// A synthetic two-rank TrainSeries with figures known in advance, shared by the tests of every view
// of the training loop (summary, runs, show, report, live state file, top, /metrics).
//
// Rows every second from t = 1 to t = 10 (run clock), one per rank:
//   rank 0 on node-a, GPU 0: 10 steps of 0.1 s a row, 0.02 s data wait each, 8 samples a step;
//   rank 1 on node-a, GPU 1:  5 steps of 0.2 s a row, 0.1 s data wait each,  8 samples a step.
// Over the run: rank 0 100 steps, 800 samples, 10 s of steps, 2 s data wait -> 80 samples/s, 20 %;
// rank 1 50 steps, 400 samples, 10 s, 5 s -> 40 samples/s, 50 %. The job: 100 steps (the most),
// 1200 samples, 120 samples/s, median step 0.2 s (the slowest rank's), data wait 7 / 20 s = 35 %.
#pragma once

#include "trainmon/diagnose/train_series.h"

namespace trainmon::testing {

inline diagnose::TrainWindow train_row(double t, std::uint32_t n, double step_s, double data_s,
                                       double before) {
  diagnose::TrainWindow w;
  w.t = t;
  w.steps = n;
  w.samples = 8.0 * n;
  w.span_s = static_cast<float>(n * step_s);
  const auto s = static_cast<float>(step_s), d = static_cast<float>(data_s);
  w.step = {static_cast<float>(n * step_s), s, s, s, s, s};
  w.data = {static_cast<float>(n * data_s), d, d, d, d, d};
  w.total_steps = before + n;
  w.total_samples = 8.0 * (before + n);
  w.total_step_s = (before + n) * step_s;
  w.total_data_s = (before + n) * data_s;
  w.last_step_t = t;
  w.phase = diagnose::TrainPhase::compute;
  w.phase_t = t - 0.05;
  return w;
}

inline diagnose::TrainRank train_rank_id(int r, std::uint32_t pid) {
  diagnose::TrainRank id;
  id.rank = r;
  id.local_rank = r;
  id.world_size = 2;
  id.node_rank = 0;
  id.host = "node-a";
  id.pid = pid;
  id.gpu = r;
  id.key = diagnose::train_rank_key(r, pid);
  return id;
}

inline diagnose::TrainSeries two_rank_series() {
  diagnose::TrainSeries s;
  for (int i = 1; i <= 10; ++i) {
    diagnose::append_train_window(s, train_rank_id(0, 4100), train_row(i, 10, 0.1, 0.02, 10.0 * (i - 1)));
    diagnose::append_train_window(s, train_rank_id(1, 4101), train_row(i + 0.01, 5, 0.2, 0.1, 5.0 * (i - 1)));
  }
  return s;
}

}  // namespace trainmon::testing
