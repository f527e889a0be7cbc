// SPDX-License-Identifier: Apache-2.0
// D27 comm-bound (warning): with collective timing (protocol v3: each step's wait inside
// torch.distributed collectives, DDP's gradient buckets included), every rank spends at least
// comm_bound_share_pct of its step time in collectives over the trailing window_s, for
// comm_bound_for_s. "Every rank" is the lowest rank's share: a straggler makes the others wait in
// the collectives but does not wait itself (that is D24), and a slow loader shows as data wait on its
// rank (D24 / D25). The evidence gives each rank's share, the collective it was last seen in (op and
// bytes), and the link the ranks talk over: other nodes (world size beyond the ranks seen here), the
// CPU (gloo), or their GPUs' PCIe links with D16's evidence (a link below its maximum under load).
// Cost: the lowest share; hiding it completely (overlap) would give up to 1 / (1 - share), so the
// basis is "estimated".
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "diagnose/detectors/train_common.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

std::vector<Finding> detect_comm_bound(const RunSeries& s, const Thresholds& th) {
  std::vector<Finding> out;
  const auto& ranks = s.train.ranks;
  if (ranks.empty()) return out;
  int world = static_cast<int>(ranks.size());
  for (const auto& r : ranks) world = std::max(world, r.id.world_size);
  if (world < 2) return out;  // one process: no collective to wait in
  const auto cols = train_columns(s);
  const std::vector<double>& grid = cols->step_times;
  if (grid.empty()) return out;
  const std::size_t n = grid.size(), R = ranks.size();
  // Running sums per rank over the trailing window_s (two pointers per rank), as D25.
  struct Run {
    std::size_t lo = 0, hi = 0;
    double step = 0, comm = 0, comm_rows = 0;
  };
  std::vector<Run> run(R);
  std::vector<std::uint8_t> cond(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t with_share = 0, below = 0;
    for (std::size_t k = 0; k < R; ++k) {
      auto& rr = run[k];
      const auto& c = cols->ranks[k];
      while (rr.hi < c.size() && c.t[rr.hi] <= grid[i] + 1e-9) {
        const std::size_t j = rr.hi++;
        if (na(c.step_sum[j]) || na(c.comm_sum[j])) continue;
        rr.step += c.step_sum[j];
        rr.comm += c.comm_sum[j];
        ++rr.comm_rows;
      }
      while (rr.lo < rr.hi && c.t[rr.lo] <= grid[i] - th.window_s) {
        const std::size_t j = rr.lo++;
        if (na(c.step_sum[j]) || na(c.comm_sum[j])) continue;
        rr.step -= c.step_sum[j];
        rr.comm -= c.comm_sum[j];
        --rr.comm_rows;
      }
      if (rr.comm_rows < 1 || rr.step <= 1e-12) continue;
      ++with_share;
      below += !(100.0 * std::clamp(rr.comm / rr.step, 0.0, 1.0) >= th.comm_bound_share_pct);
    }
    // every rank with a measured share (and every rank here has one)
    cond[i] = with_share == R && below == 0;
  }

  const auto tg = train_gpus(s, th);
  for (const auto& ep : episodes(grid, cond, th.comm_bound_for_s, th.clear_s)) {
    const double t0 = std::max(grid.front(), grid[ep.i0] - th.window_s), t1 = grid[ep.i1];
    Finding f = make_finding("D27", Severity::warning, t0, t1);
    double lowest = NAN, all_steps = 0, all_step_s = 0, all_comm_s = 0;
    Phrase each;
    std::set<unsigned> gpus;
    std::set<std::uint32_t> pids;
    std::set<std::string> hosts;
    for (std::size_t k = 0; k < R; ++k) {
      const auto& c = cols->ranks[k];
      double steps = 0, step_s = 0, comm_s = 0;
      for (std::size_t j = 0; j < c.size(); ++j) {
        if (c.t[j] <= t0 || c.t[j] > t1 || na(c.step_sum[j]) || na(c.comm_sum[j])) continue;
        steps += c.steps[j];
        step_s += c.step_sum[j];
        comm_s += c.comm_sum[j];
      }
      if (step_s <= 0) continue;
      const double sh = std::clamp(comm_s / step_s, 0.0, 1.0);
      lowest = na(lowest) ? sh : std::min(lowest, sh);
      all_steps += steps;
      all_step_s += step_s;
      all_comm_s += comm_s;
      const auto& id = ranks[k].id;
      if (id.gpu >= 0) gpus.insert(static_cast<unsigned>(id.gpu));
      if (id.pid) pids.insert(id.pid);
      if (!id.host.empty()) hosts.insert(id.host);
      add_listed(each, phrase("{} {} %", rank_short(id), num(100 * sh)));
      put(f.numbers,
          id.rank >= 0 ? fmt::format("rank{}_comm_share_pct", id.rank)
                       : fmt::format("pid{}_comm_share_pct", id.pid),
          100 * sh);
    }
    if (na(lowest)) continue;
    f.gpus.assign(gpus.begin(), gpus.end());
    if (f.gpus.empty()) f.gpus = tg.gpus;
    f.pids.assign(pids.begin(), pids.end());
    put(f.numbers, "comm_share_pct", 100 * lowest);
    if (all_steps > 0) {
      put(f.numbers, "step_mean_s", all_step_s / all_steps);
      put(f.numbers, "comm_mean_s", all_comm_s / all_steps);
    }
    say(f, "every rank waits in collectives for at least {} % of each step over {} ({})", num(100 * lowest),
        dur(t1 - t0), each);
    if (all_steps > 0)
      say(f, "; {} ms of a {}-ms step on average", num(1e3 * all_comm_s / all_steps),
          num(1e3 * all_step_s / all_steps));
    // The collective the ranks were last seen in (the heartbeats' phase), its payload.
    std::map<std::string, double> ops;  // op -> largest payload seen (NaN: not said)
    for (const auto& r : ranks)
      for (const auto& w : r.rows) {
        if (w.t <= t0 || w.t > t1 || w.phase != TrainPhase::collective || w.coll.op.empty()) continue;
        auto [it, fresh] = ops.try_emplace(w.coll.op, w.coll.bytes);
        if (!fresh && !na(w.coll.bytes) && (na(it->second) || w.coll.bytes > it->second))
          it->second = w.coll.bytes;
      }
    if (!ops.empty()) {
      Phrase seen;
      for (const auto& [op, bytes] : ops)
        add_listed(seen, na(bytes) ? Phrase{op, i18n::language().empty() ? std::string() : op}
                                   : phrase("{} ({} MiB)", op, num(bytes / 1048576.0, 1)));
      say(f, "; seen waiting in {}", seen);
    }
    // The link: other nodes, the CPU, the GPUs' PCIe links (D16's evidence).
    const int here = static_cast<int>(R);
    put(f.numbers, "world_size", world);
    if (world > here || hosts.size() > 1) {
      if (hosts.size() > 1)
        say(f, "; the collectives cross nodes ({} ranks, {} of them on {} hosts here)", world, here,
            hosts.size());
      else
        say(f, "; the collectives cross nodes ({} ranks, {} of them here)", world, here);
    } else if (tg.basis == TrainGpus::Basis::cpu) {
      say(f, "; the job runs on the CPU: its collectives (gloo) go through the host's network stack");
    }
    const std::size_t r0 = row_at(s, t0), r1 = s.size() ? std::min(row_at(s, t1), s.size() - 1) : 0;
    if (s.size() > 0 && r0 <= r1) {
      Phrase links;
      bool degraded = false;
      for (auto gi : f.gpus) {
        const auto* g = s.gpu(gi);
        if (!g) continue;
        const double gen = min_of(g->pcie_gen, r0, r1), gmax = last_of(g->pcie_gen_max, r0, r1);
        const double wd = min_of(g->pcie_width, r0, r1), wmax = last_of(g->pcie_width_max, r0, r1);
        if (na(gen) || na(wd)) continue;
        const bool below = (!na(gmax) && gen < gmax) || (!na(wmax) && wd < wmax);
        degraded = degraded || below;
        add_listed(links, below ? phrase("GPU{} at Gen{} x{} of Gen{} x{}", gi, num(gen), num(wd), num(gmax),
                                         num(wmax))
                                : phrase("GPU{} at Gen{} x{}", gi, num(gen), num(wd)));
      }
      if (!links.empty() && degraded)
        say(f, "; PCIe links: {} (below their maximum: see D16)", links);
      else if (!links.empty())
        say(f, "; PCIe links: {}", links);
    }
    f.advice =
        N_("Hide or shrink the communication: keep DDP's overlap of the gradient all-reduce with backward "
           "(avoid find_unused_parameters=True unless needed; tune bucket_cap_mb, default 25, and set "
           "gradient_as_bucket_view=True); with gradient accumulation, wrap the micro-steps before the last "
           "in model.no_sync(); a larger batch per rank sends the same gradients for more work; compress "
           "them (DDP comm hooks: fp16/bf16 compression, PowerSGD). Check the link: `nvidia-smi topo -m` "
           "shows whether the GPUs talk over NVLink or through the host bridge, D16 names a degraded PCIe "
           "link, and NCCL_DEBUG=INFO the transport NCCL chose (NCCL_P2P_DISABLE, NCCL_IB_DISABLE or "
           "NCCL_SOCKET_IFNAME left set force a slower path).");
    set_cost(f, lowest, "estimated");
    f.thresholds = {{"comm_bound_share_pct", th.comm_bound_share_pct},
                    {"comm_bound_for_s", th.comm_bound_for_s},
                    {"window_s", th.window_s}};
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace trainmon::diagnose
