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
  double steps_total = 0, samples_total = 0, step_total = 0, data_total = 0, comm_total = 0;
  std::uint32_t rng = 12345;  ///< steps_v3's noise
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

  /// Protocol v3 rows every `dt` s over (t0, t1]: steps of `step_s`, of which `data_s` wait for data
  /// and `comm_s` inside collectives; `noise` varies each row's compute (step - data - comm) by up to
  /// +-noise of it (deterministic per feed).
  void steps_v3(RunSeries& s, double t0, double t1, double dt, double step_s, double data_s, double comm_s,
                double noise = 0, double batch = 32) {
    for (double t = t0 + dt; t <= t1 + 1e-9; t += dt) {
      rng = rng * 1103515245u + 12345u;
      const double u = static_cast<double>((rng >> 8) & 0xffff) / 65535.0;  // 0..1
      const double st_s = step_s + noise * (2 * u - 1) * (step_s - data_s - comm_s);
      carry += dt / st_s;
      const auto n = static_cast<std::uint32_t>(carry);
      carry -= n;
      TrainWindow w;
      w.t = t;
      w.steps = n;
      if (n > 0) {
        w.samples = batch * n;
        w.span_s = static_cast<float>(n * st_s);
        const auto st = static_cast<float>(st_s), d = static_cast<float>(data_s),
                   c = static_cast<float>(comm_s);
        w.step = {static_cast<float>(n * st_s), st * 0.95f, st * 1.2f, st, st * 1.1f, st * 1.15f};
        w.data = {static_cast<float>(n * data_s), d * 0.9f, d * 1.1f, d, d * 1.05f, d * 1.1f};
        w.comm = {static_cast<float>(n * comm_s), c * 0.9f, c * 1.1f, c, c * 1.05f, c * 1.1f};
        steps_total += n;
        samples_total += batch * n;
        step_total += n * st_s;
        data_total += n * data_s;
        comm_total += n * comm_s;
        last_step = t;
      }
      w.total_steps = steps_total;
      w.total_samples = samples_total;
      w.total_step_s = step_total;
      w.total_data_s = data_total;
      w.total_comm_s = comm_total;
      w.last_step_t = last_step;
      w.phase = TrainPhase::compute;
      w.phase_t = t - 0.01;
      append_train_window(s.train, id, w);
    }
  }

  /// One row at `t` with one step of `step_s` (a pause), `data_s` and `comm_s` of it waiting.
  void long_step(RunSeries& s, double t, double step_s, double data_s, double comm_s) {
    TrainWindow w;
    w.t = t;
    w.steps = 1;
    w.samples = 32;
    w.span_s = static_cast<float>(step_s);
    const auto st = static_cast<float>(step_s), d = static_cast<float>(data_s),
               c = static_cast<float>(comm_s);
    w.step = {st, st, st, st, st, st};
    w.data = {d, d, d, d, d, d};
    w.comm = {c, c, c, c, c, c};
    steps_total += 1;
    samples_total += 32;
    step_total += step_s;
    data_total += data_s;
    comm_total += comm_s;
    last_step = t;
    w.total_steps = steps_total;
    w.total_samples = samples_total;
    w.total_step_s = step_total;
    w.total_data_s = data_total;
    w.total_comm_s = comm_total;
    w.last_step_t = t;
    w.phase = TrainPhase::compute;
    w.phase_t = t;
    append_train_window(s.train, id, w);
  }

  /// Heartbeats every `dt` s over (t0, t1]: no step, the phase given, entered at `since`; `coll`: the
  /// collective it is inside (phase collective).
  void heartbeats(RunSeries& s, double t0, double t1, double dt, TrainPhase phase, double since,
                  const CollectiveAt& coll = {}) {
    for (double t = t0 + dt; t <= t1 + 1e-9; t += dt) {
      TrainWindow w;
      w.coll = coll;
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
