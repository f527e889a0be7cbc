// SPDX-License-Identifier: Apache-2.0
// D3 host-memory-leak: the job's RSS (summed over its process tree) grows linearly: least-squares
// slope >= leak_min_slope_mib_h with R^2 >= leak_min_r2 over at least leak_min_span_s, and the second
// half still grows at half that rate (a warm-up that levels off is not a leak). Without job columns
// the host's MemTotal - MemAvailable is fitted instead. Buff/cache growth alone never counts:
// MemAvailable already treats reclaimable cache as available (MISSION §4 D3). When the job has ended,
// the fall of its RSS at the very end (memory freed on the way out) is left out. The forecast is when
// MemAvailable reaches zero at the fitted rate; critical within leak_critical_eta_s.
#include <fmt/format.h>

#include "diagnose/advice.h"
#include "diagnose/detail.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

std::vector<Finding> detect_host_leak(const RunSeries& s, const Thresholds& th) {
  std::vector<Finding> out;
  if (s.size() < 2) return out;
  const std::size_t last = s.size() - 1;
  std::vector<float> used_col;
  std::span<const float> col = s.job.rss_mib;
  bool job = false;
  for (float v : s.job.rss_mib) job = job || !na(v);
  if (!job) {
    used_col.assign(s.size(), kNA);
    for (std::size_t i = 0; i < s.size(); ++i)
      if (!na(s.host.mem_total_mib[i]) && !na(s.host.mem_available_mib[i]))
        used_col[i] = s.host.mem_total_mib[i] - s.host.mem_available_mib[i];
    col = used_col;
  }
  std::size_t a = 0, b = last;
  while (a < b && na(col[a])) ++a;
  while (b > a && na(col[b])) --b;
  // A job's end is no evidence against a leak: once it has ended (an exit status or signal is known,
  // or its main process was last seen before the run's last row), the fall at the end of its RSS is
  // the process freeing memory on its way out (Python's teardown; the kernel unmapping an exiting
  // process while it is not yet a zombie, which a tick can sample) and is left out of the fit, as the
  // live diagnosis, which ran while the job was alive, never saw it.
  if (job) {
    const JobProcess* root = s.facts.root_pid ? s.job.proc(s.facts.root_pid) : nullptr;
    const bool ended = s.facts.exit_status || s.facts.signal || (root && root->last_t < s.t[last] - 1e-9);
    if (ended)
      while (b > a && !na(col[b - 1]) && col[b] < col[b - 1]) --b;
  }
  if (s.t[b] - s.t[a] < th.leak_min_span_s) return out;
  const auto fit = fit_column(s.t, col, a, b);
  if (!fit.ok()) return out;
  const double slope_h = fit.slope * 3600;
  if (slope_h < th.leak_min_slope_mib_h || fit.r2 < th.leak_min_r2) return out;
  const std::size_t mid = row_at(s, (s.t[a] + s.t[b]) / 2);
  const auto late = fit_column(s.t, col, mid, b);
  if (!late.ok() || late.slope * 3600 < 0.5 * th.leak_min_slope_mib_h) return out;

  const double avail = last_of(s.host.mem_available_mib, a, b);
  const double avail0 = first_of(s.host.mem_available_mib, a, b);
  const double cached0 = first_of(s.host.mem_cached_mib, a, b),
               cached1 = last_of(s.host.mem_cached_mib, a, b);
  const double eta_s = !na(avail) && avail > 0 ? avail / fit.slope : NAN;
  const bool critical = !na(eta_s) && eta_s <= th.leak_critical_eta_s;
  Finding f = make_finding("D3", critical ? Severity::critical : Severity::warning, s.t[a], s.t[b]);
  if (job && s.facts.root_pid) f.pids = {s.facts.root_pid};
  const double v0 = fit.intercept + fit.slope * s.t[a], v1 = fit.intercept + fit.slope * s.t[b];
  put(f.numbers, "slope_mib_per_h", slope_h);
  put(f.numbers, "r2", fit.r2);
  put(f.numbers, "start_mib", v0);
  put(f.numbers, "end_mib", v1);
  put(f.numbers, "available_start_mib", avail0);
  put(f.numbers, "available_end_mib", avail);
  put(f.numbers, "cached_start_mib", cached0);
  put(f.numbers, "cached_end_mib", cached1);
  put(f.numbers, "eta_s", eta_s);
  say(f, "{} grew {} -> {} MiB over {} ({} MiB/h, R² {})", job ? word("job RSS") : word("host used memory"),
      num(v0), num(v1), dur(s.t[b] - s.t[a]), num(slope_h), num(fit.r2, 2));
  if (!na(avail0) && !na(avail)) say(f, "; MemAvailable {} -> {} MiB", num(avail0), num(avail));
  if (!na(eta_s)) say(f, "; at this rate available memory runs out in {}", dur(eta_s));
  if (!job) say(f, " (no job process tree recorded: fitted MemTotal - MemAvailable)");
  f.advice = advice::kD3Leak;
  f.thresholds = {{"leak_min_slope_mib_h", th.leak_min_slope_mib_h},
                  {"leak_min_r2", th.leak_min_r2},
                  {"leak_min_span_s", th.leak_min_span_s},
                  {"leak_critical_eta_s", th.leak_critical_eta_s}};
  out.push_back(std::move(f));
  return out;
}

}  // namespace trainmon::diagnose
