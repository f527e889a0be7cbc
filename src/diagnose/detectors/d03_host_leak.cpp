// SPDX-License-Identifier: Apache-2.0
// D3 host-memory-leak: the job's RSS (summed over its process tree) grows linearly. The evidence it
// needs scales with the danger (docs/diagnosis.md "D3: slow and fast leaks"):
//  - slow: least-squares slope >= leak_min_slope_mib_h with R^2 >= leak_min_r2 over at least
//    leak_min_span_s, the second half still growing at half that rate (a warm-up that levels off is
//    not a leak); critical when what the job can use runs out within leak_critical_eta_s;
//  - fast: the same fit over a trailing span T >= leak_fast_min_span_s (at least 5 rows) whose
//    forecast exhausts what the job can use within leak_fast_eta_factor x T: reported at once,
//    critical, with the time left ("OOM in about 2 min at 75 MiB/s").
// What the job can use is the host's MemAvailable or, when the job has a memory cgroup limit
// (container, systemd, Slurm), the limit minus the job's RSS, whichever is smaller. The process that
// grows most over the fitted span is named with its kind (main process, DataLoader worker), and the
// advice is that kind's. Without job columns the host's MemTotal - MemAvailable is fitted instead.
// Buff/cache growth alone never counts: MemAvailable already treats reclaimable cache as available
// (MISSION §4 D3). When the job has ended, the fall of its RSS at the very end (memory freed on the
// way out) is left out of the fit; so is everything after a fall of a fifth or more (a process killed
// by the OOM killer, D20): the growth that led to it is fitted up to the row before it.
#include <fmt/format.h>

#include "diagnose/advice.h"
#include "diagnose/detail.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

namespace {

/// What the job can still use at `row` (MiB) and which limit that is.
struct Headroom {
  double mib = NAN;        ///< NaN: unknown
  double limit_mib = NAN;  ///< the cgroup limit when that is the tighter one, else NaN
};

Headroom headroom_at(const RunSeries& s, std::size_t row, double job_rss) {
  Headroom h;
  const double avail = last_of(s.host.mem_available_mib, row, row);
  h.mib = avail;
  double limit = last_of(s.job.memory_limit_mib, 0, row);
  if (na(limit) && s.facts.cgroup_memory_limit_mib) limit = *s.facts.cgroup_memory_limit_mib;
  if (!na(limit) && !na(job_rss)) {
    const double left = std::max(0.0, limit - job_rss);
    if (na(avail) || left < avail) {
      h.mib = left;
      h.limit_mib = limit;
    }
  }
  return h;
}

/// The process of the job whose RSS grew most over rows [a, b], its growth (MiB) and its share of
/// the growth of all processes that grew.
struct Grower {
  const JobProcess* p = nullptr;
  double growth_mib = 0;
  double share = NAN;
};

Grower top_grower(const RunSeries& s, std::size_t a, std::size_t b) {
  Grower g;
  double total = 0;
  for (const auto& p : s.job.procs) {
    auto lo = std::lower_bound(p.rss_rows.begin(), p.rss_rows.end(), a);
    auto hi = std::upper_bound(p.rss_rows.begin(), p.rss_rows.end(), b);
    if (hi - lo < 2) continue;
    const double growth = p.rss_mib[static_cast<std::size_t>(hi - p.rss_rows.begin()) - 1] -
                          p.rss_mib[static_cast<std::size_t>(lo - p.rss_rows.begin())];
    if (growth <= 0) continue;
    total += growth;
    if (growth > g.growth_mib) {
      g.p = &p;
      g.growth_mib = growth;
    }
  }
  if (g.p && total > 0) g.share = g.growth_mib / total;
  return g;
}

constexpr std::size_t kFastMinRows = 5;

}  // namespace

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
  if (b <= a) return out;

  // The ends a growth is fitted up to: the last row, and the row before each fall of a fifth or more
  // (a process of the job killed or gone: what grew before it is the evidence).
  std::vector<std::size_t> ends;
  {
    std::size_t prev = a;
    for (std::size_t i = a + 1; i <= b; ++i) {
      if (na(col[i])) continue;
      if (!na(col[prev]) && col[i] < 0.8 * col[prev]) ends.push_back(prev);
      prev = i;
    }
    ends.push_back(b);
  }

  auto make = [&](std::size_t a0, std::size_t b0, const LinFit& fit, bool fast, double fitted_s) {
    const double v0 = fit.intercept + fit.slope * s.t[a0], v1 = fit.intercept + fit.slope * s.t[b0];
    const double slope_h = fit.slope * 3600;
    const Headroom head = headroom_at(s, b0, job ? col[b0] : NAN);
    const double eta_s = !na(head.mib) && fit.slope > 0 ? head.mib / fit.slope : NAN;
    const bool critical = fast || (!na(eta_s) && eta_s <= th.leak_critical_eta_s);
    Finding f = make_finding("D3", critical ? Severity::critical : Severity::warning, s.t[a0], s.t[b0]);
    const Grower g = job ? top_grower(s, a0, b0) : Grower{};
    const JobProcessKind kind = g.p ? job_process_kind(s, *g.p) : JobProcessKind::main;
    if (g.p)
      f.pids = {g.p->pid};
    else if (job && s.facts.root_pid)
      f.pids = {s.facts.root_pid};
    const double avail = last_of(s.host.mem_available_mib, a0, b0);
    const double avail0 = first_of(s.host.mem_available_mib, a0, b0);
    put(f.numbers, "slope_mib_per_h", slope_h);
    put(f.numbers, "slope_mib_per_s", fit.slope);
    put(f.numbers, "r2", fit.r2);
    put(f.numbers, "start_mib", v0);
    put(f.numbers, "end_mib", v1);
    put(f.numbers, "fitted_s", fitted_s);
    put(f.numbers, "available_start_mib", avail0);
    put(f.numbers, "available_end_mib", avail);
    put(f.numbers, "cached_start_mib", first_of(s.host.mem_cached_mib, a0, b0));
    put(f.numbers, "cached_end_mib", last_of(s.host.mem_cached_mib, a0, b0));
    put(f.numbers, "headroom_mib", head.mib);
    put(f.numbers, "cgroup_memory_limit_mib", head.limit_mib);
    put(f.numbers, "eta_s", eta_s);
    f.numbers["fast"] = fast ? 1 : 0;
    if (g.p) {
      f.numbers["grower_pid"] = g.p->pid;
      f.numbers["grower_kind"] = static_cast<double>(kind);
      put(f.numbers, "grower_growth_mib", g.growth_mib);
      put(f.numbers, "grower_share", g.share);
    }
    // the rate in the unit that reads best: MiB/s from 1 MiB/s, else MiB/h
    const Phrase rate =
        fit.slope >= 1 ? phrase("{} MiB/s", num(fit.slope, 1)) : phrase("{} MiB/h", num(slope_h));
    say(f, "{} grew {} -> {} MiB over {} ({}, R² {})", job ? word("job RSS") : word("host used memory"),
        num(v0), num(v1), dur(fitted_s), rate, num(fit.r2, 2));
    if (g.p)
      say(f, "; {} % of it in the {} pid {}", num(100 * g.share), word(job_process_kind_name(kind)),
          g.p->pid);
    if (!na(head.limit_mib))
      say(f, "; the job's memory cgroup limit is {} MiB", num(head.limit_mib));
    else if (!na(avail0) && !na(avail))
      say(f, "; MemAvailable {} -> {} MiB", num(avail0), num(avail));
    if (!na(eta_s)) {
      if (fast)
        say(f, "; OOM in about {} at {}", dur(eta_s), rate);
      else
        say(f, "; at this rate {} runs out in {}",
            na(head.limit_mib) ? word("available memory") : word("the cgroup's memory"), dur(eta_s));
    }
    if (!job) say(f, " (no job process tree recorded: fitted MemTotal - MemAvailable)");
    f.advice = kind == JobProcessKind::worker ? advice::kD3WorkerLeak : advice::kD3Leak;
    f.thresholds = {
        {"leak_min_slope_mib_h", th.leak_min_slope_mib_h}, {"leak_min_r2", th.leak_min_r2},
        {"leak_min_span_s", th.leak_min_span_s},           {"leak_critical_eta_s", th.leak_critical_eta_s},
        {"leak_fast_eta_factor", th.leak_fast_eta_factor}, {"leak_fast_min_span_s", th.leak_fast_min_span_s}};
    return f;
  };

  // ---- fast: a growth that runs out within a few times the span fitted, at once ----
  // Spans halve from the whole one down to leak_fast_min_span_s; of those that qualify, the longest
  // that fits about as well as the best one (R² within 0.01): a warm-up before the growth bends the
  // longer fits, whose slope would understate the rate now.
  std::size_t start = a;  // a span never reaches back over an earlier end (a fall)
  for (std::size_t e : ends) {
    struct Candidate {
      std::size_t a2;
      LinFit fit;
    };
    std::vector<Candidate> found;
    for (double span = s.t[e] - s.t[start]; span >= th.leak_fast_min_span_s; span /= 2) {
      const std::size_t a2 = std::max(start, row_at(s, s.t[e] - span - 1e-9));
      if (e < a2 + kFastMinRows - 1) break;
      const auto fit = fit_column(s.t, col, a2, e);
      if (!fit.ok() || fit.slope * 3600 < th.leak_min_slope_mib_h || fit.r2 < th.leak_min_r2) continue;
      const std::size_t mid = row_at(s, (s.t[a2] + s.t[e]) / 2);
      const auto late = fit_column(s.t, col, mid, e);
      if (!late.ok() || late.slope < 0.5 * fit.slope) continue;
      const Headroom head = headroom_at(s, e, job ? col[e] : NAN);
      if (na(head.mib)) break;
      if (head.mib / fit.slope > th.leak_fast_eta_factor * (s.t[e] - s.t[a2])) continue;
      found.push_back({a2, fit});
    }
    if (!found.empty()) {
      double best = 0;
      for (const auto& c : found) best = std::max(best, c.fit.r2);
      for (const auto& c : found)  // longest first
        if (c.fit.r2 >= best - 0.01) {
          out.push_back(make(c.a2, e, c.fit, true, s.t[e] - s.t[c.a2]));
          break;
        }
    }
    start = std::min(e + 1, b);
  }
  if (!out.empty()) return out;

  // ---- slow: the long window ----
  if (s.t[b] - s.t[a] < th.leak_min_span_s) return out;
  const auto fit = fit_column(s.t, col, a, b);
  if (!fit.ok()) return out;
  const double slope_h = fit.slope * 3600;
  if (slope_h < th.leak_min_slope_mib_h || fit.r2 < th.leak_min_r2) return out;
  const std::size_t mid = row_at(s, (s.t[a] + s.t[b]) / 2);
  const auto late = fit_column(s.t, col, mid, b);
  if (!late.ok() || late.slope * 3600 < 0.5 * th.leak_min_slope_mib_h) return out;
  out.push_back(make(a, b, fit, false, s.t[b] - s.t[a]));
  return out;
}

}  // namespace trainmon::diagnose
