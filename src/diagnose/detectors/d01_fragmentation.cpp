// SPDX-License-Identifier: Apache-2.0
// D1 fragmentation-oom-risk (MISSION §4 D1), two signatures:
//  (a) training-process memory events where PyTorch's reserved memory is at least
//      frag_reserved_ratio x allocated and at least frag_min_gap_mib above it, on frag_min_events
//      events (critical when the allocator already retried or hit an OOM);
//  (b) driver-level memory on a GPU the job has held for window_s jumps by spike_frac_of_total of
//      the total within spike_within_s and ends at or above near_full_pct.
#include <algorithm>
#include <deque>
#include <map>

#include <fmt/format.h>

#include "diagnose/detail.h"
#include "diagnose/detail_plural.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

std::vector<Finding> detect_fragmentation(const RunSeries& s, const Thresholds& th) {
  const ProcPresence presence = proc_presence(s);
  std::vector<Finding> out;
  constexpr double kMiB = 1048576.0;

  // (a) allocator view, per GPU the events name (-1 = unknown)
  struct Acc {
    int count = 0;
    double t0 = 0, t1 = 0, worst_gap = 0, worst_alloc = 0, worst_res = 0, retries = 0, ooms = 0;
  };
  std::map<int, Acc> acc;
  const auto jg = job_gpus(s, th);
  for (const auto& e : s.train_events) {
    if (e.torch_allocated_bytes < 0 || e.torch_reserved_bytes < 0) continue;
    const int gpu = event_gpu(e.gpu, jg);  // a process that does not know its device: the job's GPU
    if (!torch_plausible(s, e, gpu)) continue;
    auto& a = acc[gpu];
    a.retries = std::max(a.retries, e.num_alloc_retries);
    a.ooms = std::max(a.ooms, e.num_ooms);
    const double alloc = e.torch_allocated_bytes / kMiB, res = e.torch_reserved_bytes / kMiB;
    if (res < th.frag_reserved_ratio * alloc || res - alloc < th.frag_min_gap_mib) continue;
    if (a.count++ == 0) a.t0 = e.t;
    a.t1 = e.t;
    if (res - alloc > a.worst_gap) {
      a.worst_gap = res - alloc;
      a.worst_alloc = alloc;
      a.worst_res = res;
    }
  }
  for (const auto& [gpu, a] : acc) {
    if (a.count < th.frag_min_events) continue;
    const bool bad = a.retries > 0 || a.ooms > 0;
    Finding f = make_finding("D1", bad ? Severity::critical : Severity::warning, a.t0, a.t1);
    if (gpu >= 0) f.gpus = {static_cast<unsigned>(gpu)};
    put(f.numbers, "torch_allocated_mib", a.worst_alloc);
    put(f.numbers, "torch_reserved_mib", a.worst_res);
    put(f.numbers, "gap_mib", a.worst_gap);
    put(f.numbers, "events", a.count);
    if (a.retries >= 0) put(f.numbers, "num_alloc_retries", a.retries);
    if (a.ooms >= 0) put(f.numbers, "num_ooms", a.ooms);
    say(f,
        "PyTorch reserved {} MiB but allocated only {} MiB ({}x, {} MiB idle in the cache) "
        "on {} events",
        num(a.worst_res), num(a.worst_alloc), num(a.worst_res / std::max(1.0, a.worst_alloc), 1),
        num(a.worst_gap), a.count);
    if (a.retries > 0)
      sayn(f, static_cast<std::uint64_t>(a.retries), "; the allocator retried {} time",
           "; the allocator retried {} times", num(a.retries));
    if (a.ooms > 0)
      sayn(f, static_cast<std::uint64_t>(a.ooms), "; {} CUDA OOM error", "; {} CUDA OOM errors", num(a.ooms));
    f.advice = N_(
        "The caching allocator is fragmented: an OOM can happen while nvidia-smi shows free memory. Set "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (or max_split_size_mb:128), avoid varying tensor "
        "shapes (rect/multi-scale), use `cache=False` or `cache: ram` for the dataset, and confirm the "
        "memory "
        "curve rises smoothly with no spikes.");
    f.thresholds = {{"frag_reserved_ratio", th.frag_reserved_ratio},
                    {"frag_min_gap_mib", th.frag_min_gap_mib},
                    {"frag_min_events", th.frag_min_events}};
    out.push_back(std::move(f));
  }

  // (b) driver view: a sudden jump to near full after the job had been running
  for (const auto& g : s.gpus) {
    const auto use = gpu_use(s, g, th, presence);
    std::deque<std::size_t> mins;  // indices of increasing memory inside the spike window
    double used_since = -1;
    double last_spike_t = -1e300;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (!use.used[i]) {
        used_since = -1;
        mins.clear();
        continue;
      }
      if (used_since < 0) used_since = s.t[i];
      const float m = g.mem_used_mib[i];
      if (na(m)) continue;
      while (!mins.empty() && s.t[mins.front()] < s.t[i] - th.spike_within_s) mins.pop_front();
      while (!mins.empty() && g.mem_used_mib[mins.back()] >= m) mins.pop_back();
      mins.push_back(i);
      const float total = g.mem_total_mib[i];
      if (na(total) || total <= 0) continue;
      const std::size_t j = mins.front();
      const double jump = m - g.mem_used_mib[j];
      const bool full = 100.0 * m / total >= th.near_full_pct;
      if (!full || jump < th.spike_frac_of_total * total || s.t[j] - used_since < th.window_s) continue;
      if (s.t[i] - last_spike_t <= th.clear_s) continue;
      last_spike_t = s.t[i];
      Finding f = make_finding("D1", Severity::warning, s.t[j], s.t[i]);
      f.gpus = {g.index};
      f.pids = use.pids;
      const std::size_t k0 = row_at(s, s.t[j] - th.forecast_window_s);
      const auto creep = fit_column(s.t, g.mem_used_mib, k0, j);
      put(f.numbers, "before_mib", g.mem_used_mib[j]);
      put(f.numbers, "after_mib", m);
      put(f.numbers, "total_mib", total);
      put(f.numbers, "jump_mib", jump);
      put(f.numbers, "creep_mib_per_h", creep.ok() ? creep.slope * 3600 : NAN);
      const bool ended_badly =
          s.facts.exit_status && *s.facts.exit_status != 0 && s.t.back() - s.t[i] <= th.window_s;
      if (ended_badly) f.severity = Severity::critical;
      say(f, "GPU{} memory jumped {} -> {} MiB ({} % of {} MiB) within {}", g.index, num(g.mem_used_mib[j]),
          num(m), num(100.0 * m / total), num(total), dur(s.t[i] - s.t[j]));
      if (creep.ok() && creep.slope > 0) say(f, " after creeping up {} MiB/h", num(creep.slope * 3600));
      if (ended_badly) say(f, "; the job failed {} later", dur(s.t.back() - s.t[i]));
      f.advice = N_(
          "A sudden allocation pushed memory to full: an OOM is close. Look for a larger batch at the end of "
          "an "
          "epoch (validation, close_mosaic, multi-scale), set "
          "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, "
          "use `cache=False`, or lower the batch (see D22).");
      f.thresholds = {{"spike_frac_of_total", th.spike_frac_of_total},
                      {"spike_within_s", th.spike_within_s},
                      {"near_full_pct", th.near_full_pct}};
      out.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace trainmon::diagnose
