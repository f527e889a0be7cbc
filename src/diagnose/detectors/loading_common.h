// SPDX-License-Identifier: Apache-2.0
// Shared by D18 and D19: rows where the job's GPUs wait (mean rolling utilisation of the GPUs the
// job holds under starved_util_pct).
#pragma once

#include <vector>

#include "diagnose/detail.h"

namespace trainmon::diagnose::detail {

/// 1 where the job holds at least one GPU and the mean rolling utilisation of those it holds is
/// under th.starved_util_pct. `gpus` receives the job GPUs considered.
inline std::vector<std::uint8_t> gpus_waiting(const RunSeries& s, const Thresholds& th,
                                              std::vector<unsigned>& gpus) {
  const std::size_t n = s.size();
  std::vector<double> sum(n, 0);
  std::vector<int> cnt(n, 0);
  gpus.clear();
  const ProcPresence presence = proc_presence(s);  // once, not once per GPU
  for (auto idx : job_gpus(s, th)) {
    const auto* g = s.gpu(idx);
    if (!g) continue;
    gpus.push_back(idx);
    const auto use = gpu_use(s, *g, th, presence);
    const auto roll = rolling_mean(s.t, g->util_gpu_pct, th.window_s);
    for (std::size_t i = 0; i < n; ++i)
      if (use.used[i] && !na(roll[i])) {
        sum[i] += roll[i];
        ++cnt[i];
      }
  }
  std::vector<std::uint8_t> out(n, 0);
  for (std::size_t i = 0; i < n; ++i) out[i] = cnt[i] > 0 && sum[i] / cnt[i] < th.starved_util_pct;
  return out;
}

/// Mean utilisation over [i0, i1] of the given GPUs (NaN when none).
inline double gpus_mean_util(const RunSeries& s, const std::vector<unsigned>& gpus, std::size_t i0,
                             std::size_t i1) {
  double sum = 0;
  int k = 0;
  for (auto idx : gpus)
    if (const auto* g = s.gpu(idx)) {
      const double m = mean(g->util_gpu_pct, i0, i1);
      if (!na(m)) {
        sum += m;
        ++k;
      }
    }
  return k ? sum / k : NAN;
}

}  // namespace trainmon::diagnose::detail
