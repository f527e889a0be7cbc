// SPDX-License-Identifier: Apache-2.0
// D5 gpu-memory-growth: memory at the end of each epoch (PyTorch allocated, else reserved, else the
// driver's memory.used at that moment) grows by more than growth_per_epoch_mib per epoch, fitted by
// least squares over at least growth_min_epochs epoch ends, with most steps positive (MISSION §4
// D5; the first epoch's rise is caching warm-up and is not a step). Without epoch events it falls
// back to the slope of the job's GPU memory over time (>= growth_slope_mib_h, R^2 >= leak_min_r2,
// over leak_min_span_s after the first 10 % of use), and says so.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "diagnose/detail.h"
#include "diagnose/detail_plural.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

std::vector<Finding> detect_memory_growth(const RunSeries& s, const Thresholds& th) {
  const ProcPresence presence = proc_presence(s);
  std::vector<Finding> out;
  constexpr double kMiB = 1048576.0;
  const auto jg = job_gpus(s, th);

  struct Pt {
    int epoch;
    double t, mib;
  };
  std::map<int, std::vector<Pt>> per_gpu;  // by event gpu (-1 unknown)
  bool any_epoch = false;
  for (const auto& e : s.train_events) {
    if (e.kind != "epoch_end") continue;
    any_epoch = true;
    const int gi = event_gpu(e.gpu, jg);  // one job GPU: the events are about it
    if (!torch_plausible(s, e, gi)) continue;
    double v = e.torch_allocated_bytes >= 0  ? e.torch_allocated_bytes / kMiB
               : e.torch_reserved_bytes >= 0 ? e.torch_reserved_bytes / kMiB
                                             : NAN;
    if (na(v)) {
      if (const auto* g = gi >= 0 ? s.gpu(static_cast<unsigned>(gi)) : nullptr) {
        const std::size_t r = std::min(row_at(s, e.t), s.size() ? s.size() - 1 : 0);
        if (s.size()) v = last_of(g->mem_used_mib, 0, r);
      }
    }
    if (!na(v)) per_gpu[gi].push_back({e.epoch, e.t, v});
  }

  for (auto& [gpu, all] : per_gpu) {
    // The first epoch end is left out: growth up to it (and a higher first epoch) is caching warm-up.
    const std::vector<Pt> pts(all.begin() + (all.empty() ? 0 : 1), all.end());
    if (pts.empty() || static_cast<double>(pts.size()) < th.growth_min_epochs) continue;
    std::vector<double> x, y;
    int up = 0;
    for (std::size_t k = 0; k < pts.size(); ++k) {
      x.push_back(pts[k].epoch >= 0 ? pts[k].epoch : static_cast<double>(k));
      y.push_back(pts[k].mib);
      if (k > 0 && pts[k].mib > pts[k - 1].mib) ++up;
    }
    const auto fit = fit_line(x, y);
    if (!fit.ok() || fit.slope <= th.growth_per_epoch_mib || up * 3 < static_cast<int>(pts.size() - 1) * 2)
      continue;
    Finding f = make_finding("D5", Severity::warning, pts.front().t, pts.back().t);
    if (gpu >= 0) f.gpus = {static_cast<unsigned>(gpu)};
    put(f.numbers, "growth_mib_per_epoch", fit.slope);
    put(f.numbers, "r2", fit.r2);
    put(f.numbers, "epochs", static_cast<double>(pts.size()));
    put(f.numbers, "first_mib", pts.front().mib);
    put(f.numbers, "last_mib", pts.back().mib);
    std::string vals;
    for (std::size_t k = 0; k < pts.size() && k < 6; ++k)
      vals += fmt::format("{}{}", k ? ", " : "", num(pts[k].mib));
    if (pts.size() > 6) vals += ", ...";
    say(f, "memory at epoch ends {} MiB: +{} MiB per epoch over {} epochs after the first (> {} MiB)", vals,
        num(fit.slope), pts.size(), num(th.growth_per_epoch_mib));
    if (const auto* g = gpu >= 0 ? s.gpu(static_cast<unsigned>(gpu)) : nullptr) {
      const double total = last_of(g->mem_total_mib, 0, s.size() ? s.size() - 1 : 0);
      if (!na(total) && total > pts.back().mib) {
        const double left = (total - pts.back().mib) / fit.slope;
        put(f.numbers, "epochs_to_full", left);
        sayn(f, num(left) == "1" ? 1 : 2, "; full in about {} more epoch", "; full in about {} more epochs",
             num(left));
      }
    }
    f.advice = N_(
        "Something keeps tensors alive across epochs: callbacks or metrics that store outputs or losses "
        "without .detach()/.item(), growing lists of predictions, or a graph kept by retain_graph. A higher "
        "first epoch is normal with caching.");
    f.thresholds = {{"growth_per_epoch_mib", th.growth_per_epoch_mib},
                    {"growth_min_epochs", th.growth_min_epochs}};
    out.push_back(std::move(f));
  }
  if (any_epoch) return out;

  // Fallback: slope over time.
  for (auto idx : jg) {
    const auto* g = s.gpu(idx);
    if (!g) continue;
    const auto use = gpu_use(s, *g, th, presence);
    std::size_t a = s.size(), b = 0;
    for (std::size_t i = 0; i < s.size(); ++i)
      if (use.used[i]) {
        a = std::min(a, i);
        b = i;
      }
    if (a >= b) continue;
    a = row_at(s, s.t[a] + 0.1 * (s.t[b] - s.t[a]));
    if (s.t[b] - s.t[a] < th.leak_min_span_s) continue;
    const auto fit = fit_column(s.t, g->mem_used_mib, a, b);
    if (!fit.ok() || fit.slope * 3600 < th.growth_slope_mib_h || fit.r2 < th.leak_min_r2) continue;
    Finding f = make_finding("D5", Severity::warning, s.t[a], s.t[b]);
    f.gpus = {idx};
    f.pids = use.pids;
    put(f.numbers, "growth_mib_per_h", fit.slope * 3600);
    put(f.numbers, "r2", fit.r2);
    say(f,
        "GPU{} memory grows {} MiB/h (R² {}) over {}; no epoch events were recorded, so this is "
        "a slope over time, not per epoch",
        idx, num(fit.slope * 3600), num(fit.r2, 2), dur(s.t[b] - s.t[a]));
    f.advice =
        N_("GPU memory keeps growing: look for tensors kept alive (stored outputs, losses without .item()). "
           "Send "
           "epoch events (trainmon Python callback) for a per-epoch figure.");
    f.thresholds = {{"growth_slope_mib_h", th.growth_slope_mib_h},
                    {"leak_min_r2", th.leak_min_r2},
                    {"leak_min_span_s", th.leak_min_span_s}};
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace trainmon::diagnose
