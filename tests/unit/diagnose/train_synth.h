// SPDX-License-Identifier: Apache-2.0
// Synthetic training-loop timing (TrainSeries rows) for the D23-D26 tests and the benchmark: a rank
// that reports every `dt` seconds the steps it completed since, heartbeats while it completes none,
// and phases, with cumulative totals as the package sends them (docs/python.md "Step timing").
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>

#include "trainmon/diagnose/series.h"

namespace trainmon::diagnose::testing {

/// One rank's stream of rows.
struct RankFeed {
  TrainRank id;
  double steps_total = 0, samples_total = 0, step_total = 0, data_total = 0;
  double last_step = NAN;
  double carry = 0;  ///< fractional steps not reported yet

  RankFeed(int rank, std::uint32_t pid, int gpu = -1) {
    id.rank = rank;
    id.pid = pid;
    id.key = train_rank_key(rank, pid);
    id.gpu = gpu;
    id.host = "node-a";
    id.world_size = 2;
  }

  /// Rows every `dt` s over (t0, t1]: steps of `step_s` each (p90 = 1.1 x), `data_s` of it waiting
  /// for data, `batch` samples per step.
  void steps(RunSeries& s, double t0, double t1, double dt, double step_s, double data_s, double batch = 32,
             TrainPhase phase = TrainPhase::compute) {
    for (double t = t0 + dt; t <= t1 + 1e-9; t += dt) {
      carry += dt / step_s;
      const auto n = static_cast<std::uint32_t>(carry);
      carry -= n;
      TrainWindow w;
      w.t = t;
      w.steps = n;
      if (n > 0) {
        w.samples = batch * n;
        w.span_s = static_cast<float>(n * step_s);
        const auto st = static_cast<float>(step_s), d = static_cast<float>(data_s);
        w.step = {static_cast<float>(n * step_s), st * 0.95f, st * 1.2f, st, st * 1.1f, st * 1.15f};
        w.data = {static_cast<float>(n * data_s), d * 0.9f, d * 1.1f, d, d * 1.05f, d * 1.1f};
        steps_total += n;
        samples_total += batch * n;
        step_total += n * step_s;
        data_total += n * data_s;
        last_step = t;
      }
      w.total_steps = steps_total;
      w.total_samples = samples_total;
      w.total_step_s = step_total;
      w.total_data_s = data_total;
      w.last_step_t = last_step;
      w.phase = phase;
      w.phase_t = t - 0.01;
      append_train_window(s.train, id, w);
    }
  }

  /// Heartbeats every `dt` s over (t0, t1]: no step, the phase given, entered at `since`.
  void heartbeats(RunSeries& s, double t0, double t1, double dt, TrainPhase phase, double since) {
    for (double t = t0 + dt; t <= t1 + 1e-9; t += dt) {
      TrainWindow w;
      w.t = t;
      w.total_steps = steps_total;
      w.total_samples = samples_total;
      w.total_step_s = step_total;
      w.total_data_s = data_total;
      w.last_step_t = last_step;
      w.phase = phase;
      w.phase_t = since;
      append_train_window(s.train, id, w);
    }
  }
};

/// Marks `pid` as a live process of the job over [t0, t1] (the recorder's job tree).
inline void job_process(RunSeries& s, std::uint32_t pid, double t0, double t1) {
  JobProcess p;
  p.pid = pid;
  p.first_t = t0;
  p.last_t = t1;
  auto it = std::lower_bound(s.job.procs.begin(), s.job.procs.end(), pid,
                             [](const JobProcess& a, std::uint32_t v) { return a.pid < v; });
  s.job.procs.insert(it, p);
}

}  // namespace trainmon::diagnose::testing
