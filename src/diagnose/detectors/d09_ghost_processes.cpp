// SPDX-License-Identifier: Apache-2.0
// D9 ghost-gpu-process (MISSION §4 D9), two signatures per (GPU, pid):
//  (a) the driver lists the pid holding memory but it has exited (HostVisibility::exited: gone from a
//      /proc that shows every process) or is a zombie, for ghost_for_s. A pid merely not visible from
//      this PID namespace (a container's view: the job's own GPU processes look like that) is no
//      ghost, so it gets no finding and no advice to end it;
//  (b) a process outside the job holds >= job_gpu_min_mib at 0 % SM (or, without per-process SM,
//      on a GPU at <= idle_util_pct) for idle_holder_for_s.
// The advice names the pid and how to end it; trainmon never resets a GPU.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "diagnose/detail.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

std::vector<Finding> detect_ghost_processes(const RunSeries& s, const Thresholds& th) {
  std::vector<Finding> out;
  const std::size_t n = s.size();
  for (const auto& g : s.gpus) {
    std::map<std::uint32_t, std::vector<const GpuProcTick*>> by_pid;
    for (const auto& p : g.procs)
      if (p.tick < n) by_pid[p.pid].push_back(&p);
    for (const auto& [pid, ticks] : by_pid) {
      for (int kind = 0; kind < 2; ++kind) {
        std::vector<std::uint8_t> cond(n, 0);
        bool zombie = false;
        for (const auto* p : ticks) {
          if (kind == 0) {
            const bool ghost = p->host == HostVisibility::exited || p->host == HostVisibility::zombie;
            cond[p->tick] = ghost && (na(p->used_mib) || p->used_mib > 0);
            zombie = zombie || p->host == HostVisibility::zombie;
          } else {
            const bool idle = !na(p->sm_util_pct) ? p->sm_util_pct <= 0
                                                  : (!na(g.util_gpu_pct[p->tick]) &&
                                                     g.util_gpu_pct[p->tick] <= th.idle_util_pct);
            cond[p->tick] = !p->in_job && p->host == HostVisibility::visible && !na(p->used_mib) &&
                            p->used_mib >= th.job_gpu_min_mib && idle;
          }
        }
        const double for_s = kind == 0 ? th.ghost_for_s : th.idle_holder_for_s;
        for (const auto& ep : episodes(s.t, cond, for_s, th.clear_s)) {
          Finding f = make_finding("D9", Severity::warning, s.t[ep.i0], s.t[ep.i1]);
          f.gpus = {g.index};
          f.pids = {pid};
          double mem = 0;
          for (const auto* p : ticks)
            if (p->tick >= ep.i0 && p->tick <= ep.i1 && !na(p->used_mib))
              mem = std::max<double>(mem, p->used_mib);
          put(f.numbers, "used_mib", mem);
          put(f.numbers, "pid", pid);
          if (kind == 0) {
            f.numbers["zombie"] = zombie ? 1 : 0;
            say(f, "pid {} holds {} MiB on GPU{} for {} but is {} on this host", pid, num(mem), g.index,
                dur(s.t[ep.i1] - s.t[ep.i0]),
                zombie ? word("a zombie (exited, not reaped)")
                       : word("gone (exited: no such process on this host)"));
            if (zombie)
              advise(f,
                     "End the zombie's parent so it is reaped: `ps -o ppid= -p {0}` then "
                     "`kill -TERM <ppid>`; the driver frees the memory when pid {0} is gone. "
                     "Do not reset the GPU while other jobs use it.",
                     pid);
            else
              advise(f,
                     "pid {0} has exited but its GPU context is still listed: a process that "
                     "inherited its CUDA file descriptors (a forked DataLoader worker, a child "
                     "process) keeps it alive. `fuser -v /dev/nvidia*` shows who holds the "
                     "device; end that process (`kill -TERM <pid>`). Do not reset the GPU while "
                     "other jobs use it.",
                     pid);
            f.thresholds = {{"ghost_for_s", th.ghost_for_s}};
          } else {
            f.numbers["idle_holder"] = 1;
            say(f, "pid {} (not part of the job) holds {} MiB on GPU{} at 0 % SM for {}", pid, num(mem),
                g.index, dur(s.t[ep.i1] - s.t[ep.i0]));
            advise(f,
                   "Memory held by an idle process (a notebook kernel, a finished script waiting "
                   "for input): ask its owner (`ps -o user,cmd -p {0}`) or end it with `kill -TERM "
                   "{0}`. Never reset a GPU others use.",
                   pid);
            f.thresholds = {{"idle_holder_for_s", th.idle_holder_for_s},
                            {"job_gpu_min_mib", th.job_gpu_min_mib}};
          }
          out.push_back(std::move(f));
        }
      }
    }
  }
  return out;
}

}  // namespace trainmon::diagnose
