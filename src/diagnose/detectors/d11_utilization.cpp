// SPDX-License-Identifier: Apache-2.0
// D11 low-utilization: mean utilisation of each GPU the job used, over the rows it held it (at least
// util_min_span_s): under low_util_pct is waste (warning); low_util_pct..healthy_util_low_pct is
// headroom (info). MISSION §4 D11, §7. One finding per band, naming every GPU in it. A GPU inside
// the healthy band (healthy_util_low_pct and up) gives no finding: "nothing to do" is not one.
#include <array>

#include <fmt/format.h>

#include "diagnose/detail.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

std::vector<Finding> detect_utilization(const RunSeries& s, const Thresholds& th) {
  const ProcPresence presence = proc_presence(s);
  std::vector<Finding> out;
  struct Band {
    std::vector<unsigned> gpus;
    std::vector<double> means;
    double t0 = 1e300, t1 = -1e300;
  };
  std::array<Band, 2> bands;  // waste, headroom
  for (auto idx : job_gpus(s, th)) {
    const auto* g = s.gpu(idx);
    if (!g) continue;
    const auto use = gpu_use(s, *g, th, presence);
    double sum = 0, t0 = -1, t1 = -1;
    std::size_t cnt = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (!use.used[i] || na(g->util_gpu_pct[i])) continue;
      sum += g->util_gpu_pct[i];
      ++cnt;
      if (t0 < 0) t0 = s.t[i];
      t1 = s.t[i];
    }
    if (cnt == 0 || t1 - t0 < th.util_min_span_s) continue;
    const double m = sum / static_cast<double>(cnt);
    int b = -1;
    if (m < th.low_util_pct)
      b = 0;
    else if (m < th.healthy_util_low_pct)
      b = 1;
    if (b < 0) continue;  // healthy (or above): nothing to do, no finding
    auto& band = bands[static_cast<std::size_t>(b)];
    band.gpus.push_back(idx);
    band.means.push_back(m);
    band.t0 = std::min(band.t0, t0);
    band.t1 = std::max(band.t1, t1);
  }
  for (std::size_t b = 0; b < bands.size(); ++b) {
    const auto& band = bands[b];
    if (band.gpus.empty()) continue;
    Finding f = make_finding("D11", b == 0 ? Severity::warning : Severity::info, band.t0, band.t1);
    f.gpus = band.gpus;
    std::string list;
    for (std::size_t k = 0; k < band.gpus.size(); ++k) {
      put(f.numbers, fmt::format("gpu{}_mean_util_pct", band.gpus[k]), band.means[k]);
      list += fmt::format("{}GPU{} {} %", list.empty() ? "" : ", ", band.gpus[k], num(band.means[k]));
    }
    const Phrase what = b == 0 ? phrase("below {} %: most of the GPU time is wasted", num(th.low_util_pct))
                               : phrase("between {} and {} %: there is headroom", num(th.low_util_pct),
                                        num(th.healthy_util_low_pct));
    say(f, "mean utilisation while the job held the GPU: {}; {}", list, what);
    f.advice =
        b == 1
            ? N_("Some headroom left: a larger batch (see D22), more DataLoader workers or AMP can raise "
                 "throughput.")
            : N_("The GPU mostly waits. Look at the other findings (D4/D25 data loading, D18 disk, D19 CPU, "
                 "D2/D8/D24 multi-GPU) for the cause; a larger batch or more workers usually help.");
    // Against a healthy utilisation: the share of the GPU time the job leaves unused (estimated).
    double msum = 0;
    for (double m : band.means) msum += m;
    set_cost(f, 1.0 - msum / static_cast<double>(band.means.size()) / th.healthy_util_high_pct, "estimated");
    f.thresholds = {{"low_util_pct", th.low_util_pct},
                    {"healthy_util_low_pct", th.healthy_util_low_pct},
                    {"healthy_util_high_pct", th.healthy_util_high_pct},
                    {"util_min_span_s", th.util_min_span_s}};
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace trainmon::diagnose
