// SPDX-License-Identifier: Apache-2.0
// D10 ecc-errors: the volatile uncorrected ECC count of a GPU is above 0 (critical; MISSION §4 D10,
// §1: anything but 0/N/A is a hardware fault). The finding says whether it rose during the run; a
// count that drops is a reset of the counter (driver reload), and the highest count is kept.
#include <fmt/format.h>

#include "diagnose/advice.h"
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
    // The counts are cumulative since the driver loaded: a drop is a reset (driver reload, GPU
    // reset), never errors going away. The highest count seen is the one reported.
    const CounterSpan u = counter_span(c, 0, n - 1);
    const CounterSpan corr = counter_span(g.ecc_corrected_volatile, 0, n - 1);
    std::size_t lastrow = first;
    for (std::size_t i = first; i < n; ++i)
      if (!na(c[i])) lastrow = i;
    Finding f = make_finding("D10", Severity::critical, s.t[first], s.t[lastrow]);
    f.gpus = {g.index};
    put(f.numbers, "uncorrected_first", u.first);
    put(f.numbers, "uncorrected_last", u.last);
    put(f.numbers, "uncorrected_highest", u.highest);
    put(f.numbers, "uncorrected_increase", u.increase);
    put(f.numbers, "corrected_first", corr.first);
    put(f.numbers, "corrected_last", corr.last);
    put(f.numbers, "corrected_highest", corr.highest);
    f.numbers["counter_resets"] = static_cast<double>(u.resets + corr.resets);
    f.numbers["rising"] = u.increase > 0 ? 1 : 0;
    say(f, "GPU{} volatile uncorrected ECC errors {} (first seen at {:.0f} s){}", g.index, num(u.highest),
        s.t[first],
        u.increase > 0 && u.resets == 0 ? phrase(", rising from {} during the run", num(u.first))
        : u.increase > 0                ? phrase(", {} more during the run", num(u.increase))
                                        : Phrase{});
    if (u.resets > 0)
      say(f,
          "; the counter was reset at {:.0f} s (driver reload or GPU reset: {} before, {} now); the "
          "highest count is kept",
          s.t[u.first_reset_row], num(u.before_reset), num(u.last));
    if (!na(corr.highest) && corr.highest > 0) {
      say(f, "; corrected {}", num(corr.highest));
      if (corr.resets > 0) say(f, " (highest seen; that counter was reset too)");
    }
    f.advice = std::string(advice::kD10Ecc);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace trainmon::diagnose
