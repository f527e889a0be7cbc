// SPDX-License-Identifier: Apache-2.0
// D28 training-pauses (warning): steps far longer than their rank's median step (at least
// pause_step_factor x the median and pause_min_s) cost, beyond the median, at least pause_cost_pct of
// the wall time over the trailing pause_window_s, with two pauses or more in it (one is an event, not
// a habit). The rows give each rank's longest step per report (StepStats::max), so a pause is that
// step; where its time went comes from the same row's longest data wait and collective wait beyond
// their medians (data, collective, compute: the rest). The rank's first step (start-up, compilation)
// is never a pause. When rank 0's pauses are compute while the other ranks' are waits in the
// collectives, rank 0 works alone while everyone waits (a checkpoint saved by rank 0 only): said so,
// with the cost, and rank 0 is the rank named (the others' waits, a little longer, are for it).
// Cost: the pauses' share of the wall time, measured.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "diagnose/detectors/train_common.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

namespace {

struct Pause {
  double end = 0;  ///< run clock of the row that reported it
  double len = 0;  ///< the step's time beyond the rank's median, seconds
  double data = 0, comm = 0, compute = 0;
  double step = 0;  ///< the long step itself
};

struct RankPauses {
  double median_s = NAN;
  double first_t = NAN;  ///< the rank's first step row (not judged)
  std::vector<Pause> pauses;
};

double value_p50(const StepStats& st, std::uint32_t steps) {
  return !na(st.p50) ? st.p50 : !na(st.sum) && steps ? st.sum / steps : NAN;
}

RankPauses find_pauses(const RankSeries& r, const Thresholds& th) {
  RankPauses out;
  std::vector<std::pair<double, double>> step, data, comm;
  bool first = true;
  for (const auto& w : r.rows) {
    if (w.steps == 0) continue;
    if (first) {  // start-up: never a pause, nor part of the median
      first = false;
      out.first_t = w.t;
      continue;
    }
    step.emplace_back(value_p50(w.step, w.steps), w.steps);
    data.emplace_back(value_p50(w.data, w.steps), w.steps);
    comm.emplace_back(value_p50(w.comm, w.steps), w.steps);
  }
  out.median_s = weighted_median(step);
  const double dm = weighted_median(data), cm = weighted_median(comm);
  if (na(out.median_s)) return out;
  const double bar = std::max(th.pause_step_factor * out.median_s, th.pause_min_s);
  bool skip = true;
  for (const auto& w : r.rows) {
    if (w.steps == 0) continue;
    if (skip) {
      skip = false;
      continue;
    }
    const double mx = !na(w.step.max) ? w.step.max : w.steps == 1 ? w.step.sum : NAN;
    if (na(mx) || mx < bar) continue;
    Pause p;
    p.end = w.t;
    p.step = mx;
    p.len = mx - out.median_s;
    if (!na(w.data.max)) p.data = std::clamp(w.data.max - (na(dm) ? 0.0 : dm), 0.0, p.len);
    if (!na(w.comm.max)) p.comm = std::clamp(w.comm.max - (na(cm) ? 0.0 : cm), 0.0, p.len - p.data);
    p.compute = std::max(0.0, p.len - p.data - p.comm);
    out.pauses.push_back(p);
  }
  return out;
}

}  // namespace

std::vector<Finding> detect_pauses(const RunSeries& s, const Thresholds& th) {
  std::vector<Finding> out;
  const auto& ranks = s.train.ranks;
  if (ranks.empty()) return out;
  const std::size_t R = ranks.size();
  std::vector<RankPauses> rp(R);
  bool any = false;
  for (std::size_t k = 0; k < R; ++k) {
    rp[k] = find_pauses(ranks[k], th);
    any = any || rp[k].pauses.size() >= 2;
  }
  if (!any) return out;
  const auto cols = train_columns(s);
  const std::vector<double>& grid = cols->step_times;
  const std::size_t n = grid.size();
  const double W = th.pause_window_s;
  // The share of the trailing window the rank's pauses took (two pointers per rank).
  struct Run {
    std::size_t lo = 0, hi = 0;
    double sum = 0;
  };
  std::vector<Run> run(R);
  std::vector<std::uint8_t> cond(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < R; ++k) {
      auto& rr = run[k];
      const auto& ps = rp[k].pauses;
      while (rr.hi < ps.size() && ps[rr.hi].end <= grid[i] + 1e-9) rr.sum += ps[rr.hi++].len;
      while (rr.lo < rr.hi && ps[rr.lo].end <= grid[i] - W) rr.sum -= ps[rr.lo++].len;
      const double span = std::min(W, grid[i] - rp[k].first_t);
      if (rr.hi - rr.lo >= 2 && span > 0 && 100.0 * rr.sum / span >= th.pause_cost_pct) cond[i] = 1;
    }
  }
  for (const auto& ep : episodes(grid, cond, 0, W)) {
    double first = 1e300;
    for (const auto& x : rp)
      if (!na(x.first_t)) first = std::min(first, x.first_t);
    const double t0 = std::max(first, grid[ep.i0] - W), t1 = grid[ep.i1];
    const double wall = t1 - t0;
    if (!(wall > 0)) continue;
    Finding f = make_finding("D28", Severity::warning, t0, t1);
    struct Sum {
      double len = 0, data = 0, comm = 0, compute = 0, longest = 0;
      std::size_t count = 0;
    };
    std::vector<Sum> sums(R);
    std::size_t main = 0;
    for (std::size_t k = 0; k < R; ++k) {
      for (const auto& p : rp[k].pauses) {
        if (p.end <= t0 || p.end > t1) continue;
        auto& x = sums[k];
        x.len += p.len;
        x.data += p.data;
        x.comm += p.comm;
        x.compute += p.compute;
        x.longest = std::max(x.longest, p.step);
        ++x.count;
      }
      if (sums[k].len > sums[main].len) main = k;
    }
    // Rank 0 alone computing while the others wait in the collectives: it works alone (a checkpoint
    // it saves by itself), and it is the rank named, whoever's waits came out a little longer.
    std::size_t r0 = R;
    for (std::size_t k = 0; k < R; ++k)
      if (ranks[k].id.rank == 0) r0 = k;
    bool rank0_alone = false;
    Phrase waiting;
    if (r0 < R && sums[r0].count && sums[r0].compute >= 0.5 * sums[r0].len) {
      double others = 0, others_comm = 0;
      for (std::size_t k = 0; k < R; ++k) {
        if (k == r0 || !sums[k].count) continue;
        others += sums[k].len;
        others_comm += sums[k].comm;
        add_listed(waiting, rank_short(ranks[k].id));
      }
      rank0_alone = others > 0 && others_comm >= 0.5 * others;
    }
    if (rank0_alone) main = r0;
    const Sum& m = sums[main];
    if (m.count == 0 || !(m.len > 0)) continue;
    const auto& id = ranks[main].id;
    const double share = std::clamp(m.len / wall, 0.0, 1.0);
    std::set<unsigned> gpus;
    std::set<std::uint32_t> pids;
    for (std::size_t k = 0; k < R; ++k) {
      if (!sums[k].count) continue;
      if (ranks[k].id.gpu >= 0) gpus.insert(static_cast<unsigned>(ranks[k].id.gpu));
      if (ranks[k].id.pid) pids.insert(ranks[k].id.pid);
    }
    f.gpus.assign(gpus.begin(), gpus.end());
    f.pids.assign(pids.begin(), pids.end());
    put(f.numbers, "pause_share_pct", 100 * share);
    put(f.numbers, "pauses", static_cast<double>(m.count));
    put(f.numbers, "pause_s", m.len);
    put(f.numbers, "longest_step_s", m.longest);
    put(f.numbers, "step_median_s", rp[main].median_s);
    put(f.numbers, "rank", id.rank);
    const double pd = 100 * m.data / m.len, pc = 100 * m.comm / m.len, pu = 100 * m.compute / m.len;
    put(f.numbers, "data_pct", pd);
    put(f.numbers, "collective_pct", pc);
    put(f.numbers, "compute_pct", pu);
    say(f,
        "{} pauses over {} on {} (the longest step {} s, its median step {} ms) cost {} % of the wall time "
        "({} s); where the time went: data {} %, collective {} %, compute {} %",
        m.count, dur(wall), rank_name(id), num(m.longest, 1), num(1e3 * rp[main].median_s), num(100 * share),
        num(m.len, 1), num(pd), num(pc), num(pu));
    if (rank0_alone)
      say(f,
          "; rank 0 computed alone during its pauses ({} s) while {} waited in the collectives: work done "
          "by rank 0 only (a checkpoint saved by rank 0, logging, evaluation), and every rank pays for it",
          num(sums[r0].len, 1), waiting);
    const bool compute_site = pu >= pd && pu >= pc;
    const bool data_site = !compute_site && pd >= pc;
    f.advice =
        rank0_alone || compute_site
            ? N_("Checkpoint without stopping the job: save asynchronously "
                 "(torch.distributed.checkpoint.async_save, or copy the state to CPU memory and write it "
                 "from a background thread), save less often, and write to a local disk first, copying "
                 "to shared storage in the background. If the pauses are evaluation or logging on one "
                 "rank, run them less often or spread them over the ranks.")
        : data_site
            ? N_("The loader stalls from time to time: without persistent_workers=True its workers start "
                 "again every epoch; a slow shard, a cold cache or a network disk do it too (raise "
                 "prefetch_factor, copy the data to a local disk).")
            : N_("The collectives stall from time to time: a rank that pauses alone (a checkpoint, "
                 "logging or evaluation on one rank) makes every other rank wait in the next "
                 "collective; D24 names a slow rank and D27 a slow link.");
    set_cost(f, share, "measured");
    f.thresholds = {{"pause_step_factor", th.pause_step_factor},
                    {"pause_min_s", th.pause_min_s},
                    {"pause_cost_pct", th.pause_cost_pct},
                    {"pause_window_s", th.pause_window_s}};
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace trainmon::diagnose
