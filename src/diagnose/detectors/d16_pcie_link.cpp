// SPDX-License-Identifier: Apache-2.0
// D16 pcie-link-degraded: the PCIe link runs below its maximum generation or width while the GPU is
// under load (utilisation >= busy_util_pct) for pcie_for_s. Links downclock when idle, so idle rows
// never count.
#include <fmt/format.h>

#include "diagnose/detail.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

std::vector<Finding> detect_pcie_link(const RunSeries& s, const Thresholds& th) {
  std::vector<Finding> out;
  const std::size_t n = s.size();
  for (const auto& g : s.gpus) {
    std::vector<std::uint8_t> cond(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const float u = g.util_gpu_pct[i];
      if (na(u) || u < th.busy_util_pct) continue;
      const bool gen = !na(g.pcie_gen[i]) && !na(g.pcie_gen_max[i]) && g.pcie_gen[i] < g.pcie_gen_max[i];
      const bool width =
          !na(g.pcie_width[i]) && !na(g.pcie_width_max[i]) && g.pcie_width[i] < g.pcie_width_max[i];
      cond[i] = gen || width;
    }
    for (const auto& ep : episodes(s.t, cond, th.pcie_for_s, th.clear_s)) {
      Finding f = make_finding("D16", Severity::warning, s.t[ep.i0], s.t[ep.i1]);
      f.gpus = {g.index};
      const double gen = min_of(g.pcie_gen, ep.i0, ep.i1), gmax = last_of(g.pcie_gen_max, ep.i0, ep.i1);
      const double w = min_of(g.pcie_width, ep.i0, ep.i1), wmax = last_of(g.pcie_width_max, ep.i0, ep.i1);
      put(f.numbers, "gen", gen);
      put(f.numbers, "gen_max", gmax);
      put(f.numbers, "width", w);
      put(f.numbers, "width_max", wmax);
      put(f.numbers, "mean_util_pct", mean(g.util_gpu_pct, ep.i0, ep.i1));
      say(f, "GPU{} PCIe link at Gen{} x{} of Gen{} x{} under load ({} % utilisation) for {}", g.index,
          num(gen), num(w), num(gmax), num(wmax), num(mean(g.util_gpu_pct, ep.i0, ep.i1)),
          dur(s.t[ep.i1] - s.t[ep.i0]));
      f.advice =
          N_("Host-to-GPU transfers are slower than they should be: reseat the card or riser, check the slot "
             "(x8 wiring, shared lanes), BIOS PCIe settings and `lspci -vv` LnkSta; look for PCIe replay "
             "errors.");
      f.thresholds = {{"pcie_for_s", th.pcie_for_s}, {"busy_util_pct", th.busy_util_pct}};
      out.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace trainmon::diagnose
