// SPDX-License-Identifier: Apache-2.0
// D7 wrong-device (MISSION §4 D7), two signatures:
//  (a) the job's intended GPU (facts.gpus) stays idle (<= idle_util_pct, no job process) for
//      wrong_device_for_s while a job process runs on a GPU outside that list;
//  (b) the job holds memory on a GPU (>= job_gpu_min_mib) that stays idle for held_unused_for_s
//      while another GPU of the job is busy (a stray CUDA context, e.g. every rank touching GPU0).
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "diagnose/detail.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

std::vector<Finding> detect_wrong_device(const RunSeries& s, const Thresholds& th) {
  std::vector<Finding> out;
  const std::size_t n = s.size();
  std::map<unsigned, GpuUse> use;
  std::map<unsigned, std::vector<float>> roll;
  for (const auto& g : s.gpus) {
    use.emplace(g.index, gpu_use(s, g, th));
    roll.emplace(g.index, rolling_mean(s.t, g.util_gpu_pct, th.window_s));
  }
  const auto& intended = s.facts.gpus;
  auto is_intended = [&](unsigned i) {
    return std::find(intended.begin(), intended.end(), i) != intended.end();
  };

  // (a) intended GPU idle while the job runs elsewhere
  if (!intended.empty() && has_job_processes(s)) {
    for (auto idx : intended) {
      const auto* g = s.gpu(idx);
      if (!g) continue;
      std::vector<std::uint8_t> cond(n, 0);
      for (std::size_t i = 0; i < n; ++i) {
        bool elsewhere = false;
        for (const auto& [j, u] : use)
          if (!is_intended(j) && u.used[i]) elsewhere = true;
        const float r = roll[idx][i];
        cond[i] = elsewhere && !use[idx].used[i] && !na(r) && r <= th.idle_util_pct;
      }
      for (const auto& ep : episodes(s.t, cond, th.wrong_device_for_s, th.clear_s)) {
        Finding f = make_finding("D7", Severity::warning, s.t[ep.i0], s.t[ep.i1]);
        std::string where;
        for (const auto& [j, u] : use) {
          if (is_intended(j) || u.used_rows == 0) continue;
          const auto* gj = s.gpu(j);
          const double mu = mean(gj->util_gpu_pct, ep.i0, ep.i1);
          where += fmt::format("{}GPU{} ({} %)", where.empty() ? "" : ", ", j, num(mu));
          f.gpus.push_back(j);
          put(f.numbers, fmt::format("gpu{}_mean_util_pct", j), mu);
          for (auto p : u.pids) f.pids.push_back(p);
        }
        f.gpus.push_back(idx);
        std::sort(f.gpus.begin(), f.gpus.end());
        std::sort(f.pids.begin(), f.pids.end());
        f.pids.erase(std::unique(f.pids.begin(), f.pids.end()), f.pids.end());
        const double mi = mean(g->util_gpu_pct, ep.i0, ep.i1);
        put(f.numbers, fmt::format("gpu{}_mean_util_pct", idx), mi);
        f.numbers["intended_gpu"] = idx;
        f.evidence = fmt::format(
            "intended GPU{} at {} % utilisation with no job process for {} while the job runs on {}", idx,
            num(mi), dur(s.t[ep.i1] - s.t[ep.i0]), where);
        f.advice =
            "The job runs on a GPU it was not meant to use. Check the device argument (a list `[0,1]`, not "
            "the "
            "string '0,1'), CUDA_VISIBLE_DEVICES (it renumbers devices from 0) and torch.cuda.set_device().";
        f.thresholds = {{"idle_util_pct", th.idle_util_pct},
                        {"wrong_device_for_s", th.wrong_device_for_s},
                        {"window_s", th.window_s}};
        out.push_back(std::move(f));
      }
    }
  }

  // (b) memory held by the job on a GPU that stays idle while another job GPU works
  for (const auto& g : s.gpus) {
    const auto& u = use[g.index];
    if (u.used_rows == 0) continue;
    std::vector<std::uint8_t> cond(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      if (!u.used[i]) continue;
      const float r = roll[g.index][i];
      if (na(r) || r > th.idle_util_pct) continue;
      bool other_busy = false;
      for (const auto& [j, uj] : use)
        if (j != g.index && uj.used[i] && !na(roll[j][i]) && roll[j][i] >= th.busy_util_pct)
          other_busy = true;
      cond[i] = other_busy;
    }
    for (const auto& ep : episodes(s.t, cond, th.held_unused_for_s, th.clear_s)) {
      Finding f = make_finding("D7", Severity::warning, s.t[ep.i0], s.t[ep.i1]);
      f.gpus = {g.index};
      std::vector<std::uint32_t> pids;
      for (const auto& p : g.procs)
        if (p.tick >= ep.i0 && p.tick <= ep.i1 && p.in_job) pids.push_back(p.pid);
      std::sort(pids.begin(), pids.end());
      pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
      f.pids = pids;
      const double held = mean(u.job_mem_mib, ep.i0, ep.i1);
      const double mu = mean(g.util_gpu_pct, ep.i0, ep.i1);
      put(f.numbers, "held_mib", held);
      put(f.numbers, "mean_util_pct", mu);
      f.numbers["held_unused"] = 1;
      std::string pid_text;
      for (auto p : pids) pid_text += fmt::format("{}{}", pid_text.empty() ? "" : ",", p);
      f.evidence = fmt::format(
          "job pid {} holds {} MiB on GPU{} for {} while it stays at {} % utilisation and "
          "another GPU of the job is busy",
          pid_text, num(held), g.index, dur(s.t[ep.i1] - s.t[ep.i0]), num(mu));
      f.advice =
          "A GPU the job holds but never uses. Call torch.cuda.set_device(local_rank) before any CUDA work, "
          "set "
          "CUDA_VISIBLE_DEVICES per rank, and load checkpoints with map_location; in a multi-GPU job also "
          "check "
          "that DDP started on every GPU (see D8).";
      f.thresholds = {{"idle_util_pct", th.idle_util_pct},
                      {"busy_util_pct", th.busy_util_pct},
                      {"held_unused_for_s", th.held_unused_for_s},
                      {"job_gpu_min_mib", th.job_gpu_min_mib}};
      out.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace trainmon::diagnose
