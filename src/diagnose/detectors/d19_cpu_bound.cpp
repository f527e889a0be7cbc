// SPDX-License-Identifier: Apache-2.0
// D19 cpu-bound-loading: the job's GPUs wait (loading_common.h: rolling utilisation under
// starved_util_pct, or swinging) while the job's CPU side is saturated: its main process at >=
// main_pinned_pct of one core (MISSION §4 D2/D4), or its process tree using >= cpu_saturated_pct of
// the machine's cores, for loading_for_s. Only the job's own CPU counts: a host made busy by other
// users does not make this job CPU-bound. Evidence compares workers and cores. Rows the training
// loop's own timing covers are D25's (measured data wait).
#include <fmt/format.h>

#include "diagnose/detail_plural.h"
#include "diagnose/detectors/loading_common.h"
#include "diagnose/detectors/train_common.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

std::vector<Finding> detect_cpu_bound(const RunSeries& s, const Thresholds& th) {
  std::vector<Finding> out;
  std::vector<unsigned> gpus;
  auto cond = gpus_waiting(s, th, gpus);
  const auto main = rolling_mean(s.t, s.job.main_cpu_pct, th.window_s);
  const auto job_share = rolling_mean(s.t, job_cpu_share(s), th.window_s);
  const auto timed = timed_rows(s, th.window_s);
  for (std::size_t i = 0; i < cond.size(); ++i) {
    const bool pinned = !na(main[i]) && main[i] >= th.main_pinned_pct;
    const bool saturated = !na(job_share[i]) && job_share[i] >= th.cpu_saturated_pct;
    cond[i] = cond[i] && !timed[i] && (pinned || saturated);
  }
  for (const auto& ep : episodes(s.t, cond, th.loading_for_s, th.clear_s)) {
    Finding f = make_finding("D19", Severity::warning, s.t[ep.i0], s.t[ep.i1]);
    f.gpus = gpus;
    const double u = gpus_mean_util(s, gpus, ep.i0, ep.i1);
    const double mc = mean(s.job.main_cpu_pct, ep.i0, ep.i1), hc = mean(s.host.cpu_busy_pct, ep.i0, ep.i1);
    const auto share = job_cpu_share(s);
    const double jc = mean(share, ep.i0, ep.i1);
    const double workers = max_of(s.job.workers, ep.i0, ep.i1),
                 cores = last_of(s.host.cpu_count, ep.i0, ep.i1);
    put(f.numbers, "mean_util_pct", u);
    put(f.numbers, "main_cpu_pct", mc);
    put(f.numbers, "host_cpu_pct", hc);
    put(f.numbers, "job_cpu_share_pct", jc);
    put(f.numbers, "workers", workers);
    put(f.numbers, "cpu_count", cores);
    const bool saturated = !na(jc) && jc >= th.cpu_saturated_pct;
    say(f, "{} at {} % utilisation for {} while ", gpu_list(gpus), num(u), dur(s.t[ep.i1] - s.t[ep.i0]));
    if (saturated)
      say(f, "the job's processes keep {} % of the machine's cores busy", num(jc));
    else
      say(f, "the main process uses {} % of one core (the job: {} % of the cores)", num(mc), num(jc));
    if (!na(workers) && !na(cores))
      say(f, "; {} on {}",
          phrasen(num(workers) == "1" ? 1 : 2, "{} worker process", "{} worker processes", num(workers)),
          phrasen(num(cores) == "1" ? 1 : 2, "{} core", "{} cores", num(cores)));
    if (s.facts.root_pid) f.pids = {s.facts.root_pid};
    const bool few_workers = !na(workers) && !na(cores) && workers < cores;
    f.advice =
        saturated
            ? N_("Every core is busy preparing data: lighten augmentation (mosaic, mixup), decode on the GPU "
                 "(DALI), pre-resize the dataset or cache it; more workers will not help.")
        : few_workers
            ? N_("The main process does the loading work on one core: raise DataLoader num_workers "
                 "(cores are free), move preprocessing into the Dataset, and use persistent_workers=True.")
            : N_("The main process is CPU-bound: profile it (py-spy) and move work into the workers.");
    if (!na(u)) set_cost(f, 1.0 - u / th.healthy_util_high_pct, "estimated");
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
