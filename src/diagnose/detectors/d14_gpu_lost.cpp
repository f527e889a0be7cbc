// SPDX-License-Identifier: Apache-2.0
// D14 gpu-lost: a GPU stops answering (NVML_ERROR_GPU_IS_LOST, hung calls past the deadline, whole-
// device failures, or missing from the snapshot after having been there), or never answered at all
// (hung from the first tick). Critical from the first such row; the finding runs until the GPU
// answers again (or the run ends). Hung calls while the host is short of memory or CPU are a late
// answer (a warning) until they have kept failing for gpu_late_max_s, also while they still fail: the
// live diagnosis, which sees the episode before it ends, says "late" first and "lost" only then.
#include <fmt/format.h>

#include <cmath>

#include "diagnose/advice.h"
#include "diagnose/detail.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

namespace {

/// Whether the GPU answered in any row before `i`: state ok with a value (a row the sampler did not
/// judge, a GPU slower than the tick, reads as ok without any).
bool answered_before(const GpuSeries& g, std::size_t i) {
  for (std::size_t k = 0; k < i && k < g.state.size(); ++k) {
    if (g.state[k] != GpuState::ok) continue;
    const bool util = k < g.util_gpu_pct.size() && !std::isnan(g.util_gpu_pct[k]);
    const bool mem = k < g.mem_used_mib.size() && !std::isnan(g.mem_used_mib[k]);
    if (util || mem) return true;
  }
  return false;
}

}  // namespace

std::vector<Finding> detect_gpu_lost(const RunSeries& s, const Thresholds& th) {
  std::vector<Finding> out;
  const std::size_t n = s.size();
  for (const auto& g : s.gpus) {
    // A GPU that never answered at all (hung from the start: its rows are timeouts from the first
    // one) is as unresponsive as one that stopped; only "absent" needs an earlier row (a GPU added
    // to the system later is absent before, not lost).
    std::vector<std::uint8_t> cond(n, 0);
    bool seen = false;
    for (std::size_t i = 0; i < n; ++i) {
      const auto st = g.state[i];
      if (st != GpuState::absent) seen = true;
      cond[i] = st == GpuState::absent ? seen : st != GpuState::ok;
    }
    for (const auto& ep : episodes(s.t, cond, 0, th.clear_s)) {
      // A GPU with no value in any row before the episode never answered: its rows before were only
      // "not collected yet" (slower than the tick), so the finding starts with its first row.
      const bool never = !answered_before(g, ep.i0);
      std::size_t first = ep.i0;
      if (never) {
        first = 0;
        while (first < ep.i0 && g.state[first] == GpuState::absent) ++first;
      }
      // A late answer is not a lost GPU: calls that hung (never "lost") and answered again within
      // gpu_late_max_s while the host was short of memory or CPU (D17's, D19's thresholds, within a
      // window around it) are the host's problem (docs/diagnosis.md "D14 under host pressure"). So
      // are such calls that still fail at the last row but for no longer than gpu_late_max_s: the live
      // diagnosis evaluates while they hang, and a call that answers 3 s late is no lost GPU in the
      // meantime (issue 34: "GPU lost" announced for one late call). Past gpu_late_max_s it is lost.
      bool only_timeouts = true;
      for (std::size_t i = ep.i0; i <= ep.i1; ++i)
        if (g.state[i] != GpuState::timeout && g.state[i] != GpuState::ok) only_timeouts = false;
      const std::size_t w0 = row_at(s, s.t[ep.i0] - th.window_s),
                        w1 = std::min(n - 1, row_at(s, s.t[ep.i1] + th.window_s));
      const double psi = max_of(s.host.psi_mem_some_avg10, w0, w1),
                   avail = min_of(s.host.mem_available_mib, w0, w1),
                   total = last_of(s.host.mem_total_mib, w0, w1), cpu = max_of(s.host.cpu_busy_pct, w0, w1);
      const bool mem_pressure =
          (!na(psi) && psi >= th.psi_mem_some_pct) ||
          (!na(avail) && !na(total) && total > 0 && 100 * avail / total < th.low_available_pct);
      const bool cpu_starved = !na(cpu) && cpu >= th.cpu_saturated_pct;
      const bool answered_again = ep.i1 + 1 < n;
      const bool late = !never && only_timeouts && s.t[ep.i1] - s.t[ep.i0] <= th.gpu_late_max_s &&
                        (mem_pressure || cpu_starved);
      if (late) {
        Finding f = make_finding("D14", Severity::warning, s.t[ep.i0], s.t[ep.i1]);
        f.gpus = {g.index};
        f.numbers["host_pressure"] = 1;
        f.numbers["answered_again"] = answered_again ? 1 : 0;
        put(f.numbers, "late_s", s.t[ep.i1] - s.t[ep.i0]);
        put(f.numbers, "psi_mem_some_avg10_max", psi);
        put(f.numbers, "available_min_mib", avail);
        put(f.numbers, "cpu_busy_max_pct", cpu);
        const Word short_of = mem_pressure ? word("short of memory") : word("short of CPU");
        if (answered_again)
          say(f,
              "GPU{} answered late at {:.0f} s (NVML calls past the deadline for {}, then answered again) "
              "while "
              "the host was {}",
              g.index, s.t[ep.i0], dur(s.t[ep.i1] - s.t[ep.i0]), short_of);
        else
          say(f,
              "GPU{} has been answering late since {:.0f} s (NVML calls past the deadline for {} so far, "
              "lost if they keep failing for {}) while the host is {}",
              g.index, s.t[ep.i0], dur(s.t[ep.i1] - s.t[ep.i0]), dur(th.gpu_late_max_s), short_of);
        if (mem_pressure && !na(psi)) say(f, " (PSI memory some avg10 up to {} %)", num(psi, 1));
        if (!mem_pressure) say(f, " (CPU busy up to {} %)", num(cpu));
        f.advice =
            N_("Not a lost GPU: the driver answered late because the host was short of memory or CPU (see "
               "the cause). Fix the host's pressure; the GPU needs no reset. A GPU that keeps failing is "
               "reported as lost.");
        f.thresholds = {{"gpu_late_max_s", th.gpu_late_max_s},
                        {"psi_mem_some_pct", th.psi_mem_some_pct},
                        {"low_available_pct", th.low_available_pct},
                        {"cpu_saturated_pct", th.cpu_saturated_pct},
                        {"window_s", th.window_s}};
        out.push_back(std::move(f));
        continue;
      }
      Finding f = make_finding("D14", Severity::critical, s.t[first], s.t[ep.i1]);
      f.gpus = {g.index};
      int lost = 0, timeout = 0, other = 0;
      for (std::size_t i = ep.i0; i <= ep.i1; ++i) {
        if (g.state[i] == GpuState::lost)
          ++lost;
        else if (g.state[i] == GpuState::timeout)
          ++timeout;
        else if (g.state[i] != GpuState::ok)
          ++other;
      }
      const double before = ep.i0 > 0 ? last_of(g.util_gpu_pct, 0, ep.i0 - 1) : NAN;
      const bool recovered = ep.i1 + 1 < n;
      put(f.numbers, "lost_rows", lost);
      put(f.numbers, "timeout_rows", timeout);
      put(f.numbers, "failed_rows", other);
      put(f.numbers, "util_before_pct", before);
      f.numbers["recovered"] = recovered ? 1 : 0;
      const Word why = lost      ? word("NVML reports the GPU is lost (fallen off the bus)")
                       : timeout ? word("NVML calls hang past the deadline")
                                 : word("the device fails every query");
      f.numbers["never_answered"] = never ? 1 : 0;
      if (never)
        say(f, "GPU{} has not responded since {} ({:.0f} s): {}, for {}{}", g.index,
            first == 0 ? word("the start") : word("it appeared"), s.t[first], why,
            dur(s.t[ep.i1] - s.t[first]), recovered ? word(" (then answered)") : word(" until the end"));
      else
        say(f, "GPU{} stopped responding at {:.0f} s: {}, for {}{}", g.index, s.t[ep.i0], why,
            dur(s.t[ep.i1] - s.t[ep.i0]),
            recovered ? word(" (then answered again)") : word(" until the end"));
      if (!na(before)) say(f, "; utilisation before: {} %", num(before));
      for (const auto& e : s.gpu_events)
        if (e.gpu == g.index && e.xid == 79 && e.t >= s.t[ep.i0] - th.window_s &&
            e.t <= s.t[ep.i1] + th.window_s)
          say(f, "; Xid 79 reported");
      f.advice = std::string(advice::kD14Lost);
      f.thresholds = {{"clear_s", th.clear_s}};
      out.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace trainmon::diagnose
