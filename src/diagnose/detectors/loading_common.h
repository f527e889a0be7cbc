// SPDX-License-Identifier: Apache-2.0
// Shared by D4, D18 and D19: rows where a GPU waits for input. A GPU waits when its rolling mean
// utilisation is under starved_util_pct (or its GPM SM activity under starved_sm_pct), and also
// when its utilisation swings between near 0 (<= swing_low_pct) and high (>= swing_high_pct) at
// least swing_min_cycles times within window_s: a loader that starves the GPU half the time can
// average well above the threshold, so a signature on the mean alone misses it (MISSION §4 D4:
// "0 -> 85-90 -> 0").
#pragma once

#include <algorithm>
#include <vector>

#include "diagnose/detail.h"

namespace trainmon::diagnose::detail {

/// Times at which a low -> high -> low cycle of GPU `g`'s utilisation completes: from its
/// high-resolution samples when it has any, else from the per-tick column.
inline std::vector<double> swing_cycle_times(const RunSeries& s, const GpuSeries& g, double low,
                                             double high) {
  std::vector<double> out;
  int phase = 0;  // 0: waiting for low, 1: low seen, 2: high seen after low
  auto feed = [&](double t, double v) {
    if (na(v)) return;
    if (v <= low) {
      if (phase == 2) out.push_back(t);
      phase = 1;
    } else if (v >= high && phase == 1) {
      phase = 2;
    }
  };
  if (!g.hires_util.t.empty()) {
    for (std::size_t i = 0; i < g.hires_util.t.size(); ++i) feed(g.hires_util.t[i], g.hires_util.value[i]);
  } else {
    for (std::size_t i = 0; i < s.size() && i < g.util_gpu_pct.size(); ++i) feed(s.t[i], g.util_gpu_pct[i]);
  }
  return out;
}

/// 1 at the rows where at least swing_min_cycles cycles completed within the trailing window_s.
inline std::vector<std::uint8_t> swinging_rows(const RunSeries& s, const GpuSeries& g, const Thresholds& th) {
  const auto c = swing_cycle_times(s, g, th.swing_low_pct, th.swing_high_pct);
  std::vector<std::uint8_t> out(s.size(), 0);
  std::size_t lo = 0, hi = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    while (hi < c.size() && c[hi] <= s.t[i]) ++hi;
    while (lo < hi && c[lo] <= s.t[i] - th.window_s) ++lo;
    out[i] = static_cast<double>(hi - lo) >= th.swing_min_cycles;
  }
  return out;
}

/// 1 where GPU `g` waits (rolling mean, GPM SM activity, or swinging; see the header comment).
inline std::vector<std::uint8_t> gpu_waits(const RunSeries& s, const GpuSeries& g, const Thresholds& th) {
  const auto util = rolling_mean(s.t, g.util_gpu_pct, th.window_s);
  const auto sm = rolling_mean(s.t, g.gpm_sm_pct, th.window_s);
  auto out = swinging_rows(s, g, th);
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = out[i] || (!na(util[i]) && util[i] < th.starved_util_pct) ||
             (!na(sm[i]) && sm[i] < th.starved_sm_pct);
  return out;
}

/// 1 where the job holds at least one GPU and those it holds wait: their mean rolling utilisation
/// is under th.starved_util_pct, or every one of them swings (gpu_waits). `gpus` receives the job
/// GPUs considered.
inline std::vector<std::uint8_t> gpus_waiting(const RunSeries& s, const Thresholds& th,
                                              std::vector<unsigned>& gpus) {
  const std::size_t n = s.size();
  std::vector<double> sum(n, 0);
  std::vector<int> cnt(n, 0), swinging(n, 0);
  gpus.clear();
  const ProcPresence presence = proc_presence(s);  // once, not once per GPU
  for (auto idx : job_gpus(s, th)) {
    const auto* g = s.gpu(idx);
    if (!g) continue;
    gpus.push_back(idx);
    const auto use = gpu_use(s, *g, th, presence);
    const auto roll = rolling_mean(s.t, g->util_gpu_pct, th.window_s);
    const auto swing = swinging_rows(s, *g, th);
    for (std::size_t i = 0; i < n; ++i)
      if (use.used[i] && !na(roll[i])) {
        sum[i] += roll[i];
        ++cnt[i];
        swinging[i] += swing[i];
      }
  }
  std::vector<std::uint8_t> out(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = cnt[i] > 0 && (sum[i] / cnt[i] < th.starved_util_pct || swinging[i] == cnt[i]);
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
