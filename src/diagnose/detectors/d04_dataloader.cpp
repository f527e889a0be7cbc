// SPDX-License-Identifier: Apache-2.0
// D4 dataloader-starved, inferred from the GPU side: a GPU the job holds waits (loading_common.h:
// mean utilisation under starved_util_pct, GPM SM activity under starved_sm_pct, or utilisation
// swinging 0 -> 85-90 -> 0 whatever its mean) for starved_for_s, with CPU-side evidence that the
// input pipeline is the limit: the job's own processes using under cpu_low_pct of the machine's
// cores (workers idle, waiting on I/O), or its main process pinned at main_pinned_pct of one core
// (MISSION §4 D4). The job's CPU, never the host-wide load other users cause. Where the training
// loop's own timing exists, D25 measures the data wait and D4 stands back (timed_rows): one finding.
#include <algorithm>

#include <fmt/format.h>

#include "diagnose/detail.h"
#include "diagnose/detail_plural.h"
#include "diagnose/detectors/loading_common.h"
#include "diagnose/detectors/train_common.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

std::vector<Finding> detect_dataloader(const RunSeries& s, const Thresholds& th) {
  const ProcPresence presence = proc_presence(s);
  std::vector<Finding> out;
  const std::size_t n = s.size();
  const auto job_cpu = rolling_mean(s.t, job_cpu_share(s), th.window_s);
  const auto main_cpu = rolling_mean(s.t, s.job.main_cpu_pct, th.window_s);
  const auto timed = timed_rows(s, th.window_s);
  for (auto idx : job_gpus(s, th)) {
    const auto* g = s.gpu(idx);
    if (!g) continue;
    const auto use = gpu_use(s, *g, th, presence);
    const auto waits = gpu_waits(s, *g, th);
    std::vector<std::uint8_t> cond(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const bool cpu_sign = (!na(job_cpu[i]) && job_cpu[i] < th.cpu_low_pct) ||
                            (!na(main_cpu[i]) && main_cpu[i] >= th.main_pinned_pct);
      cond[i] = use.used[i] && waits[i] && cpu_sign && !timed[i];
    }
    for (const auto& ep : episodes(s.t, cond, th.starved_for_s, th.clear_s)) {
      Finding f = make_finding("D4", Severity::warning, s.t[ep.i0], s.t[ep.i1]);
      f.gpus = {idx};
      f.pids = use.pids;
      const double mu = mean(g->util_gpu_pct, ep.i0, ep.i1);
      const double msm = mean(g->gpm_sm_pct, ep.i0, ep.i1);
      const double mem = mean(g->mem_used_mib, ep.i0, ep.i1);
      const double total = last_of(g->mem_total_mib, ep.i0, ep.i1);
      const double hc = mean(job_cpu_share(s), ep.i0, ep.i1);
      const double mc = mean(s.job.main_cpu_pct, ep.i0, ep.i1);
      const double workers = max_of(s.job.workers, ep.i0, ep.i1);
      const double cores = last_of(s.host.cpu_count, ep.i0, ep.i1);
      int cycles = 0;
      for (double ct : swing_cycle_times(s, *g, th.swing_low_pct, th.swing_high_pct))
        cycles += ct >= s.t[ep.i0] && ct <= s.t[ep.i1];
      put(f.numbers, "mean_util_pct", mu);
      put(f.numbers, "mean_sm_pct", msm);
      put(f.numbers, "mem_used_mib", mem);
      put(f.numbers, "mem_total_mib", total);
      put(f.numbers, "job_cpu_share_pct", hc);
      put(f.numbers, "main_cpu_pct", mc);
      put(f.numbers, "workers", workers);
      put(f.numbers, "cpu_count", cores);
      put(f.numbers, "swing_cycles", cycles);
      say(f, "GPU{} mean utilisation {} % over {} ({} {} %)", idx, num(mu), dur(s.t[ep.i1] - s.t[ep.i0]),
          !na(mu) && mu >= th.starved_util_pct ? ">=" : "<", num(th.starved_util_pct));
      if (!na(msm)) say(f, ", SM activity {} %", num(msm));
      if (!na(mem) && !na(total) && total > 0) say(f, " with memory {} % full", num(100.0 * mem / total));
      if (cycles >= th.swing_min_cycles)
        say(f, "; utilisation swings 0 -> {}+ -> 0 ({} cycles){}", num(th.swing_high_pct), cycles,
            !na(mu) && mu >= th.starved_util_pct
                ? word(": the GPU waits between batches although its mean looks busy")
                : Word{});
      if (!na(mc) && mc >= th.main_pinned_pct)
        say(f, "; main process at {} % CPU (one core saturated)", num(mc));
      if (!na(hc)) say(f, "; the job uses {} % of the machine's CPU", num(hc));
      if (!na(workers) && !na(cores))
        say(f, "; {} on {}",
            phrasen(num(workers) == "1" ? 1 : 2, "{} worker process", "{} worker processes", num(workers)),
            phrasen(num(cores) == "1" ? 1 : 2, "{} core", "{} cores", num(cores)));
      // The GPU idles (100 - util) % of the time it could be busy: the share lost against a healthy
      // utilisation (estimated from the GPU side; D25 measures it when the loop's timing exists).
      if (!na(mu)) set_cost(f, 1.0 - mu / th.healthy_util_high_pct, "estimated");
      f.advice = N_(
          "The GPU waits for input. Raise DataLoader workers (e.g. 8 -> 12) when cores are idle, or lower "
          "them on a slow disk; cache the dataset in RAM (`cache: ram`) or on a local SSD; use "
          "pin_memory=True and persistent_workers=True; a smaller imgsz shortens decoding and augmentation.");
      f.thresholds = {{"starved_util_pct", th.starved_util_pct}, {"starved_sm_pct", th.starved_sm_pct},
                      {"starved_for_s", th.starved_for_s},       {"cpu_low_pct", th.cpu_low_pct},
                      {"main_pinned_pct", th.main_pinned_pct},   {"window_s", th.window_s}};
      out.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace trainmon::diagnose
