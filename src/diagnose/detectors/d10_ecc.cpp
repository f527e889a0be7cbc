// SPDX-License-Identifier: Apache-2.0
// D10 ecc-errors: the volatile uncorrected ECC count of a GPU is above 0 (critical; MISSION §4 D10,
// §1: anything but 0/N/A is a hardware fault). The finding says whether it rose during the run.
#include <fmt/format.h>

#include "diagnose/detail.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

std::vector<Finding> detect_ecc(const RunSeries& s, const Thresholds&) {
  std::vector<Finding> out;
  const std::size_t n = s.size();
  if (n == 0) return out;
  for (const auto& g : s.gpus) {
    const auto& c = g.ecc_uncorrected_volatile;
    std::size_t first = n;
    for (std::size_t i = 0; i < n; ++i)
      if (!na(c[i]) && c[i] > 0) {
        first = i;
        break;
      }
    if (first == n) continue;
    const double v0 = first_of(c, 0, n - 1), v1 = last_of(c, 0, n - 1);
    const double corr0 = first_of(g.ecc_corrected_volatile, 0, n - 1),
                 corr1 = last_of(g.ecc_corrected_volatile, 0, n - 1);
    std::size_t lastrow = first;
    for (std::size_t i = first; i < n; ++i)
      if (!na(c[i])) lastrow = i;
    Finding f = make_finding("D10", Severity::critical, s.t[first], s.t[lastrow]);
    f.gpus = {g.index};
    put(f.numbers, "uncorrected_first", v0);
    put(f.numbers, "uncorrected_last", v1);
    put(f.numbers, "corrected_first", corr0);
    put(f.numbers, "corrected_last", corr1);
    f.numbers["rising"] = v1 > v0 ? 1 : 0;
    f.evidence =
        fmt::format("GPU{} volatile uncorrected ECC errors {} (first seen at {:.0f} s){}", g.index, num(v1),
                    s.t[first], v1 > v0 ? fmt::format(", rising from {} during the run", num(v0)) : "");
    if (!na(corr1) && corr1 > 0) f.evidence += fmt::format("; corrected {}", num(corr1));
    f.advice =
        "Uncorrectable memory errors: results on this GPU may be wrong. Stop training on it, save what you "
        "can, and "
        "have an administrator check the hardware (`nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER`, "
        "reset "
        "when idle, RMA if errors return).";
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace trainmon::diagnose
