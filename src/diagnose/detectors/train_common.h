// SPDX-License-Identifier: Apache-2.0
// Shared by the training-loop detectors (D23 hang, D24 straggler, D25 measured data wait, D26
// throughput drop) and by the GPU-side detectors that give way to them (D4, D18, D19): a rank's
// rows in a time range, step-weighted medians, how a rank is named, and which rows the loop's own
// timing covers.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "diagnose/detail.h"

namespace trainmon::diagnose::detail {

/// Rows of `r` with t0 < t <= t1 (indices [first, last)).
inline std::pair<std::size_t, std::size_t> rows_in(const RankSeries& r, double t0, double t1) {
  auto lo = std::upper_bound(r.rows.begin(), r.rows.end(), t0,
                             [](double t, const TrainWindow& w) { return t < w.t; });
  auto hi = std::upper_bound(lo, r.rows.end(), t1, [](double t, const TrainWindow& w) { return t < w.t; });
  return {static_cast<std::size_t>(lo - r.rows.begin()), static_cast<std::size_t>(hi - r.rows.begin())};
}

/// The weighted median of (value, weight) pairs (lower median on a tie); NaN when empty.
inline double weighted_median(std::vector<std::pair<double, double>>& v) {
  std::erase_if(v, [](const auto& p) { return na(p.first) || !(p.second > 0); });
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  double total = 0;
  for (const auto& p : v) total += p.second;
  double acc = 0;
  for (const auto& p : v) {
    acc += p.second;
    if (acc >= 0.5 * total) return p.first;
  }
  return v.back().first;
}

/// Steps, step-time sum, data-wait sum and the step-weighted median of the rows' p50 step time and
/// p50 data wait over rows (t0, t1] of one rank.
struct RankWindow {
  double steps = 0;
  double samples = 0;  ///< NaN when a row with steps did not say
  double step_s = 0;
  double data_s = 0;
  bool data_known = false;
  double step_median_s = NAN;
  double data_median_s = NAN;
};
inline RankWindow rank_window(const RankSeries& r, double t0, double t1) {
  RankWindow w;
  const auto [a, b] = rows_in(r, t0, t1);
  std::vector<std::pair<double, double>> step, data;
  for (std::size_t i = a; i < b; ++i) {
    const auto& row = r.rows[i];
    if (row.steps == 0) continue;
    const double n = row.steps;
    w.steps += n;
    w.samples = na(row.samples) ? NAN : w.samples + row.samples;
    const double mean = na(row.step.sum) ? NAN : row.step.sum / n;
    if (!na(row.step.sum)) w.step_s += row.step.sum;
    if (!na(row.data.sum)) {
      w.data_s += row.data.sum;
      w.data_known = true;
    }
    step.emplace_back(na(row.step.p50) ? mean : row.step.p50, n);
    data.emplace_back(na(row.data.p50) ? (na(row.data.sum) ? NAN : row.data.sum / n) : row.data.p50, n);
  }
  w.step_median_s = weighted_median(step);
  w.data_median_s = weighted_median(data);
  return w;
}

/// "rank 1 (pid 4242 on node3, GPU1)": who a rank is, with what is known.
inline std::string rank_name(const TrainRank& id) {
  std::string who = id.rank >= 0 ? fmt::format("rank {}", id.rank) : fmt::format("process {}", id.pid);
  std::string more;
  if (id.rank >= 0 && id.pid) more = fmt::format("pid {}", id.pid);
  if (!id.host.empty()) more += (more.empty() ? "on " : " on ") + id.host;
  if (id.gpu >= 0) more += fmt::format("{}GPU{}", more.empty() ? "" : ", ", id.gpu);
  return more.empty() ? who : who + " (" + more + ")";
}
/// "rank 1" or "process 4242".
inline std::string rank_short(const TrainRank& id) {
  return id.rank >= 0 ? fmt::format("rank {}", id.rank) : fmt::format("process {}", id.pid);
}

/// 1 at the rows where the training loop's own timing covers the job: some rank reported a step
/// within the trailing `window_s`. There the loop's measured split is the evidence (D23-D26) and the
/// GPU-side inferences of D4 / D18 / D19 stand back, so one problem gives one finding.
inline std::vector<std::uint8_t> timed_rows(const RunSeries& s, double window_s) {
  std::vector<std::uint8_t> out(s.size(), 0);
  for (const auto& r : s.train.ranks) {
    std::size_t k = 0;  // first step row with t > s.t[i] - window_s
    std::vector<double> step_t;
    for (const auto& row : r.rows)
      if (row.steps > 0) step_t.push_back(row.t);
    if (step_t.empty()) continue;
    for (std::size_t i = 0; i < s.size(); ++i) {
      while (k < step_t.size() && step_t[k] <= s.t[i] - window_s) ++k;
      if (k < step_t.size() && step_t[k] <= s.t[i] + 1e-9) out[i] = 1;
    }
  }
  return out;
}

/// Mean CPU (per-core basis) of process `pid` over rows [i0, i1]; NaN when not recorded.
inline double proc_cpu(const RunSeries& s, std::uint32_t pid, std::size_t i0, std::size_t i1) {
  const auto* p = s.job.proc(pid);
  if (!p) return NAN;
  double sum = 0;
  std::size_t n = 0;
  auto it = std::lower_bound(p->ticks.begin(), p->ticks.end(), static_cast<std::uint32_t>(i0));
  for (auto k = static_cast<std::size_t>(it - p->ticks.begin()); k < p->ticks.size() && p->ticks[k] <= i1;
       ++k) {
    if (na(p->cpu_pct[k])) continue;
    sum += p->cpu_pct[k];
    ++n;
  }
  return n ? sum / static_cast<double>(n) : NAN;
}

/// The job's CPU as a share of the machine (percent of all online CPUs): the job's own process
/// tree, never the host-wide load that other users cause. NaN where unknown.
inline std::vector<float> job_cpu_share(const RunSeries& s) {
  std::vector<float> out(s.size(), NAN);
  for (std::size_t i = 0; i < s.size(); ++i) {
    const float c = s.job.cpu_pct[i], n = s.host.cpu_count[i];
    if (!na(c) && !na(n) && n > 0) out[i] = std::min(100.f, c / n);
  }
  return out;
}

}  // namespace trainmon::diagnose::detail
