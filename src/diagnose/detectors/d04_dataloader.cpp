// SPDX-License-Identifier: Apache-2.0
// D4 dataloader-starved: a GPU the job holds stays under starved_util_pct mean utilisation (or its
// GPM SM activity under starved_sm_pct) for starved_for_s, with CPU-side evidence that the input
// pipeline is the limit: host CPU under cpu_low_pct, or the main process pinned at main_pinned_pct
// of one core (MISSION §4 D4). Hi-res samples swinging 0 -> 85-90 -> 0 are counted as evidence.
#include <algorithm>

#include <fmt/format.h>

#include "diagnose/detail.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

namespace {
/// Low -> high -> low cycles among the hi-res samples inside [t0, t1].
int swing_cycles(const HiResColumn& h, double t0, double t1, double low, double high) {
  auto it = std::lower_bound(h.t.begin(), h.t.end(), t0);
  int cycles = 0, phase = 0;  // 0: waiting for low, 1: low seen, 2: high seen after low
  for (auto i = static_cast<std::size_t>(it - h.t.begin()); i < h.t.size() && h.t[i] <= t1; ++i) {
    const double v = h.value[i];
    if (v <= low) {
      if (phase == 2) ++cycles;
      phase = 1;
    } else if (v >= high && phase == 1) {
      phase = 2;
    }
  }
  return cycles;
}
}  // namespace

std::vector<Finding> detect_dataloader(const RunSeries& s, const Thresholds& th) {
  const ProcPresence presence = proc_presence(s);
  std::vector<Finding> out;
  const std::size_t n = s.size();
  const auto host_cpu = rolling_mean(s.t, s.host.cpu_busy_pct, th.window_s);
  const auto main_cpu = rolling_mean(s.t, s.job.main_cpu_pct, th.window_s);
  for (auto idx : job_gpus(s, th)) {
    const auto* g = s.gpu(idx);
    if (!g) continue;
    const auto use = gpu_use(s, *g, th, presence);
    const auto util = rolling_mean(s.t, g->util_gpu_pct, th.window_s);
    const auto sm = rolling_mean(s.t, g->gpm_sm_pct, th.window_s);
    std::vector<std::uint8_t> cond(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const bool gpu_waits =
          (!na(util[i]) && util[i] < th.starved_util_pct) || (!na(sm[i]) && sm[i] < th.starved_sm_pct);
      const bool cpu_sign = (!na(host_cpu[i]) && host_cpu[i] < th.cpu_low_pct) ||
                            (!na(main_cpu[i]) && main_cpu[i] >= th.main_pinned_pct);
      cond[i] = use.used[i] && gpu_waits && cpu_sign;
    }
    for (const auto& ep : episodes(s.t, cond, th.starved_for_s, th.clear_s)) {
      Finding f = make_finding("D4", Severity::warning, s.t[ep.i0], s.t[ep.i1]);
      f.gpus = {idx};
      f.pids = use.pids;
      const double mu = mean(g->util_gpu_pct, ep.i0, ep.i1);
      const double msm = mean(g->gpm_sm_pct, ep.i0, ep.i1);
      const double mem = mean(g->mem_used_mib, ep.i0, ep.i1);
      const double total = last_of(g->mem_total_mib, ep.i0, ep.i1);
      const double hc = mean(s.host.cpu_busy_pct, ep.i0, ep.i1);
      const double mc = mean(s.job.main_cpu_pct, ep.i0, ep.i1);
      const double workers = max_of(s.job.workers, ep.i0, ep.i1);
      const double cores = last_of(s.host.cpu_count, ep.i0, ep.i1);
      const int cycles =
          swing_cycles(g->hires_util, s.t[ep.i0], s.t[ep.i1], th.swing_low_pct, th.swing_high_pct);
      put(f.numbers, "mean_util_pct", mu);
      put(f.numbers, "mean_sm_pct", msm);
      put(f.numbers, "mem_used_mib", mem);
      put(f.numbers, "mem_total_mib", total);
      put(f.numbers, "host_cpu_pct", hc);
      put(f.numbers, "main_cpu_pct", mc);
      put(f.numbers, "workers", workers);
      put(f.numbers, "cpu_count", cores);
      put(f.numbers, "swing_cycles", cycles);
      f.evidence = fmt::format("GPU{} mean utilisation {} % over {} (< {} %)", idx, num(mu),
                               dur(s.t[ep.i1] - s.t[ep.i0]), num(th.starved_util_pct));
      if (!na(msm)) f.evidence += fmt::format(", SM activity {} %", num(msm));
      if (!na(mem) && !na(total) && total > 0)
        f.evidence += fmt::format(" with memory {} % full", num(100.0 * mem / total));
      if (cycles >= th.swing_min_cycles)
        f.evidence +=
            fmt::format("; utilisation swings 0 -> {}+ -> 0 ({} cycles)", num(th.swing_high_pct), cycles);
      if (!na(mc) && mc >= th.main_pinned_pct)
        f.evidence += fmt::format("; main process at {} % CPU (one core saturated)", num(mc));
      if (!na(hc)) f.evidence += fmt::format("; host CPU {} %", num(hc));
      if (!na(workers) && !na(cores))
        f.evidence += fmt::format("; {} worker processes on {} cores", num(workers), num(cores));
      f.advice =
          "The GPU waits for input. Raise DataLoader workers (e.g. 8 -> 12) when cores are idle, or lower "
          "them on a slow disk; cache the dataset in RAM (`cache: ram`) or on a local SSD; use "
          "pin_memory=True and persistent_workers=True; a smaller imgsz shortens decoding and augmentation.";
      f.thresholds = {{"starved_util_pct", th.starved_util_pct}, {"starved_sm_pct", th.starved_sm_pct},
                      {"starved_for_s", th.starved_for_s},       {"cpu_low_pct", th.cpu_low_pct},
                      {"main_pinned_pct", th.main_pinned_pct},   {"window_s", th.window_s}};
      out.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace trainmon::diagnose
