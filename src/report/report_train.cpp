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
  std::vector<bool> samples_known, data_known;
  explicit Sums(std::size_t n)
      : steps(n, 0),
        samples(n, 0),
        step_s(n, 0),
        data_s(n, 0),
        samples_known(n, false),
        data_known(n, false) {}
};

Sums rank_sums(const Grid& g, const diagnose::RankSeries& r) {
  Sums s(g.size());
  for (const auto& w : r.rows) {
    if (w.steps == 0 || !std::isfinite(w.step.sum)) continue;
    const long b = bucket_of(g, w.t);
    if (b < 0) continue;
    const auto i = static_cast<std::size_t>(b);
    s.steps[i] += w.steps;
    s.step_s[i] += w.step.sum;
    if (std::isfinite(w.samples)) {
      s.samples[i] += w.samples;
      s.samples_known[i] = true;
    }
    if (std::isfinite(w.data.sum)) {
      s.data_s[i] += w.data.sum;
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
  bool any_data = false;
  bool several_hosts = false;
  for (const auto& r : train.ranks)
    several_hosts = several_hosts || (!r.id.host.empty() && r.id.host != train.ranks.front().id.host);
  for (const auto& r : train.ranks) {
    const Sums s = rank_sums(g, r);
    // The rank's rate per bucket, held over buckets without a step between its first and last one.
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
    for (long i = first + 1; first >= 0 && i <= last; ++i) {
      const auto k = static_cast<std::size_t>(i);
      if (std::isnan(rate[k]) && s.steps[k] == 0) rate[k] = rate[k - 1];
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
    if (steps[i] == 0) continue;
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
