// SPDX-License-Identifier: Apache-2.0
// D20 oom-killed: the kernel's OOM killer ended the job: JobFacts::oom_killed, a rise of the cgroup
// oom_kill counter, or SIGKILL while MemAvailable was under low_available_pct in the last window_s
// (MISSION §4 D3: "Killed" on the terminal after hours). When the kill was at the job's memory
// cgroup limit (JobFacts::oom_at_cgroup_limit: a container, systemd or Slurm limit) the evidence and
// the advice name that limit, not the host's RAM, which had room.
#include <fmt/format.h>

#include "diagnose/detail.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

std::vector<Finding> detect_oom_killed(const RunSeries& s, const Thresholds& th) {
  std::vector<Finding> out;
  const std::size_t n = s.size();
  if (n == 0) return out;
  const auto& h = s.host;
  std::size_t kill_row = n;
  const double k0 = first_of(s.job.oom_kills, 0, n - 1);
  for (std::size_t i = 0; i < n && !na(k0); ++i)
    if (!na(s.job.oom_kills[i]) && s.job.oom_kills[i] > k0) {
      kill_row = i;
      break;
    }
  const std::size_t tail = row_at(s, s.t[n - 1] - th.window_s);
  const double avail_min = min_of(h.mem_available_mib, tail, n - 1),
               total = last_of(h.mem_total_mib, 0, n - 1);
  const bool low =
      !na(avail_min) && !na(total) && total > 0 && 100.0 * avail_min / total < th.low_available_pct;
  const bool sigkill_low = s.facts.signal && *s.facts.signal == 9 && low;
  if (!s.facts.oom_killed && kill_row == n && !sigkill_low) return out;
  const std::size_t row = kill_row < n ? kill_row : n - 1;
  Finding f = make_finding("D20", Severity::critical, s.t[row], s.t[row]);
  if (s.facts.root_pid) f.pids = {s.facts.root_pid};
  const double rss = max_of(s.job.rss_mib, 0, n - 1);
  put(f.numbers, "job_rss_peak_mib", rss);
  put(f.numbers, "available_min_mib", avail_min);
  put(f.numbers, "total_mib", total);
  if (s.facts.signal) f.numbers["signal"] = *s.facts.signal;
  const bool at_limit = s.facts.oom_at_cgroup_limit && s.facts.cgroup_memory_limit_mib;
  if (s.facts.cgroup_memory_limit_mib)
    put(f.numbers, "cgroup_memory_limit_mib", *s.facts.cgroup_memory_limit_mib);
  if (at_limit)
    say(f, "the kernel OOM killer ended the job at its memory cgroup's limit of {} MiB",
        num(*s.facts.cgroup_memory_limit_mib));
  else if (s.facts.oom_killed)
    say(f, "the kernel OOM killer ended the job");
  else if (kill_row < n)
    say(f, "the job's cgroup counted an OOM kill at {:.0f} s", s.t[kill_row]);
  else
    say(f, "the job got SIGKILL while host memory was nearly exhausted (likely the OOM killer)");
  if (!na(rss)) say(f, "; job RSS peaked at {} MiB", num(rss));
  if (!na(avail_min) && !na(total)) {
    if (at_limit)
      say(f, "; the host still had {} of {} MiB available", num(avail_min), num(total));
    else
      say(f, "; MemAvailable down to {} of {} MiB", num(avail_min), num(total));
  }
  f.advice =
      at_limit
          ? N_("The job's memory cgroup limit was reached, not the host's RAM (`dmesg | grep -i oom` says "
               "\"Memory cgroup out of memory\"). Raise the limit (`docker run --memory`, Kubernetes "
               "`resources.limits.memory`, systemd `MemoryMax=`, Slurm `--mem`) or make the job use less: "
               "check "
               "for a leak (D3), lower DataLoader workers and prefetch_factor, use `cache: disk` instead of "
               "`cache: ram` (page cache counts towards the limit too).")
          : N_("Host RAM ran out (`Killed`, `dmesg | grep -i oom`). Check for a leak (D3), lower DataLoader "
               "workers "
               "and prefetch_factor, use `cache: disk` instead of `cache: ram`, or raise the job's memory "
               "limit.");
  f.thresholds = {{"low_available_pct", th.low_available_pct}, {"window_s", th.window_s}};
  out.push_back(std::move(f));
  return out;
}

}  // namespace trainmon::diagnose
