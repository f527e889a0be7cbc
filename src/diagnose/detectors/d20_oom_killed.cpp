// SPDX-License-Identifier: Apache-2.0
// D20 oom-killed: the kernel's OOM killer ended a process of the job. One finding per kill:
//  - each rise of the job's OOM kill count (JobSeries::oom_kills: memory.events oom_kill, v1
//    memory.oom_control, read by `run` every tick), naming the process of the job last seen alive
//    just before it (the largest RSS among those gone then) with its RSS at its last tick;
//  - the job's end by JobFacts::oom_killed, or SIGKILL while MemAvailable was under low_available_pct
//    in the last window_s (MISSION §4 D3: "Killed" on the terminal after hours), naming the main process,
//    when no counted kill already named it.
// The limit hit is the job's memory cgroup limit (JobFacts::oom_at_cgroup_limit, or the killed
// job has a limit and the host's memory was not low at a counted kill: a container, systemd or Slurm
// limit) or else the host's RAM; the evidence and the advice name that limit. link_causes links the
// leak (D3) that led to it.
#include <fmt/format.h>

#include "diagnose/detail.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

namespace {

/// The process of the job the kill counted at `row` ended: of those alive at `prev_row` (the count's
/// previous reading) that were gone within two rows after `row` (a process being killed can still be
/// listed, freeing its memory, at the row the count rose), the one with the largest RSS at `prev_row`;
/// nullptr when none.
const JobProcess* killed_at(const RunSeries& s, std::size_t prev_row, std::size_t row) {
  const std::size_t n = s.size();
  const double gone_by = s.t[std::min(n - 1, row + 2)];
  const JobProcess* best = nullptr;
  float best_rss = -1;
  for (const auto& p : s.job.procs) {
    if (p.last_t < s.t[prev_row] - 1e-9 || p.first_t > s.t[prev_row] + 1e-9) continue;
    if (p.last_t > gone_by + 1e-9 || (p.last_t >= s.t[n - 1] - 1e-9 && row + 2 < n)) continue;
    const float rss = job_process_rss_at(p, prev_row);
    if (!best || (!na(rss) && (na(best_rss) || rss > best_rss))) {
      best = &p;
      best_rss = rss;
    }
  }
  return best;
}

}  // namespace

std::vector<Finding> detect_oom_killed(const RunSeries& s, const Thresholds& th) {
  std::vector<Finding> out;
  const std::size_t n = s.size();
  if (n == 0) return out;
  const auto& h = s.host;
  const std::size_t tail = row_at(s, s.t[n - 1] - th.window_s);
  const double avail_min = min_of(h.mem_available_mib, tail, n - 1),
               total = last_of(h.mem_total_mib, 0, n - 1);
  const bool low =
      !na(avail_min) && !na(total) && total > 0 && 100.0 * avail_min / total < th.low_available_pct;
  const bool sigkill_low = s.facts.signal && *s.facts.signal == 9 && low;

  // `rss_row`: the row whose RSS is the killed process's (its last before the kill); n: its last row
  auto emit = [&](std::size_t row, const JobProcess* p, double kills, bool root_end, std::size_t rss_row) {
    Finding f = make_finding("D20", Severity::critical, s.t[row], s.t[row]);
    const std::uint32_t pid = p ? p->pid : root_end ? s.facts.root_pid : 0;
    if (pid) f.pids = {pid};
    const JobProcessKind kind = p          ? job_process_kind(s, *p)
                                : root_end ? JobProcessKind::main
                                           : JobProcessKind::other;
    double rss = NAN;
    std::size_t last_row = row;
    if (p && !p->rss_rows.empty()) {
      // its own RSS before the kill (not the job's after it)
      rss = rss_row < n ? job_process_rss_at(*p, rss_row) : p->rss_mib.back();
      last_row = rss_row < n ? rss_row : p->rss_rows.back();
    } else if (root_end) {
      rss = max_of(s.job.rss_mib, 0, n - 1);  // no process rows: the job's peak
    }
    const std::size_t r0 = row_at(s, s.t[row] - th.window_s);
    double limit = last_of(s.job.memory_limit_mib, 0, row);
    if (na(limit) && s.facts.cgroup_memory_limit_mib) limit = *s.facts.cgroup_memory_limit_mib;
    const double avail = min_of(h.mem_available_mib, r0, row);
    // At the cgroup's limit: the run's verdict says so (the end), or (a kill counted during the run: the
    // count counts kills of any OOM killer) the job has a limit and the host's memory was not low.
    const bool host_low =
        !na(avail) && !na(total) && total > 0 && 100.0 * avail / total < th.low_available_pct;
    const bool at_limit = !na(limit) && (root_end ? s.facts.oom_at_cgroup_limit : !host_low);
    if (p) f.numbers["killed_pid"] = p->pid;
    if (pid) f.numbers["killed_kind"] = static_cast<double>(kind);
    put(f.numbers, "killed_rss_mib", rss);
    put(f.numbers, "job_rss_peak_mib", max_of(s.job.rss_mib, 0, std::min(last_row, n - 1)));
    put(f.numbers, "available_min_mib", avail_min);
    put(f.numbers, "total_mib", total);
    if (kills > 0) put(f.numbers, "kills", kills);
    if (s.facts.signal && (root_end || (pid && pid == s.facts.root_pid)))
      f.numbers["signal"] = *s.facts.signal;
    if (!na(limit)) put(f.numbers, "cgroup_memory_limit_mib", limit);
    f.numbers["at_cgroup_limit"] = at_limit ? 1 : 0;
    const Phrase who = pid ? phrase("the {} pid {}", word(job_process_kind_name(kind)), pid)
                           : phrase("a process of the job");
    if (root_end && !s.facts.oom_killed && kills <= 0)
      say(f, "the job got SIGKILL while host memory was nearly exhausted (likely the OOM killer)");
    else if (at_limit)
      say(f, "the kernel OOM killer ended {} at its memory cgroup's limit of {} MiB", who, num(limit));
    else
      say(f, "the kernel OOM killer ended {} (host memory ran out)", who);
    if (!na(rss)) say(f, "; it had {} MiB RSS", num(rss));
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
                 "for a leak (D3), lower DataLoader workers and prefetch_factor, use `cache: disk` instead "
                 "of "
                 "`cache: ram` (page cache counts towards the limit too).")
            : N_("Host RAM ran out (`Killed`, `dmesg | grep -i oom`). Check for a leak (D3), lower "
                 "DataLoader "
                 "workers "
                 "and prefetch_factor, use `cache: disk` instead of `cache: ram`, or raise the job's memory "
                 "limit.");
    f.thresholds = {{"low_available_pct", th.low_available_pct}, {"window_s", th.window_s}};
    out.push_back(std::move(f));
  };

  // ---- each counted kill ----
  bool root_named = false;
  double prev = NAN;
  std::size_t prev_row = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float k = s.job.oom_kills[i];
    if (na(k)) continue;
    if (!na(prev) && k > prev) {
      const JobProcess* p = killed_at(s, prev_row, i);
      root_named = root_named || (p && p->pid == s.facts.root_pid);
      emit(i, p, k - prev, false, prev_row);
    }
    prev = k;
    prev_row = i;
  }
  // ---- kills after the last tick (the count read when the command had exited) ----
  double extra = s.facts.oom_kills_at_end ? *s.facts.oom_kills_at_end - (na(prev) ? 0.0 : prev) : 0.0;
  const bool root_end = (s.facts.oom_killed || sigkill_low) && !root_named;
  if (root_end && extra > 0) extra -= 1;  // the main process's own kill, named below
  if (extra > 0) {
    // the largest process of the job other than the main one, alive at its last ticks
    const JobProcess* best = nullptr;
    for (const auto& p : s.job.procs) {
      if (p.pid == s.facts.root_pid || p.rss_mib.empty() || p.last_t < s.t[prev_row] - 1e-9) continue;
      if (!best || p.rss_mib.back() > best->rss_mib.back()) best = &p;
    }
    emit(n - 1, best, extra, false, n);
  }
  // ---- the job's end ----
  if (root_end) {
    const JobProcess* root = s.facts.root_pid ? s.job.proc(s.facts.root_pid) : nullptr;
    std::size_t row = n - 1;
    if (root && !root->rss_rows.empty()) row = std::min<std::size_t>(n - 1, root->rss_rows.back() + 1);
    emit(row, root, 0, true, n);
  }
  return out;
}

}  // namespace trainmon::diagnose
