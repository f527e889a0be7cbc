// SPDX-License-Identifier: Apache-2.0
// D22 batch-size-advice (info): from the training process's peak memory at each batch size it ran
// (train events with batch_size and torch peak, else reserved, bytes), fit peak = fixed + per_sample
// x batch by least squares and give the largest batch that keeps batch_margin_frac of total free,
// with R^2, the number of points and the residual spread. With a single batch size, MISSION §5's
// rough formula: max_batch = b x (total - batch_reserve_mib) / (used - batch_reserve_mib), where
// used is the driver's peak memory.used on that GPU (else the torch peak).
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "diagnose/detail.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

std::vector<Finding> detect_batch_size(const RunSeries& s, const Thresholds& th) {
  std::vector<Finding> out;
  constexpr double kMiB = 1048576.0;
  std::map<int, std::map<int, double>> peaks;  // gpu -> batch -> peak MiB
  std::map<int, double> t0, t1;
  const auto jg = job_gpus(s, th);
  for (const auto& e : s.train_events) {
    const double b = e.torch_peak_bytes >= 0 ? e.torch_peak_bytes : e.torch_reserved_bytes;
    if (e.batch_size <= 0 || b < 0) continue;
    // A process that does not know its device speaks of the job's GPU when it has one; with several
    // the GPU is unknown and no advice is given (it would be a guess).
    const int gpu = event_gpu(e.gpu, jg);
    if (gpu < 0 || !torch_plausible(s, e, gpu)) continue;
    auto& p = peaks[gpu][e.batch_size];
    p = std::max(p, b / kMiB);
    if (!t0.contains(gpu)) t0[gpu] = e.t;
    t1[gpu] = e.t;
  }
  for (const auto& [gpu, by_batch] : peaks) {
    const int gi = gpu;
    const auto* g = gi >= 0 ? s.gpu(static_cast<unsigned>(gi)) : nullptr;
    if (!g || s.size() == 0) continue;
    const double total = last_of(g->mem_total_mib, 0, s.size() - 1);
    if (na(total) || total <= 0) continue;
    Finding f = make_finding("D22", Severity::info, t0[gpu], t1[gpu]);
    f.gpus = {static_cast<unsigned>(gi)};
    put(f.numbers, "total_mib", total);
    if (by_batch.size() >= 2) {
      std::vector<double> x, y;
      for (const auto& [b, m] : by_batch) {
        x.push_back(b);
        y.push_back(m);
      }
      const auto fit = fit_line(x, y);
      if (!fit.ok() || fit.slope <= 0) continue;
      const double budget = total * (1.0 - th.batch_margin_frac);
      const double max_batch = std::floor((budget - fit.intercept) / fit.slope);
      // No larger batch than the one already run fits: nothing to change, not a finding (D21
      // speaks when memory is near full).
      if (max_batch < 1 || max_batch <= by_batch.rbegin()->first) continue;
      put(f.numbers, "fixed_mib", fit.intercept);
      put(f.numbers, "per_sample_mib", fit.slope);
      put(f.numbers, "r2", fit.r2);
      put(f.numbers, "points", static_cast<double>(fit.n));
      put(f.numbers, "residual_sd_mib", fit.residual_sd);
      put(f.numbers, "max_batch", max_batch);
      const Word sure = fit.n >= 3 && fit.r2 >= 0.98 ? word("good")
                        : fit.n >= 3                 ? word("fair")
                                                     : word("two points only: fair");
      say(f,
          "peak memory = {} MiB + {} MiB per sample (least squares over {} batch sizes, R² {}, "
          "spread {} MiB; confidence {}): batch {} fits in {} of {} MiB ({} % kept free)",
          num(fit.intercept), num(fit.slope, 1), fit.n, num(fit.r2, 3), num(fit.residual_sd), sure,
          num(max_batch), num(budget), num(total), num(100 * th.batch_margin_frac));
      advise(f, "Largest safe batch on GPU{}: {} (round down to a multiple of 8 for tensor cores).", gi,
             num(max_batch));
      f.thresholds = {{"batch_margin_frac", th.batch_margin_frac}};
    } else {
      const auto [b, peak] = *by_batch.begin();
      const double driver_used = max_of(g->mem_used_mib, 0, s.size() - 1);
      const double used = !na(driver_used) ? driver_used : peak;
      if (used <= th.batch_reserve_mib) continue;
      const double max_batch = std::floor(b * (total - th.batch_reserve_mib) / (used - th.batch_reserve_mib));
      if (max_batch <= b) continue;  // nothing larger fits: nothing to change
      put(f.numbers, "batch", b);
      put(f.numbers, "used_mib", used);
      put(f.numbers, "max_batch", max_batch);
      put(f.numbers, "points", 1);
      say(f,
          "one batch size measured ({} using {} MiB of {} MiB): rough estimate {} x ({} - {}) / "
          "({} - {}) = {} (MISSION §5 formula, assumes a fixed {} MiB for CUDA context and system)",
          b, num(used), num(total), b, num(total), num(th.batch_reserve_mib), num(used),
          num(th.batch_reserve_mib), num(max_batch), num(th.batch_reserve_mib));
      advise(f,
             "Rough largest batch on GPU{}: {}. Run one more batch size to get a fitted estimate "
             "with a confidence figure.",
             gi, num(max_batch));
      f.thresholds = {{"batch_reserve_mib", th.batch_reserve_mib}};
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace trainmon::diagnose
