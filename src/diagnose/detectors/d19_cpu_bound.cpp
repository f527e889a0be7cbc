// SPDX-License-Identifier: Apache-2.0
// D19 cpu-bound-loading: the job's GPUs wait (rolling utilisation under starved_util_pct) while the
// CPU side is saturated: the main process at >= main_pinned_pct of one core (MISSION §4 D2/D4) or
// the whole host at >= cpu_saturated_pct, for loading_for_s. Evidence compares workers and cores.
#include <fmt/format.h>

#include "diagnose/detectors/loading_common.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

std::vector<Finding> detect_cpu_bound(const RunSeries& s, const Thresholds& th) {
  std::vector<Finding> out;
  std::vector<unsigned> gpus;
  auto cond = gpus_waiting(s, th, gpus);
  const auto main = rolling_mean(s.t, s.job.main_cpu_pct, th.window_s);
  const auto host = rolling_mean(s.t, s.host.cpu_busy_pct, th.window_s);
  for (std::size_t i = 0; i < cond.size(); ++i) {
    const bool pinned = !na(main[i]) && main[i] >= th.main_pinned_pct;
    const bool saturated = !na(host[i]) && host[i] >= th.cpu_saturated_pct;
    cond[i] = cond[i] && (pinned || saturated);
  }
  for (const auto& ep : episodes(s.t, cond, th.loading_for_s, th.clear_s)) {
    Finding f = make_finding("D19", Severity::warning, s.t[ep.i0], s.t[ep.i1]);
    f.gpus = gpus;
    const double u = gpus_mean_util(s, gpus, ep.i0, ep.i1);
    const double mc = mean(s.job.main_cpu_pct, ep.i0, ep.i1), hc = mean(s.host.cpu_busy_pct, ep.i0, ep.i1);
    const double workers = max_of(s.job.workers, ep.i0, ep.i1),
                 cores = last_of(s.host.cpu_count, ep.i0, ep.i1);
    put(f.numbers, "mean_util_pct", u);
    put(f.numbers, "main_cpu_pct", mc);
    put(f.numbers, "host_cpu_pct", hc);
    put(f.numbers, "workers", workers);
    put(f.numbers, "cpu_count", cores);
    const bool saturated = !na(hc) && hc >= th.cpu_saturated_pct;
    f.evidence = fmt::format("{} at {} % utilisation for {} while ", gpu_list(gpus), num(u),
                             dur(s.t[ep.i1] - s.t[ep.i0]));
    f.evidence +=
        saturated ? fmt::format("the host CPU is {} % busy", num(hc))
                  : fmt::format("the main process uses {} % of one core (host CPU {} %)", num(mc), num(hc));
    if (!na(workers) && !na(cores))
      f.evidence += fmt::format("; {} worker processes on {} cores", num(workers), num(cores));
    if (s.facts.root_pid) f.pids = {s.facts.root_pid};
    const bool few_workers = !na(workers) && !na(cores) && workers < cores;
    f.advice =
        saturated
            ? "Every core is busy preparing data: lighten augmentation (mosaic, mixup), decode on the GPU "
              "(DALI), pre-resize the dataset or cache it; more workers will not help."
        : few_workers
            ? "The main process does the loading work on one core: raise DataLoader num_workers "
              "(cores are free), move preprocessing into the Dataset, and use persistent_workers=True."
            : "The main process is CPU-bound: profile it (py-spy) and move work into the workers.";
    f.thresholds = {{"starved_util_pct", th.starved_util_pct},
                    {"main_pinned_pct", th.main_pinned_pct},
                    {"cpu_saturated_pct", th.cpu_saturated_pct},
                    {"loading_for_s", th.loading_for_s},
                    {"window_s", th.window_s}};
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace trainmon::diagnose
