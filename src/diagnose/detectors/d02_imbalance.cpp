// SPDX-License-Identifier: Apache-2.0
// D2 ddp-imbalance: in a multi-GPU job every GPU holds the job, yet their mean utilisations differ
// by more than imbalance_spread_pct while the busiest is at least imbalance_high_pct (MISSION §4 D2).
// GPUs the job does not hold at all are D8's case, not this one.
#include <algorithm>

#include <fmt/format.h>

#include "diagnose/detail.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

std::vector<Finding> detect_imbalance(const RunSeries& s, const Thresholds& th) {
  const ProcPresence presence = proc_presence(s);
  std::vector<Finding> out;
  const auto jg = job_gpus(s, th);
  if (jg.size() < 2) return out;
  std::vector<const GpuSeries*> gs;
  std::vector<std::vector<float>> roll;
  std::vector<GpuUse> use;
  for (auto idx : jg) {
    const auto* g = s.gpu(idx);
    if (!g) return out;
    gs.push_back(g);
    roll.push_back(rolling_mean(s.t, g->util_gpu_pct, th.window_s));
    use.push_back(gpu_use(s, *g, th, presence));
  }
  const std::size_t n = s.size();
  std::vector<std::uint8_t> cond(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    float lo = 1e9f, hi = -1e9f;
    bool ok = true;
    for (std::size_t k = 0; k < gs.size() && ok; ++k) {
      if (na(roll[k][i]) || !use[k].used[i])
        ok = false;
      else {
        lo = std::min(lo, roll[k][i]);
        hi = std::max(hi, roll[k][i]);
      }
    }
    cond[i] = ok && hi >= th.imbalance_high_pct && hi - lo > th.imbalance_spread_pct;
  }
  for (const auto& ep : episodes(s.t, cond, th.imbalance_for_s, th.clear_s)) {
    Finding f = make_finding("D2", Severity::warning, s.t[ep.i0], s.t[ep.i1]);
    std::size_t khi = 0, klo = 0;
    std::vector<double> means;
    for (std::size_t k = 0; k < gs.size(); ++k) {
      means.push_back(mean(gs[k]->util_gpu_pct, ep.i0, ep.i1));
      put(f.numbers, fmt::format("gpu{}_mean_util_pct", gs[k]->index), means.back());
      if (means[k] > means[khi]) khi = k;
      if (means[k] < means[klo]) klo = k;
      f.gpus.push_back(gs[k]->index);
    }
    const double spread = means[khi] - means[klo];
    put(f.numbers, "spread_pct", spread);
    const double main_cpu = mean(s.job.main_cpu_pct, ep.i0, ep.i1);
    put(f.numbers, "main_cpu_pct", main_cpu);
    f.evidence = fmt::format("GPU{} mean {} % over {} while GPU{} {} %; spread {} points > {}",
                             gs[klo]->index, num(means[klo]), dur(s.t[ep.i1] - s.t[ep.i0]), gs[khi]->index,
                             num(means[khi]), num(spread), num(th.imbalance_spread_pct));
    if (!na(main_cpu))
      f.evidence += fmt::format("; main process at {} % CPU (100 % = one core)", num(main_cpu));
    f.advice =
        "Healthy multi-GPU training moves all GPUs together (spread under 15 points). Check that every rank "
        "gets the same share of data (DistributedSampler), that the dataset sits on a local SSD, and tune "
        "DataLoader workers per rank with pin_memory=True; a single main process near one full core "
        "points at rank 0 doing extra work (logging, evaluation, data preparation).";
    f.thresholds = {{"imbalance_spread_pct", th.imbalance_spread_pct},
                    {"imbalance_high_pct", th.imbalance_high_pct},
                    {"imbalance_for_s", th.imbalance_for_s},
                    {"window_s", th.window_s}};
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace trainmon::diagnose
