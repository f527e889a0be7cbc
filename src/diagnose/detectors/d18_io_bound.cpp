// SPDX-License-Identifier: Apache-2.0
// D18 io-bound-loading: the job's GPUs wait (rolling utilisation under starved_util_pct) while the
// host waits on storage (iowait >= iowait_pct or PSI io some avg10 >= psi_io_some_pct) and reads at
// least disk_read_min_bps, for loading_for_s. Rows the training loop's own timing covers are D25's
// (measured data wait), so they are left out here: one problem, one finding.
#include <fmt/format.h>

#include "diagnose/detectors/loading_common.h"
#include "diagnose/detectors/train_common.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

std::vector<Finding> detect_io_bound(const RunSeries& s, const Thresholds& th) {
  std::vector<Finding> out;
  std::vector<unsigned> gpus;
  auto cond = gpus_waiting(s, th, gpus);
  const auto iow = rolling_mean(s.t, s.host.cpu_iowait_pct, th.window_s);
  const auto pio = rolling_mean(s.t, s.host.psi_io_some_avg10, th.window_s);
  const auto rd = rolling_mean(s.t, s.host.disk_read_bps, th.window_s);
  const auto timed = timed_rows(s, th.window_s);
  for (std::size_t i = 0; i < cond.size(); ++i) {
    if (timed[i]) cond[i] = 0;
    const bool waiting_io =
        (!na(iow[i]) && iow[i] >= th.iowait_pct) || (!na(pio[i]) && pio[i] >= th.psi_io_some_pct);
    cond[i] = cond[i] && waiting_io && !na(rd[i]) && rd[i] >= th.disk_read_min_bps;
  }
  for (const auto& ep : episodes(s.t, cond, th.loading_for_s, th.clear_s)) {
    Finding f = make_finding("D18", Severity::warning, s.t[ep.i0], s.t[ep.i1]);
    f.gpus = gpus;
    const double u = gpus_mean_util(s, gpus, ep.i0, ep.i1);
    const double w = mean(s.host.cpu_iowait_pct, ep.i0, ep.i1),
                 p = mean(s.host.psi_io_some_avg10, ep.i0, ep.i1);
    const double r = mean(s.host.disk_read_bps, ep.i0, ep.i1);
    put(f.numbers, "mean_util_pct", u);
    put(f.numbers, "iowait_pct", w);
    put(f.numbers, "psi_io_some_avg10", p);
    put(f.numbers, "disk_read_bps", r);
    say(f, "{} at {} % utilisation for {} while the host waits on disk: iowait {} %", gpu_list(gpus), num(u),
        dur(s.t[ep.i1] - s.t[ep.i0]), num(w));
    if (!na(p)) say(f, ", IO pressure {} %", num(p, 1));
    say(f, ", reading {} MiB/s", num(r / 1048576.0));
    if (s.facts.root_pid) f.pids = {s.facts.root_pid};
    f.advice =
        N_("Data loading is bound by storage: copy the dataset to a local NVMe SSD, cache it in RAM "
           "(`cache: ram`) when it fits, use fewer workers on a slow or network disk, or pre-resize images.");
    if (!na(u)) set_cost(f, 1.0 - u / th.healthy_util_high_pct, "estimated");
    f.thresholds = {{"starved_util_pct", th.starved_util_pct}, {"iowait_pct", th.iowait_pct},
                    {"psi_io_some_pct", th.psi_io_some_pct},   {"disk_read_min_bps", th.disk_read_min_bps},
                    {"loading_for_s", th.loading_for_s},       {"window_s", th.window_s}};
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace trainmon::diagnose
