// SPDX-License-Identifier: Apache-2.0
#include "report/report_train.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace trainmon::report {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

/// The bucket of time `t`, or -1 outside the grid.
long bucket_of(const Grid& g, double t) {
  if (g.size() == 0 || !(t > g.edges.front()) || t > g.edges.back()) return -1;
  const auto it = std::lower_bound(g.edges.begin(), g.edges.end(), t);
  return static_cast<long>(it - g.edges.begin()) - 1;
}

/// Sums of one rank's rows per bucket.
struct Sums {
  std::vector<double> steps, samples, step_s, data_s;
  std::vector<double> step_max, data_max;  ///< the longest step / data wait of the bucket (NaN: unknown)
  std::vector<bool> samples_known, data_known;
  explicit Sums(std::size_t n)
      : steps(n, 0),
        samples(n, 0),
        step_s(n, 0),
        data_s(n, 0),
        step_max(n, std::numeric_limits<double>::quiet_NaN()),
        data_max(n, std::numeric_limits<double>::quiet_NaN()),
        samples_known(n, false),
        data_known(n, false) {}
};

/// max that ignores NaN.
double max_known(double a, double b) {
  return std::isnan(a) ? b : std::isnan(b) ? a : std::max(a, b);
}

Sums rank_sums(const Grid& g, const diagnose::RankSeries& r) {
  Sums s(g.size());
  for (const auto& w : r.rows) {
    if (w.steps == 0 || !std::isfinite(w.step.sum)) continue;
    const long b = bucket_of(g, w.t);
    if (b < 0) continue;
    const auto i = static_cast<std::size_t>(b);
    s.steps[i] += w.steps;
    s.step_s[i] += w.step.sum;
    s.step_max[i] = max_known(s.step_max[i], w.step.max);
    if (std::isfinite(w.samples)) {
      s.samples[i] += w.samples;
      s.samples_known[i] = true;
    }
    if (std::isfinite(w.data.sum)) {
      s.data_s[i] += w.data.sum;
      s.data_max[i] = max_known(s.data_max[i], w.data.max);
      s.data_known[i] = true;
    }
  }
  return s;
}

}  // namespace

TrainChartData train_chart_data(const Grid& g, const diagnose::TrainSeries& train) {
  const std::size_t n = g.size();
  TrainChartData out;
  out.samples_per_s.assign(n, kNaN);
  out.data_wait_s.assign(n, kNaN);
  out.compute_s.assign(n, kNaN);
  out.step_s.assign(n, kNaN);
  std::vector<double> steps(n, 0), step_s(n, 0), data_s(n, 0);
  std::vector<bool> data_known(n, false);
  // Buckets in which no rank ended a step, inside the job's steps: the step in progress then (the
  // longest of those that ended next, NaN: none), and its data wait.
  std::vector<double> open_step(n, std::numeric_limits<double>::quiet_NaN()), open_data = open_step;
  bool any_data = false;
  bool several_hosts = false;
  for (const auto& r : train.ranks)
    several_hosts = several_hosts || (!r.id.host.empty() && r.id.host != train.ranks.front().id.host);
  for (const auto& r : train.ranks) {
    const Sums s = rank_sums(g, r);
    std::vector<float> rate(n, kNaN), rank_step(n, kNaN);
    long first = -1, last = -1;
    for (std::size_t i = 0; i < n; ++i) {
      if (s.steps[i] == 0) continue;
      if (first < 0) first = static_cast<long>(i);
      last = static_cast<long>(i);
      rank_step[i] = static_cast<float>(s.step_s[i] / s.steps[i]);
      if (s.samples_known[i] && s.step_s[i] > 0) rate[i] = static_cast<float>(s.samples[i] / s.step_s[i]);
      steps[i] += s.steps[i];
      step_s[i] += s.step_s[i];
      if (s.data_known[i]) {
        data_s[i] += s.data_s[i];
        data_known[i] = true;
        any_data = true;
      }
    }
    // A bucket between two of the rank's steps where none ended lies inside a step that ended
    // later: it is drawn as that step (the longest one of the next bucket with a step), its length
    // and its rate (samples per step over it), so a step longer than a bucket neither makes the
    // throughput dip nor is skipped, and a 40 s stall is a 40 s plateau, not a ramp to the mean.
    for (long i = last - 1, next = last; first >= 0 && i > first; --i) {
      const auto k = static_cast<std::size_t>(i);
      if (s.steps[k] != 0) {
        next = i;
        continue;
      }
      const auto j = static_cast<std::size_t>(next);
      const double mean = s.step_s[j] / s.steps[j];
      const double len = std::isnan(s.step_max[j]) ? mean : std::max(s.step_max[j], mean);
      rank_step[k] = static_cast<float>(len);
      if (s.samples_known[j] && len > 0) rate[k] = static_cast<float>(s.samples[j] / s.steps[j] / len);
      if (std::isnan(open_step[k]) || len > open_step[k]) {
        open_step[k] = len;
        open_data[k] = s.data_known[j] ? std::min(len, std::isnan(s.data_max[j]) ? s.data_s[j] / s.steps[j]
                                                                                 : s.data_max[j])
                                       : std::numeric_limits<double>::quiet_NaN();
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (std::isnan(rate[i])) continue;
      out.samples_per_s[i] = std::isnan(out.samples_per_s[i]) ? rate[i] : out.samples_per_s[i] + rate[i];
    }
    if (first < 0) continue;
    std::string label = r.id.rank >= 0 ? fmt::format("rank {}", r.id.rank)
                                       : fmt::format("pid {}", r.id.pid ? r.id.pid : -1 - r.id.key);
    if (several_hosts && !r.id.host.empty()) label += " (" + r.id.host + ")";
    out.rank_step_s.emplace_back(std::move(label), std::move(rank_step));
    if (r.id.gpu >= 0) out.gpus.push_back(r.id.gpu);
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (steps[i] == 0) {
      if (std::isnan(open_step[i])) continue;
      out.step_s[i] = static_cast<float>(open_step[i]);
      if (any_data && !std::isnan(open_data[i])) {
        out.data_wait_s[i] = static_cast<float>(open_data[i]);
        out.compute_s[i] = static_cast<float>(open_step[i] - open_data[i]);
      }
      continue;
    }
    const double mean = step_s[i] / steps[i];
    out.step_s[i] = static_cast<float>(mean);
    if (any_data && data_known[i]) {
      const double data = std::min(data_s[i] / steps[i], mean);
      out.data_wait_s[i] = static_cast<float>(data);
      out.compute_s[i] = static_cast<float>(mean - data);
    }
  }
  std::sort(out.gpus.begin(), out.gpus.end());
  out.gpus.erase(std::unique(out.gpus.begin(), out.gpus.end()), out.gpus.end());
  return out;
}

}  // namespace trainmon::report
