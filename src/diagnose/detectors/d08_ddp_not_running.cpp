// SPDX-License-Identifier: Apache-2.0
// D8 ddp-not-running: a job meant for several GPUs (facts.gpus has two or more) keeps one of them
// busy (>= imbalance_high_pct) while every other one is idle (<= idle_util_pct) with no job process
// or no memory, for imbalance_for_s (MISSION §4 D8).
#include <algorithm>

#include <fmt/format.h>

#include "diagnose/detail.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

std::vector<Finding> detect_ddp_not_running(const RunSeries& s, const Thresholds& th) {
  const ProcPresence presence = proc_presence(s);
  std::vector<Finding> out;
  auto jg = s.facts.gpus;
  std::sort(jg.begin(), jg.end());
  if (jg.size() < 2) return out;
  std::vector<const GpuSeries*> gs;
  std::vector<std::vector<float>> roll;
  std::vector<GpuUse> use;
  for (auto idx : jg) {
    const auto* g = s.gpu(idx);
    if (!g) continue;
    gs.push_back(g);
    roll.push_back(rolling_mean(s.t, g->util_gpu_pct, th.window_s));
    use.push_back(gpu_use(s, *g, th, presence));
  }
  if (gs.size() < 2) return out;
  const std::size_t n = s.size();
  std::vector<std::uint8_t> cond(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    int busy = 0, idle = 0;
    for (std::size_t k = 0; k < gs.size(); ++k) {
      const float r = roll[k][i];
      if (na(r)) continue;
      if (r >= th.imbalance_high_pct)
        ++busy;
      else if (r <= th.idle_util_pct && !use[k].used[i])
        ++idle;
    }
    cond[i] = busy == 1 && idle == static_cast<int>(gs.size()) - 1;
  }
  for (const auto& ep : episodes(s.t, cond, th.imbalance_for_s, th.clear_s)) {
    Finding f = make_finding("D8", Severity::warning, s.t[ep.i0], s.t[ep.i1]);
    std::string busy, idle;
    for (std::size_t k = 0; k < gs.size(); ++k) {
      const double mu = mean(gs[k]->util_gpu_pct, ep.i0, ep.i1);
      put(f.numbers, fmt::format("gpu{}_mean_util_pct", gs[k]->index), mu);
      f.gpus.push_back(gs[k]->index);
      auto& text = mu >= th.imbalance_high_pct ? busy : idle;
      text += fmt::format("{}GPU{} {} %", text.empty() ? "" : ", ", gs[k]->index, num(mu));
      for (auto p : use[k].pids) f.pids.push_back(p);
    }
    std::sort(f.pids.begin(), f.pids.end());
    f.pids.erase(std::unique(f.pids.begin(), f.pids.end()), f.pids.end());
    say(f, "job meant for {} GPUs runs on one: {} busy while {} idle with no job process, for {}", gs.size(),
        busy, idle, dur(s.t[ep.i1] - s.t[ep.i0]));
    f.advice = N_(
        "Distributed training did not start on every GPU. Launch with torchrun / the framework's multi-GPU "
        "launcher, pass the device list as a list ([0,1]), and check NCCL (NCCL_DEBUG=INFO, "
        "NCCL_SOCKET_TIMEOUT, "
        "NCCL_IB_DISABLE=1 on hosts without InfiniBand, NCCL_P2P_DISABLE for broken peer-to-peer).");
    // One GPU of N works: the others would multiply throughput by up to N (estimated, linear scaling).
    set_cost(f, 1.0 - 1.0 / static_cast<double>(gs.size()), "estimated");
    f.thresholds = {{"imbalance_high_pct", th.imbalance_high_pct},
                    {"idle_util_pct", th.idle_util_pct},
                    {"imbalance_for_s", th.imbalance_for_s},
                    {"window_s", th.window_s}};
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace trainmon::diagnose
