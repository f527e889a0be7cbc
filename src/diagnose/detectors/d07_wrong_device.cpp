// SPDX-License-Identifier: Apache-2.0
// D7 wrong-device (MISSION §4 D7), two signatures:
//  (a) the job's intended GPU (facts.gpus) stays idle (<= idle_util_pct, no job process) for
//      wrong_device_for_s while a job process runs on a GPU outside that list;
//  (b) the job holds memory on a GPU (>= job_gpu_min_mib) that stays idle for held_unused_for_s
//      while another GPU of the job is busy (a stray CUDA context, e.g. every rank touching GPU0).
#include <algorithm>

#include <fmt/format.h>

#include "diagnose/advice.h"
#include "diagnose/detail.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

std::vector<Finding> detect_wrong_device(const RunSeries& s, const Thresholds& th) {
  const ProcPresence presence = proc_presence(s);
  std::vector<Finding> out;
  const std::size_t n = s.size();
  // Per GPU, in ascending index order (the order findings list them in); vectors, not maps: the
  // loops below look at every GPU on every row.
  std::vector<const GpuSeries*> gpus;
  for (const auto& g : s.gpus) gpus.push_back(&g);
  std::sort(gpus.begin(), gpus.end(),
            [](const GpuSeries* a, const GpuSeries* b) { return a->index < b->index; });
  std::vector<GpuUse> use;
  std::vector<std::vector<float>> roll;
  for (const auto* g : gpus) {
    use.push_back(gpu_use(s, *g, th, presence));
    roll.push_back(rolling_mean(s.t, g->util_gpu_pct, th.window_s));
  }
  auto pos_of = [&](unsigned idx) {
    return static_cast<std::size_t>(
        std::find_if(gpus.begin(), gpus.end(), [&](const GpuSeries* g) { return g->index == idx; }) -
        gpus.begin());
  };
  const auto& intended = s.facts.gpus;
  auto is_intended = [&](unsigned i) {
    return std::find(intended.begin(), intended.end(), i) != intended.end();
  };

  // (a) intended GPU idle while the job runs elsewhere
  if (!intended.empty() && presence.job) {
    std::vector<std::uint8_t> elsewhere(n, 0);  // the job holds a GPU it was not meant to use
    for (std::size_t k = 0; k < gpus.size(); ++k) {
      if (is_intended(gpus[k]->index)) continue;
      for (std::size_t i = 0; i < n; ++i) elsewhere[i] |= use[k].used[i];
    }
    for (auto idx : intended) {
      const auto* g = s.gpu(idx);
      if (!g) continue;
      const std::size_t k = pos_of(idx);
      std::vector<std::uint8_t> cond(n, 0);
      for (std::size_t i = 0; i < n; ++i) {
        const float r = roll[k][i];
        cond[i] = elsewhere[i] && !use[k].used[i] && !na(r) && r <= th.idle_util_pct;
      }
      for (const auto& ep : episodes(s.t, cond, th.wrong_device_for_s, th.clear_s)) {
        Finding f = make_finding("D7", Severity::warning, s.t[ep.i0], s.t[ep.i1]);
        std::string where;
        for (std::size_t kj = 0; kj < gpus.size(); ++kj) {
          const unsigned j = gpus[kj]->index;
          const GpuUse& u = use[kj];
          if (is_intended(j) || u.used_rows == 0) continue;
          const auto* gj = gpus[kj];
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
        say(f, "intended GPU{} at {} % utilisation with no job process for {} while the job runs on {}", idx,
            num(mi), dur(s.t[ep.i1] - s.t[ep.i0]), where);
        f.advice = N_(
            "The job runs on a GPU it was not meant to use. Check the device argument (a list `[0,1]`, not "
            "the "
            "string '0,1'), CUDA_VISIBLE_DEVICES (it renumbers devices from 0) and torch.cuda.set_device().");
        f.thresholds = {{"idle_util_pct", th.idle_util_pct},
                        {"wrong_device_for_s", th.wrong_device_for_s},
                        {"window_s", th.window_s}};
        out.push_back(std::move(f));
      }
    }
  }

  // (b) memory held by the job on a GPU that stays idle while another job GPU works
  auto busy_at = [&](std::size_t k, std::size_t i) {
    return use[k].used[i] && !na(roll[k][i]) && roll[k][i] >= th.busy_util_pct;
  };
  std::vector<unsigned> busy_gpus(n, 0);  // job GPUs busy at each row
  for (std::size_t k = 0; k < gpus.size(); ++k)
    for (std::size_t i = 0; i < n; ++i) busy_gpus[i] += busy_at(k, i) ? 1 : 0;
  for (std::size_t k = 0; k < gpus.size(); ++k) {
    const GpuSeries& g = *gpus[k];
    const auto& u = use[k];
    if (u.used_rows == 0) continue;
    std::vector<std::uint8_t> cond(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      if (!u.used[i]) continue;
      const float r = roll[k][i];
      if (na(r) || r > th.idle_util_pct) continue;
      cond[i] = busy_gpus[i] - (busy_at(k, i) ? 1 : 0) > 0;  // another job GPU is busy
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
      say(f,
          "job pid {} holds {} MiB on GPU{} for {} while it stays at {} % utilisation and "
          "another GPU of the job is busy",
          pid_text, num(held), g.index, dur(s.t[ep.i1] - s.t[ep.i0]), num(mu));
      f.advice = advice::kD7HeldUnused;
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
