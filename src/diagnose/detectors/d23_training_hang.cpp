// SPDX-License-Identifier: Apache-2.0
// D23 training-hang (critical): a rank completes no step for max(hang_p90_factor x its recent p90
// step time, hang_floor_s) while its process lives (the job tree, else its heartbeats within
// hang_alive_s) and it is inside the training loop (phase data or compute: evaluation and
// checkpointing, phase idle, do not count). Ranks that hang together are one finding. The evidence
// tells the kinds apart: every job GPU busy with no progress (a collective / GPU-side deadlock),
// GPUs idle (loader, I/O, a Python deadlock), one rank stopped first or waiting for data while the
// others wait in compute, a rank that stopped reporting at all; and, when trainmon asked the ranks
// for their Python stacks (TrainStackRec), the line each rank is stuck on.
//
// Sooner, as a WARNING, when the ranks' phases (protocol v3) make it unambiguous: some ranks inside
// the same collective (process group and seq) for max(hang_p90_factor x their recent p90 step time,
// hang_coll_floor_s) while another rank of the job is outside it (in data, compute or the optimizer, in
// another collective, or silent), every rank having completed a step (a slow first step is no hang)
// and none outside the loop (phase idle: evaluation, checkpointing). Said as Flight Recorder's analyzer
// says it: "ranks 0, 2, 3 wait in all_reduce #5120; rank 1 never entered it". When the critical
// finding comes for the same stall, that sentence joins it instead. The warning carries the stacks
// trainmon asked for when it opened, and its advice the line the holding rank is on. A stall that ends, held
// by rank 0 alone in compute, is rank 0 working alone (a checkpoint saved by rank 0): no hang, D28's pause.
// Which rank the stacks say holds the job: d23_stack_attribution.cpp (d23_stacks.h).
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "diagnose/advice.h"
#include "diagnose/detectors/d23_stacks.h"
#include "diagnose/detectors/train_common.h"
#include "trainmon/diagnose/detectors.h"
#include "trainmon/diagnose/stacks.h"

namespace trainmon::diagnose {
using namespace detail;
using namespace d23;

namespace {

/// One rank's stall at the rows of the grid.
struct RankHang {
  const RankSeries* r = nullptr;
  std::vector<std::uint8_t> cond;
  std::vector<double> since;   ///< per grid row: when the stall began (NaN when not stalled; empty: never)
  std::vector<double> window;  ///< per grid row: the window it was judged with
  std::vector<double> p90;     ///< per grid row: the recent p90 step time (NaN when unknown)
};

/// The step-weighted median of the rows' p90 step time (else p50, else mean) over step rows with
/// t in [t1 - span, t1]: the rank's recent p90.
double recent_p90(const RankSeries& r, double t1, double span) {
  std::vector<std::pair<double, double>> v;
  const auto [a, b] = rows_in(r, t1 - span, t1 + 1e-6);
  for (std::size_t i = a; i < b; ++i) {
    const auto& w = r.rows[i];
    if (w.steps == 0) continue;
    const double x = !na(w.step.p90) ? w.step.p90 : !na(w.step.p50) ? w.step.p50 : w.step.sum / w.steps;
    v.emplace_back(x, w.steps);
  }
  return weighted_median(v);
}

/// Per grid row: 1 when some rank that still reports (a row within hang_alive_s) is outside the loop
/// (its latest phase idle: evaluation, a checkpoint).
std::vector<std::uint8_t> someone_outside(const RunSeries& s, const std::vector<double>& grid,
                                          const Thresholds& th) {
  std::vector<std::uint8_t> out(grid.size(), 0);
  for (const auto& r : s.train.ranks) {
    std::size_t j = 0;
    const TrainWindow* phased = nullptr;
    double last_t = NAN;
    for (std::size_t i = 0; i < grid.size(); ++i) {
      for (; j < r.rows.size() && r.rows[j].t <= grid[i] + 1e-9; ++j) {
        last_t = r.rows[j].t;
        if (r.rows[j].phase != TrainPhase::unknown) phased = &r.rows[j];
      }
      if (phased && phased->phase == TrainPhase::idle && grid[i] - last_t <= th.hang_alive_s) out[i] = 1;
    }
  }
  return out;
}

/// `outside`: someone_outside(); a rank waiting in a collective while another rank is outside the
/// loop waits for it (rank 0 evaluates or saves alone while the others wait in a barrier): no hang.
RankHang judge_rank(const RankSeries& r, const std::vector<double>& grid, const Thresholds& th,
                    const RunSeries& s, const std::vector<std::uint8_t>& outside) {
  RankHang h;
  h.r = &r;
  const std::size_t n = grid.size();
  h.cond.assign(n, 0);  // since / window / p90 only once a row stalls (a healthy run needs none)
  const JobProcess* proc = r.id.pid ? s.job.proc(r.id.pid) : nullptr;
  std::size_t j = 0;  // rows with t <= grid[i]
  double last_step = NAN, last_row_t = NAN, phase_t = NAN, idle_after_step = NAN;
  TrainPhase phase = TrainPhase::unknown;
  double cached_for = NAN, cached_p90 = NAN;
  for (std::size_t i = 0; i < n; ++i) {
    const double T = grid[i];
    for (; j < r.rows.size() && r.rows[j].t <= T + 1e-9; ++j) {
      const auto& w = r.rows[j];
      last_row_t = w.t;
      if (!na(w.last_step_t) && (na(last_step) || w.last_step_t > last_step)) {
        last_step = w.last_step_t;
        idle_after_step = NAN;
      }
      if (w.phase != TrainPhase::unknown) {
        phase = w.phase;
        phase_t = w.phase_t;
        if (phase == TrainPhase::idle) idle_after_step = w.t;
      }
    }
    if (na(last_step) || phase == TrainPhase::idle) continue;     // no step yet, or outside the loop
    if (phase == TrainPhase::collective && outside[i]) continue;  // it waits for a rank outside the loop
    // Alive: the job tree says so; a rank outside it (or a series without one) by its heartbeats.
    const bool alive = proc ? (T >= proc->first_t - th.hang_alive_s && T <= proc->last_t + th.hang_alive_s &&
                               T - proc->last_t <= th.hang_alive_s)
                            : (!na(last_row_t) && T - last_row_t <= th.hang_alive_s);
    if (!alive) continue;
    // Back in the loop after an evaluation: the stall counts from when the loop resumed.
    double since = last_step;
    if (!na(idle_after_step) && !na(phase_t)) since = std::max(since, phase_t);
    if (T - since <= th.hang_floor_s) continue;  // the window is at least the floor
    if (cached_for != last_step) {
      cached_for = last_step;
      cached_p90 = recent_p90(r, last_step, th.hang_p90_window_s);
    }
    const double win = std::max(na(cached_p90) ? 0.0 : th.hang_p90_factor * cached_p90, th.hang_floor_s);
    if (T - since <= win) continue;
    h.cond[i] = 1;
    if (h.since.empty()) {
      h.since.assign(n, NAN);
      h.window.assign(n, NAN);
      h.p90.assign(n, NAN);
    }
    h.since[i] = since;
    h.window[i] = win;
    h.p90[i] = cached_p90;
  }
  return h;
}

/// A phase's name (train_phase_name) as a word of the evidence, translated in the local text.
Word phase_word(TrainPhase p) {
  switch (p) {
    case TrainPhase::data: return word("data");
    case TrainPhase::compute: return word("compute");
    case TrainPhase::idle: return word("idle");
    case TrainPhase::collective: return word("collective");
    case TrainPhase::optimizer: return word("optimizer step");
    case TrainPhase::unknown: break;
  }
  return word("unknown");
}

/// "ranks 0, 2, 3" (Flight Recorder's way), "rank 1", or "process 4242, process 4243".
Phrase ranks_flight(const std::vector<const TrainRank*>& ids) {
  const bool numbered = ids.size() > 1 && std::all_of(ids.begin(), ids.end(),
                                                      [](const TrainRank* id) { return id->rank >= 0; });
  Phrase list;
  for (const auto* id : ids) {
    if (!numbered) {
      add_listed(list, rank_short(*id));
      continue;
    }
    const std::string n = std::to_string(id->rank);
    add_listed(list, Phrase{n, i18n::language().empty() ? std::string() : n});
  }
  return numbered ? phrase("ranks {}", list) : list;
}

/// Ranks waiting inside one collective while others are outside it, at one time of the grid.
struct CollStall {
  CollectiveAt at;
  double since = NAN;  ///< the waiters' earliest entry (phase_t)
  double p90 = NAN;    ///< the waiters' largest recent p90 step time
  double window = NAN;
  std::vector<std::size_t> waiters, holders;  ///< rank indices into s.train.ranks
  std::vector<TrainWindow> holder_rows;       ///< each holder's last row then
  std::vector<std::uint8_t> holder_silent;    ///< it sent no row for hang_alive_s
};

/// Stalls inside a collective over the grid (the warning of D23); see the file comment.
std::vector<std::pair<Episode, CollStall>> collective_stalls(const RunSeries& s, const Thresholds& th,
                                                             const std::vector<double>& grid) {
  std::vector<std::pair<Episode, CollStall>> out;
  const auto& ranks = s.train.ranks;
  const std::size_t R = ranks.size(), n = grid.size();
  if (R < 2) return out;
  // Only a job whose ranks say which collective they are in (protocol v3).
  bool any = false;
  for (const auto& r : ranks)
    for (const auto& w : r.rows)
      if (w.phase == TrainPhase::collective && !w.coll.op.empty()) {
        any = true;
        break;
      }
  if (!any) return out;
  std::vector<std::size_t> j(R, 0);
  std::vector<double> last_step(R, NAN), p90_for(R, NAN), p90(R, NAN);
  std::vector<const TrainWindow*> last(R, nullptr);
  std::vector<std::uint8_t> cond(n, 0);
  std::vector<std::optional<CollStall>> at(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double T = grid[i];
    bool all_stepped = true;
    for (std::size_t k = 0; k < R; ++k) {
      const auto& rows = ranks[k].rows;
      for (; j[k] < rows.size() && rows[j[k]].t <= T + 1e-9; ++j[k]) {
        last[k] = &rows[j[k]];
        if (!na(rows[j[k]].last_step_t))
          last_step[k] = std::max(na(last_step[k]) ? -1e300 : last_step[k], rows[j[k]].last_step_t);
      }
      all_stepped = all_stepped && !na(last_step[k]) && last[k];
    }
    if (!all_stepped) continue;  // a slow first step (or a rank not started) is no hang
    // The collective with the earliest waiter.
    const CollectiveAt* key = nullptr;
    double since = 1e300;
    for (std::size_t k = 0; k < R; ++k) {
      const auto& w = *last[k];
      if (w.phase != TrainPhase::collective || w.coll.op.empty() || w.coll.seq < 0 || na(w.phase_t)) continue;
      if (T - w.t > th.hang_alive_s) continue;  // a silent rank's last word is not where it is now
      if (w.phase_t < since) {
        since = w.phase_t;
        key = &w.coll;
      }
    }
    if (!key) continue;
    CollStall st;
    st.at = *key;
    st.since = since;
    bool outside_loop = false;
    for (std::size_t k = 0; k < R; ++k) {
      const auto& w = *last[k];
      const bool silent = T - w.t > th.hang_alive_s;
      if (!silent && w.phase == TrainPhase::collective && w.coll.group == key->group &&
          w.coll.seq == key->seq) {
        st.waiters.push_back(k);
        continue;
      }
      if (!silent && w.phase == TrainPhase::idle) outside_loop = true;
      st.holders.push_back(k);
      st.holder_rows.push_back(w);
      st.holder_silent.push_back(silent);
    }
    if (st.holders.empty() || outside_loop) continue;
    for (auto k : st.waiters) {
      if (p90_for[k] != last_step[k]) {
        p90_for[k] = last_step[k];
        p90[k] = recent_p90(ranks[k], last_step[k], th.hang_p90_window_s);
      }
      if (!na(p90[k])) st.p90 = na(st.p90) ? p90[k] : std::max(st.p90, p90[k]);
    }
    st.window = std::max(na(st.p90) ? 0.0 : th.hang_p90_factor * st.p90, th.hang_coll_floor_s);
    if (T - st.since <= st.window) continue;
    cond[i] = 1;
    at[i] = std::move(st);
  }
  for (const auto& ep : episodes(grid, cond, 0, th.clear_s)) {
    CollStall st = std::move(*at[ep.i0]);
    // A stall that ended (a waiter stepped again) held by rank 0 alone in compute: rank 0 worked
    // alone (a checkpoint it saves by itself) while the others waited; D28 counts it as a pause.
    bool resumed = false;
    for (auto k : st.waiters)
      for (const auto& w : ranks[k].rows)
        if (w.t > grid[ep.i1] && !na(w.last_step_t) && w.last_step_t > st.since) resumed = true;
    if (resumed && st.holders.size() == 1 && ranks[st.holders[0]].id.rank == 0 && !st.holder_silent[0] &&
        (st.holder_rows[0].phase == TrainPhase::compute || st.holder_rows[0].phase == TrainPhase::optimizer))
      continue;
    out.emplace_back(ep, std::move(st));
  }
  return out;
}

/// A collective's payload in a binary unit (B, KiB, MiB, GiB, TiB; one decimal above bytes):
/// "4 B", "4.0 MiB", "8.0 GiB", never "0.0 MiB" or ten digits of MiB.
Phrase payload(double bytes) {
  double v = bytes;
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  const auto n = num(v, u == 0 ? 0 : 1);
  switch (u) {
    case 0: return phrase("{} B", n);
    case 1: return phrase("{} KiB", n);
    case 2: return phrase("{} MiB", n);
    case 3: return phrase("{} GiB", n);
    default: return phrase("{} TiB", n);
  }
}

/// The Flight-Recorder sentence of a stall inside a collective, added to `f`'s evidence, with the
/// holding rank in numbers; returns the advice naming it.
Phrase describe_coll_stall(Finding& f, const RunSeries& s, const Thresholds& th, const CollStall& st,
                           double t_end) {
  const auto& ranks = s.train.ranks;
  std::vector<const TrainRank*> waiters, holders;
  for (auto k : st.waiters) waiters.push_back(&ranks[k].id);
  for (auto k : st.holders) holders.push_back(&ranks[k].id);
  Phrase coll = phrase("{} #{}", st.at.op, st.at.seq);
  Phrase what;  // "group 0, 4.0 MiB"
  if (!st.at.group.empty()) add_listed(what, phrase("group {}", st.at.group));
  if (!na(st.at.bytes)) add_listed(what, payload(st.at.bytes));
  const Phrase more = what.empty() ? Phrase{} : phrase(" ({})", what);
  Phrase how = na(st.p90) ? phrase(" (window {} s: the floor, no recent step time)", num(st.window))
                          : phrase(" (window max({} x p90 {} s, {} s) = {} s)", num(th.hang_p90_factor),
                                   num(st.p90, 3), num(th.hang_coll_floor_s), num(st.window));
  if (waiters.size() == 1)
    say(f, "{} waits in {}{} since {} s ({}){}", ranks_flight(waiters), coll, more, num(st.since),
        dur(t_end - st.since), how);
  else
    say(f, "{} wait in {}{} since {} s ({}){}", ranks_flight(waiters), coll, more, num(st.since),
        dur(t_end - st.since), how);
  Phrase where;
  for (std::size_t h = 0; h < st.holders.size(); ++h) {
    const auto& id = ranks[st.holders[h]].id;
    const auto& w = st.holder_rows[h];
    if (st.holder_silent[h])
      add_listed(where, phrase("{} stopped reporting", rank_short(id)));
    else if (w.phase == TrainPhase::collective && !w.coll.op.empty())
      add_listed(where, phrase("{} in {}", rank_short(id), phrase("{} #{}", w.coll.op, w.coll.seq)));
    else
      add_listed(where, phrase("{} in {}{}", rank_short(id), phase_word(w.phase),
                               na(w.phase_t) ? Phrase{} : phrase(" since {} s", num(w.phase_t))));
  }
  say(f, "; {} never entered it ({})", ranks_flight(holders), where);
  put(f.numbers, "coll_wait_s", t_end - st.since);
  put(f.numbers, "coll_seq", static_cast<double>(st.at.seq));
  // (the stacks' answer, when the critical finding has one, stays)
  if (holders.size() == 1 && holders[0]->rank >= 0 && !f.numbers.contains("holding_rank"))
    put(f.numbers, "holding_rank", holders[0]->rank);
  // The holder's stack, when trainmon asked for it as the warning opened: the line it is on.
  if (holders.size() == 1)
    for (const auto& sk : f.stacks)
      if (sk.rank_key == holders[0]->key && !sk.where.empty())
        return phrase("Look at {} first: it is at {} while the others wait for it in a collective. ",
                      rank_name(*holders[0]), sk.caller.empty() ? sk.where : sk.caller);
  if (holders.size() == 1)
    return phrase(
        "Look at {} first: the others wait for it inside {}. `py-spy dump --pid {}` shows the line it is "
        "on; a rank that skips a collective the others call (a branch on the rank, uneven batches: "
        "DistributedSampler(drop_last=True) or DDP's join()) never enters it. ",
        rank_name(*holders[0]), coll, holders[0]->pid);
  return phrase(
      "Look at {} first: the others wait for them inside {}. `py-spy dump --pid PID` shows the line each "
      "is on. ",
      ranks_flight(holders), coll);
}

}  // namespace

std::vector<Finding> detect_training_hang(const RunSeries& s, const Thresholds& th) {
  std::vector<Finding> out;
  if (s.train.empty()) return out;
  // The times the condition is judged at: the recorder's ticks, else the ranks' own rows.
  std::vector<double> grid = s.t;
  if (grid.empty()) grid = rank_row_times(s.train.ranks, false);
  if (grid.empty()) return out;

  struct Ep {
    std::size_t rank;  // index into hangs
    std::size_t i0, i1;
  };
  std::vector<RankHang> hangs;
  std::vector<Ep> eps;
  const auto outside = someone_outside(s, grid, th);
  for (const auto& r : s.train.ranks) {
    auto h = judge_rank(r, grid, th, s, outside);
    const std::size_t k = hangs.size();
    for (const auto& e : episodes(grid, h.cond, 0, th.clear_s)) eps.push_back({k, e.i0, e.i1});
    hangs.push_back(std::move(h));
  }
  const auto coll_stalls = collective_stalls(s, th, grid);
  if (eps.empty() && coll_stalls.empty()) return out;
  // Ranks whose stalls overlap hang together: one finding.
  std::sort(eps.begin(), eps.end(), [](const Ep& a, const Ep& b) { return a.i0 < b.i0; });
  std::vector<std::vector<Ep>> groups;
  std::size_t group_end = 0;
  for (const auto& e : eps) {
    if (groups.empty() || e.i0 > group_end) {
      groups.push_back({e});
      group_end = e.i1;
    } else {
      groups.back().push_back(e);
      group_end = std::max(group_end, e.i1);
    }
  }

  const auto tg = train_gpus(s, th);
  for (const auto& grp : groups) {
    std::size_t i0 = grp.front().i0, i1 = grp.front().i1;
    double since = 1e300, win_max = 0;
    for (const auto& e : grp) {
      i0 = std::min(i0, e.i0);
      i1 = std::max(i1, e.i1);
      since = std::min(since, hangs[e.rank].since[e.i0]);
      win_max = std::max(win_max, hangs[e.rank].window[e.i0]);
    }
    const double t_end = grid[i1];
    Finding f = make_finding("D23", Severity::critical, since, t_end);
    std::set<std::size_t> stalled;
    for (const auto& e : grp) stalled.insert(e.rank);
    // Ranks stuck with them that have not reached their own window yet (they stopped a moment
    // later): no step for half the window when the hang was found. One hang, one finding, the same
    // ranks from the first evaluation on (live findings are matched by their pids).
    for (std::size_t k = 0; k < hangs.size(); ++k) {
      if (stalled.contains(k)) continue;
      const auto& r = *hangs[k].r;
      const auto [a, b] = rows_in(r, -1e300, grid[i0] + 1e-9);
      double last_step = NAN;
      TrainPhase phase = TrainPhase::unknown;
      for (std::size_t q = b; q-- > a;) {
        if (phase == TrainPhase::unknown) phase = r.rows[q].phase;
        if (!na(r.rows[q].last_step_t)) {
          last_step = r.rows[q].last_step_t;
          break;
        }
      }
      const JobProcess* proc = r.id.pid ? s.job.proc(r.id.pid) : nullptr;
      const bool alive = proc ? grid[i0] - proc->last_t <= th.hang_alive_s
                              : b > a && grid[i0] - r.rows[b - 1].t <= th.hang_alive_s;
      if (!na(last_step) && alive && phase != TrainPhase::idle && grid[i0] - last_step >= 0.5 * win_max)
        stalled.insert(k);
    }
    // Each rank is described as it was while it stalled: up to its own last stalled row (a rank
    // that resumes first must not have the step that ended the stall counted as its last), or for
    // a rank stuck with them, when the hang was found.
    std::map<const RankSeries*, double> judged_at;
    for (auto k : stalled) judged_at[hangs[k].r] = grid[i0];
    for (const auto& e : grp) judged_at[hangs[e.rank].r] = std::max(judged_at[hangs[e.rank].r], grid[e.i1]);
    std::vector<const RankSeries*> ranks;
    for (auto k : stalled) ranks.push_back(hangs[k].r);
    std::sort(ranks.begin(), ranks.end(),
              [](const RankSeries* a, const RankSeries* b) { return train_key_less(a->id.key, b->id.key); });
    std::set<unsigned> gpus;
    std::set<std::uint32_t> pids;
    for (const auto* r : ranks) {
      if (r->id.gpu >= 0) gpus.insert(static_cast<unsigned>(r->id.gpu));
      if (r->id.pid) pids.insert(r->id.pid);
    }
    f.gpus.assign(gpus.begin(), gpus.end());
    f.pids.assign(pids.begin(), pids.end());

    // Who, since when, judged with which window.
    Phrase halted;
    for (const auto* r : ranks) add_listed(halted, rank_short(r->id));
    const std::size_t total_ranks = s.train.ranks.size();
    // A job of one process (no torch.distributed): no collective to wait in, no rank to hold it.
    bool distributed = total_ranks > 1;
    for (const auto& r : s.train.ranks) distributed = distributed || r.id.world_size > 1;
    if (ranks.size() == 1)
      say(f, "no step completed on {} for {} (since {} s) while its process still runs", halted,
          dur(t_end - since), num(since));
    else
      say(f, "no step completed on {} for {} (since {} s) while their processes still run", halted,
          dur(t_end - since), num(since));
    {
      const auto& h0 = hangs[grp.front().rank];
      const double p90 = h0.p90[grp.front().i0];
      if (na(p90))
        say(f, " (window {} s: the floor, no recent step time)", num(win_max));
      else
        say(f, " (window max({} x p90 {} s, {} s) = {} s)", num(th.hang_p90_factor), num(p90, 3),
            num(th.hang_floor_s), num(win_max));
      put(f.numbers, "p90_step_s", p90);
    }
    put(f.numbers, "stall_s", t_end - since);
    put(f.numbers, "window_s", win_max);
    put(f.numbers, "ranks_stalled", static_cast<double>(ranks.size()));
    put(f.numbers, "ranks", static_cast<double>(total_ranks));
    if (ranks.size() < total_ranks) {
      Phrase going;
      for (const auto& r : s.train.ranks)
        if (std::find(ranks.begin(), ranks.end(), &r) == ranks.end()) add_listed(going, rank_short(r.id));
      if (s.train.ranks.size() - ranks.size() == 1)
        say(f, "; {} still progresses", going);
      else
        say(f, "; {} still progress", going);
    }

    // What each rank was doing (its phase at the end) and who stopped first.
    Phrase phases;
    std::vector<Phrase> in_data, silent;
    std::vector<const RankSeries*> silent_ranks;
    std::set<std::int64_t> data_keys;  // ranks waiting for data when they stalled
    double first_stop = 1e300, last_stop = -1e300;
    const RankSeries* first_rank = nullptr;
    for (const auto* r : ranks) {
      const double t_rank = judged_at[r];
      const auto [a, b] = rows_in(*r, -1e300, t_rank + 1e-9);
      if (a == b) continue;
      const auto& last = r->rows[b - 1];
      double last_step = NAN;
      for (std::size_t k = b; k-- > a;)
        if (!na(r->rows[k].last_step_t)) {
          last_step = r->rows[k].last_step_t;
          break;
        }
      if (!na(last_step)) {
        if (last_step < first_stop) {
          first_stop = last_step;
          first_rank = r;
        }
        last_stop = std::max(last_stop, last_step);
      }
      if (last.phase != TrainPhase::unknown)
        add_listed(phases, phrase("{} in {}{}", rank_short(r->id), phase_word(last.phase),
                                  na(last.phase_t) ? Phrase{} : phrase(" since {} s", num(last.phase_t))));
      if (last.phase == TrainPhase::data) {
        in_data.push_back(rank_short(r->id));
        data_keys.insert(r->id.key);
      }
      if (t_rank - last.t > th.hang_alive_s) {
        silent.push_back(rank_short(r->id));
        silent_ranks.push_back(r);
      }
    }
    if (!phases.empty()) say(f, "; {}", phases);
    // The stacks trainmon asked for while it hung, and the ranks that sent none because they stopped
    // reporting altogether (a stopped process, the GIL held).
    for (const auto* r : ranks) {
      if (auto st = stack_of(s, r->id, since, t_end + std::max(th.clear_s, th.hang_alive_s)))
        f.stacks.push_back(*st);
    }
    std::vector<RankStack> mute;
    for (const auto* r : silent_ranks) {
      if (std::any_of(f.stacks.begin(), f.stacks.end(),
                      [&](const RankStack& st) { return st.rank_key == r->id.key && !st.where.empty(); }))
        continue;
      RankStack m;
      m.rank_key = r->id.key;
      m.rank = r->id.rank;
      m.pid = r->id.pid;
      m.host = r->id.host;
      mute.push_back(std::move(m));
    }
    std::set<std::int64_t> named;  // the ranks the stacks name as holding the job
    for (const auto* st : holders_of(f.stacks, mute).ranks) named.insert(st->rank_key);
    std::vector<Phrase> kinds;
    // (said once: when the stacks name the same ranks, "holds the job" below says it)
    if (!in_data.empty() && in_data.size() < ranks.size() && named != data_keys) {
      Phrase d;
      for (const auto& x : in_data) add_listed(d, x);
      kinds.push_back(in_data.size() == 1 ? phrase("{} waits for data while the others wait in compute (a "
                                                   "collective): {} holds them all",
                                                   d, d)
                                          : phrase("{} wait for data while the others wait in compute (a "
                                                   "collective): {} hold them all",
                                                   d, d));
    }
    if (!distributed && !in_data.empty())
      kinds.push_back(phrase("it waits for data: its DataLoader gives it no batch"));
    const double p90_any = f.numbers.contains("p90_step_s") ? f.numbers["p90_step_s"] : NAN;
    if (first_rank && ranks.size() > 1 && !na(p90_any) && last_stop - first_stop > 2 * p90_any) {
      kinds.push_back(phrase("{} stopped first ({} s before the others)", rank_short(first_rank->id),
                             num(last_stop - first_stop, 1)));
    }
    if (!silent.empty()) {
      Phrase d;
      for (const auto& x : silent) add_listed(d, x);
      kinds.push_back(silent.size() == 1
                          ? phrase("{} stopped reporting altogether while its process lives "
                                   "(Python blocked holding the GIL, or the process is stopped)",
                                   d)
                          : phrase("{} stopped reporting altogether while each process lives "
                                   "(Python blocked holding the GIL, or the process is stopped)",
                                   d));
    }
    // The GPUs: busy without progress, or idle; only those the job is known to compute on (a GPU
    // another program keeps busy says nothing of a job on the CPU).
    std::vector<unsigned> hg(f.gpus.begin(), f.gpus.end());
    if (hg.empty()) hg = tg.gpus;
    if (hg.empty()) {
      const std::string t = train_gpus_unknown_text(tg);
      kinds.push_back({t, std::string(local(word(t)))});
    }
    const std::size_t r0 = row_at(s, since), r1 = s.size() ? std::min(row_at(s, t_end), s.size() - 1) : 0;
    double util_sum = 0, util_min = 1e9;
    int util_n = 0;
    for (auto gi : hg) {
      const auto* g = s.gpu(gi);
      if (!g || s.size() == 0 || r0 > r1) continue;
      const double m = mean(g->util_gpu_pct, r0, r1);
      if (na(m)) continue;
      util_sum += m;
      util_min = std::min(util_min, m);
      ++util_n;
    }
    if (util_n > 0) {
      const double u = util_sum / util_n;
      put(f.numbers, "gpu_mean_util_pct", u);
      if (util_min >= th.busy_util_pct)
        kinds.push_back(
            phrase("every job GPU is busy (mean {} %) while no step completes: typical of a "
                   "rank stuck in a collective (NCCL) or a deadlock on the GPU side",
                   num(u)));
      else if (u < th.busy_util_pct)
        kinds.push_back(
            phrase("the job's GPUs are idle (mean {} %): the loop is stuck on the host (the "
                   "data loader, I/O, a lock or a Python deadlock)",
                   num(u)));
    }
    for (const auto& k : kinds) say(f, "; {}", k);

    Phrase at;
    for (const auto& st : f.stacks) {
      if (st.where.empty()) continue;
      add_listed(at, phrase("{} is at {}{}", who(st), st.where,
                            st.caller.empty() ? Phrase{} : phrase(" (called from {})", st.caller)));
    }
    if (!at.empty()) say(f, "; {}", at);
    Phrase holder = who_holds_the_job(f, mute, data_keys);
    const RankStack* st0 = nullptr;
    for (const auto& st : f.stacks)
      if (!st.where.empty()) {
        st0 = &st;
        break;
      }
    if (!distributed) {
      if (!st0) {
        f.advice = std::string(data_keys.empty() ? advice::kD23HangSingle : advice::kD23HangSingleData);
      } else {
        const std::string& line = st0->caller.empty() ? st0->where : st0->caller;
        Phrase a;
        if (data_keys.empty()) {
          a = phrase("The loop makes no progress; it is at {}. Fix that line.", line);
        } else {
          a = phrase("The loop makes no progress: it waits for its next batch (at {}). ", line);
          a += loader_advice(st0->pid);
        }
        f.advice = std::move(a.en);
        f.advice_local = std::move(a.loc);
      }
    } else if (f.stacks.empty()) {
      f.advice = std::string(advice::kD23Hang);
    } else {
      if (holder.empty())
        holder = phrase(
            "The job makes no progress: the stacks say where each rank is. A rank that is elsewhere than the "
            "others (sleeping, on a lock, in the loader) while they sit in a collective holds them all: fix "
            "that "
            "line. Set a timeout in init_process_group(timeout=...) and TORCH_NCCL_ASYNC_ERROR_HANDLING=1 so "
            "that a hang fails instead of holding the GPUs.");
      else
        holder += phrase(
            "Set a timeout in init_process_group(timeout=...) and TORCH_NCCL_ASYNC_ERROR_HANDLING=1 so that "
            "a "
            "hang fails instead of holding the GPUs.");
      f.advice = std::move(holder.en);
      f.advice_local = std::move(holder.loc);
    }
    set_cost(f, 1.0, "measured");
    f.thresholds = {{"hang_p90_factor", th.hang_p90_factor},
                    {"hang_floor_s", th.hang_floor_s},
                    {"hang_p90_window_s", th.hang_p90_window_s},
                    {"hang_alive_s", th.hang_alive_s}};
    out.push_back(std::move(f));
  }
  // Stalls inside a collective: their sentence joins the critical finding of the same stall, else
  // they are a warning of their own (before the critical floor, or a stall held shorter).
  const std::size_t critical = out.size();
  for (const auto& [ep, st] : coll_stalls) {
    const double t_end = grid[ep.i1];
    Finding* same = nullptr;
    for (std::size_t q = 0; q < critical; ++q)
      if (out[q].start_s <= t_end && out[q].end_s >= st.since) same = &out[q];
    if (same) {
      say(*same, "; ");
      Phrase a = describe_coll_stall(*same, s, th, st, same->end_s);
      if (same->stacks.empty()) {
        a += phrase(
            "Set a timeout in init_process_group(timeout=...) and TORCH_NCCL_ASYNC_ERROR_HANDLING=1 so that "
            "a "
            "hang fails instead of holding the GPUs.");
        same->advice = std::move(a.en);
        same->advice_local = std::move(a.loc);
      }
      continue;
    }
    Finding f = make_finding("D23", Severity::warning, st.since, t_end);
    std::set<unsigned> gpus;
    std::set<std::uint32_t> pids;
    for (const auto& r : s.train.ranks) {
      if (r.id.gpu >= 0) gpus.insert(static_cast<unsigned>(r.id.gpu));
      if (r.id.pid) pids.insert(r.id.pid);
    }
    f.gpus.assign(gpus.begin(), gpus.end());
    f.pids.assign(pids.begin(), pids.end());
    // The stacks trainmon asked for when the warning opened (as for the critical finding).
    for (const auto& r : s.train.ranks)
      if (auto sk = stack_of(s, r.id, st.since, t_end + std::max(th.clear_s, th.hang_alive_s)))
        f.stacks.push_back(*sk);
    Phrase a = describe_coll_stall(f, s, th, st, t_end);
    a += phrase(
        "Set a timeout in init_process_group(timeout=...) and TORCH_NCCL_ASYNC_ERROR_HANDLING=1 so that "
        "a "
        "hang fails instead of holding the GPUs.");
    f.advice = std::move(a.en);
    f.advice_local = std::move(a.loc);
    put(f.numbers, "stall_s", t_end - st.since);
    put(f.numbers, "window_s", st.window);
    put(f.numbers, "p90_step_s", st.p90);
    put(f.numbers, "ranks", static_cast<double>(s.train.ranks.size()));
    set_cost(f, 1.0, "measured");
    f.thresholds = {{"hang_p90_factor", th.hang_p90_factor},
                    {"hang_coll_floor_s", th.hang_coll_floor_s},
                    {"hang_p90_window_s", th.hang_p90_window_s},
                    {"hang_alive_s", th.hang_alive_s}};
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace trainmon::diagnose
