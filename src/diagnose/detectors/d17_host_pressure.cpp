// SPDX-License-Identifier: Apache-2.0
// D17 host-memory-pressure: PSI memory "some" avg10 at or above psi_mem_some_pct, or MemAvailable
// under low_available_pct of MemTotal while swap use grows by swap_growth_mib, for pressure_for_s.
#include <fmt/format.h>

#include "diagnose/detail.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

std::vector<Finding> detect_host_pressure(const RunSeries& s, const Thresholds& th) {
  std::vector<Finding> out;
  const auto& h = s.host;
  const std::size_t n = s.size();
  std::vector<std::uint8_t> cond(n, 0), psi(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    psi[i] = !na(h.psi_mem_some_avg10[i]) && h.psi_mem_some_avg10[i] >= th.psi_mem_some_pct;
    const bool low = !na(h.mem_available_mib[i]) && !na(h.mem_total_mib[i]) && h.mem_total_mib[i] > 0 &&
                     100.0 * h.mem_available_mib[i] / h.mem_total_mib[i] < th.low_available_pct;
    cond[i] = psi[i] || low;
  }
  for (const auto& ep : episodes(s.t, cond, th.pressure_for_s, th.clear_s)) {
    bool any_psi = false;
    for (std::size_t i = ep.i0; i <= ep.i1; ++i) any_psi = any_psi || psi[i];
    const double sw0 = first_of(h.swap_used_mib, ep.i0, ep.i1), sw1 = max_of(h.swap_used_mib, ep.i0, ep.i1);
    const double growth = sw1 - sw0;
    const bool swapping = !na(growth) && growth >= th.swap_growth_mib;
    if (!any_psi && !swapping) continue;
    Finding f = make_finding("D17", Severity::warning, s.t[ep.i0], s.t[ep.i1]);
    const double psi_max = max_of(h.psi_mem_some_avg10, ep.i0, ep.i1);
    const double avail = min_of(h.mem_available_mib, ep.i0, ep.i1),
                 total = last_of(h.mem_total_mib, ep.i0, ep.i1);
    put(f.numbers, "psi_mem_some_avg10_max", psi_max);
    put(f.numbers, "available_min_mib", avail);
    put(f.numbers, "total_mib", total);
    put(f.numbers, "swap_growth_mib", growth);
    say(f, "host memory pressure for {}", dur(s.t[ep.i1] - s.t[ep.i0]));
    if (!na(psi_max)) say(f, ": PSI memory some avg10 up to {} %", num(psi_max, 1));
    if (!na(avail) && !na(total)) say(f, "; MemAvailable down to {} of {} MiB", num(avail), num(total));
    if (swapping) say(f, "; swap grew {} MiB", num(growth));
    if (s.facts.root_pid) f.pids = {s.facts.root_pid};
    f.advice = N_(
        "Processes stall waiting for memory. Lower DataLoader workers (each copies the dataset object), use "
        "`cache: disk` instead of `cache: ram`, stop other memory users, and look for a leak (D3).");
    f.thresholds = {{"psi_mem_some_pct", th.psi_mem_some_pct},
                    {"low_available_pct", th.low_available_pct},
                    {"swap_growth_mib", th.swap_growth_mib},
                    {"pressure_for_s", th.pressure_for_s}};
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace trainmon::diagnose
