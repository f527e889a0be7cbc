// SPDX-License-Identifier: Apache-2.0
// D15 memory-retirement: GPU memory health from page retirement (pre-Ampere) and row remapping
// (Ampere+): a remapping failure is critical; a pending retirement/remap (needs a GPU reset), rows
// remapped for uncorrectable errors, or retired pages increasing during the run are warnings.
#include <fmt/format.h>

#include "diagnose/detail.h"
#include "diagnose/detail_plural.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

std::vector<Finding> detect_memory_retirement(const RunSeries& s, const Thresholds&) {
  std::vector<Finding> out;
  const std::size_t n = s.size();
  if (n == 0) return out;
  for (const auto& g : s.gpus) {
    const double fail = max_of(g.remapped_failure, 0, n - 1);
    const double rpend = max_of(g.remapped_pending, 0, n - 1);
    const double ppend = max_of(g.retired_pending, 0, n - 1);
    // Counters: a drop is a reset (a GPU reset or swap), not a repair; the highest count is kept.
    const double unc = max_of(g.remapped_unc, 0, n - 1);
    const double cor = max_of(g.remapped_cor, 0, n - 1);
    const CounterSpan pages = counter_span(g.retired_pages, 0, n - 1);
    const double pages0 = pages.first, pages1 = pages.highest;
    const bool pages_up = !na(pages.increase) && pages.increase > 0;
    const bool is_fail = fail > 0, pending = rpend > 0 || ppend > 0, unc_rows = unc > 0;
    if (!is_fail && !pending && !unc_rows && !pages_up) continue;
    // first row where any of the conditions holds
    std::size_t first = n - 1;
    for (std::size_t i = 0; i < n; ++i) {
      if (g.remapped_failure[i] > 0 || g.remapped_pending[i] > 0 || g.retired_pending[i] > 0 ||
          g.remapped_unc[i] > 0 || (pages_up && i > 0 && g.retired_pages[i] > g.retired_pages[i - 1])) {
        first = i;
        break;
      }
    }
    Finding f = make_finding("D15", is_fail ? Severity::critical : Severity::warning, s.t[first], s.t[n - 1]);
    f.gpus = {g.index};
    put(f.numbers, "remapped_failure", fail);
    put(f.numbers, "remapped_pending", rpend);
    put(f.numbers, "retired_pending", ppend);
    put(f.numbers, "remapped_uncorrectable_rows", unc);
    put(f.numbers, "remapped_correctable_rows", cor);
    put(f.numbers, "retired_pages_first", pages0);
    put(f.numbers, "retired_pages_last", pages1);
    Phrase what;
    auto add = [&what](const Phrase& x) {
      if (!what.empty()) what += phrase("; ");
      what += x;
    };
    if (is_fail) add(phrase("row remapping FAILED"));
    if (rpend > 0) add(phrase("a row remap is pending (takes effect at the next GPU reset)"));
    if (ppend > 0) add(phrase("a page retirement is pending (takes effect at the next GPU reset)"));
    if (unc_rows)
      add(phrasen(num(unc) == "1" ? 1 : 2, "{} row remapped for uncorrectable errors",
                  "{} rows remapped for uncorrectable errors", num(unc)));
    if (pages_up)
      add(pages.resets == 0 ? phrase("retired pages {} -> {} during the run", num(pages0), num(pages1))
                            : phrase("{} pages retired during the run (highest count {}; the counter was "
                                     "reset at {:.0f} s)",
                                     num(pages.increase), num(pages1), s.t[pages.first_reset_row]));
    say(f, "GPU{} memory health: {}", g.index, what);
    f.advice =
        is_fail
            ? N_("The GPU ran out of spare memory rows: drain it and contact support (RMA).")
            : N_("Finish or stop the job, then have the GPU reset while idle so the remap/retirement takes "
                 "effect (`nvidia-smi -q -d ROW_REMAPPER,PAGE_RETIREMENT`); report it if it keeps growing.");
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace trainmon::diagnose
