// SPDX-License-Identifier: Apache-2.0
#include "diagnose/train_columns.h"

#include <algorithm>
#include <cmath>

namespace trainmon::diagnose::detail {

namespace {
bool nan(double v) {
  return std::isnan(v);
}
}  // namespace

void compute_train_columns(const RunSeries& s, TrainColumns& out) {
  out.ranks.resize(s.train.ranks.size());
  out.step_times.clear();
  std::vector<double>& merged = out.scratch;
  for (std::size_t k = 0; k < s.train.ranks.size(); ++k) {
    const auto& rows = s.train.ranks[k].rows;
    auto& c = out.ranks[k];
    std::size_t m = 0;
    for (const auto& w : rows) m += w.steps > 0;
    for (auto* v : {&c.t, &c.steps, &c.samples, &c.step_sum, &c.data_sum, &c.step_v, &c.data_v, &c.comm_sum,
                    &c.compute_v})
      v->resize(m);
    std::size_t j = 0;
    for (const auto& w : rows) {
      if (w.steps == 0) continue;
      const double n = w.steps;
      c.t[j] = w.t;
      c.steps[j] = n;
      c.samples[j] = w.samples;
      const double step_sum = w.step.sum, data_sum = w.data.sum;  // float -> double, exact
      c.step_sum[j] = step_sum;
      c.data_sum[j] = data_sum;
      c.step_v[j] = nan(w.step.p50) ? (nan(step_sum) ? NAN : w.step.sum / n) : w.step.p50;
      c.data_v[j] = nan(w.data.p50) ? (nan(data_sum) ? NAN : w.data.sum / n) : w.data.p50;
      const double comm_sum = w.comm.sum;
      c.comm_sum[j] = comm_sum;
      c.compute_v[j] = nan(step_sum) || nan(comm_sum)
                           ? NAN
                           : std::max(0.0, (step_sum - (nan(data_sum) ? 0.0 : data_sum) - comm_sum) / n);
      ++j;
    }
    // The report times of every rank, merged (each rank's are in time order).
    const std::vector<double>* own = &c.t;
    std::vector<double> sorted;
    if (!std::is_sorted(c.t.begin(), c.t.end())) {
      sorted = c.t;
      std::sort(sorted.begin(), sorted.end());
      own = &sorted;
    }
    merged.resize(out.step_times.size() + own->size());
    merged.erase(std::set_union(out.step_times.begin(), out.step_times.end(), own->begin(), own->end(),
                                merged.begin()),
                 merged.end());
    out.step_times.swap(merged);
  }
  out.step_times.erase(std::unique(out.step_times.begin(), out.step_times.end()), out.step_times.end());
}

}  // namespace trainmon::diagnose::detail
