// SPDX-License-Identifier: Apache-2.0
// D6 power-bound: a GPU draws at least power_cap_frac of its enforced power limit while its mean
// utilisation stays under power_bound_util_pct, for window_s (MISSION §4 D6). With GPM DRAM
// bandwidth at or above dram_bound_pct the finding says "bandwidth bound" instead of guessing.
#include <fmt/format.h>

#include "diagnose/detail.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

std::vector<Finding> detect_power_bound(const RunSeries& s, const Thresholds& th) {
  std::vector<Finding> out;
  const std::size_t n = s.size();
  for (const auto& g : s.gpus) {
    const auto pw = rolling_mean(s.t, g.power_w, th.window_s);
    const auto cap = rolling_mean(s.t, g.power_limit_w, th.window_s);
    const auto util = rolling_mean(s.t, g.util_gpu_pct, th.window_s);
    std::vector<std::uint8_t> cond(n, 0);
    for (std::size_t i = 0; i < n; ++i)
      cond[i] = !na(pw[i]) && !na(cap[i]) && cap[i] > 0 && !na(util[i]) &&
                pw[i] >= th.power_cap_frac * cap[i] && util[i] < th.power_bound_util_pct;
    for (const auto& ep : episodes(s.t, cond, th.window_s, th.clear_s)) {
      Finding f = make_finding("D6", Severity::warning, s.t[ep.i0], s.t[ep.i1]);
      f.gpus = {g.index};
      const double p = mean(g.power_w, ep.i0, ep.i1), c = mean(g.power_limit_w, ep.i0, ep.i1);
      const double u = mean(g.util_gpu_pct, ep.i0, ep.i1), dram = mean(g.gpm_dram_pct, ep.i0, ep.i1);
      const double tensor = mean(g.gpm_tensor_pct, ep.i0, ep.i1);
      put(f.numbers, "power_w", p);
      put(f.numbers, "power_limit_w", c);
      put(f.numbers, "mean_util_pct", u);
      put(f.numbers, "gpm_dram_pct", dram);
      put(f.numbers, "gpm_tensor_pct", tensor);
      const bool bw = !na(dram) && dram >= th.dram_bound_pct;
      say(f, "GPU{} draws {} W of its {} W cap ({} %) while utilisation is only {} % over {}", g.index,
          num(p), num(c), num(100.0 * p / c), num(u), dur(s.t[ep.i1] - s.t[ep.i0]));
      if (bw)
        say(f, "; DRAM bandwidth {} % (>= {} %): memory-bandwidth bound", num(dram), num(th.dram_bound_pct));
      else if (!na(dram))
        say(f, "; DRAM bandwidth {} %: power bound", num(dram));
      f.numbers["bandwidth_bound"] = bw ? 1 : 0;
      f.advice =
          bw ? N_("The GPU is limited by memory bandwidth: lower imgsz or use mixed precision (AMP) to move "
                  "fewer bytes; more GPUs will not make one step faster.")
             : N_("The GPU is at its power cap: clocks drop to stay under it. Lower imgsz or batch, check "
                  "`nvidia-smi -q -d POWER` for a lowered limit; more GPUs will not make one step faster.");
      f.thresholds = {{"power_cap_frac", th.power_cap_frac},
                      {"power_bound_util_pct", th.power_bound_util_pct},
                      {"dram_bound_pct", th.dram_bound_pct},
                      {"window_s", th.window_s}};
      out.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace trainmon::diagnose
