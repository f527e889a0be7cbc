// SPDX-License-Identifier: Apache-2.0
// D23's stack attribution (d23_stacks.h): the ranks' Python stacks matched to the stalled ranks, and
// which rank holds the job.
#include <algorithm>
#include <string>

#include "diagnose/detectors/d23_stacks.h"
#include "diagnose/detectors/train_common.h"
#include "trainmon/diagnose/stacks.h"

namespace trainmon::diagnose::d23 {
using namespace detail;

namespace {

/// "rank 1", "rank 0, rank 2", or "7 ranks" beyond four (both languages).
Phrase ranks_text(const std::vector<const RankStack*>& v) {
  if (v.size() > 4) return phrase("{} ranks", v.size());
  Phrase out;
  for (const auto* st : v) add_listed(out, who(*st));
  return out;
}

}  // namespace

/// The latest stack of rank `key` asked for within [t0, t1], parsed.
std::optional<RankStack> stack_of(const RunSeries& s, const TrainRank& id, double t0, double t1) {
  const TrainStackRec* best = nullptr;
  for (const auto& st : s.stacks) {
    if (st.t < t0 || st.t > t1) continue;
    if (st.rank_key != id.key && !(id.pid && st.pid == id.pid)) continue;
    best = &st;
  }
  if (!best) return std::nullopt;
  RankStack rs;
  rs.t = best->t;
  rs.rank_key = id.key;
  rs.rank = id.rank;
  rs.pid = best->pid;
  rs.host = id.host;
  const auto threads = parse_faulthandler(best->text);
  if (const auto* m = main_thread(threads)) {
    const auto at = stuck_at(*m);
    rs.where = at.where;
    rs.caller = at.caller;
    rs.main_stack = thread_text(*m);
    rs.collective = collective_of(*m);
  }
  return rs;
}

Phrase who(const RankStack& st) {
  return st.rank >= 0 ? phrase("rank {}", st.rank) : phrase("process {}", st.pid);
}

/// The DataLoader sentence of the advice for a process waiting for its next batch; `pid` its pid.
Phrase loader_advice(std::uint32_t pid) {
  return phrase(
      "Its DataLoader's worker processes feed it: a worker stuck in the dataset's __getitem__ (I/O, a lock, "
      "a sleep) or gone holds it; look at them with `py-spy dump --pid PID` (its children: `pstree -p {}`) "
      "and set DataLoader(timeout=...) so that a stuck worker raises instead of hanging. ",
      pid);
}

Holders holders_of(const std::vector<RankStack>& stacks, const std::vector<RankStack>& mute) {
  Holders h;
  std::vector<const RankStack*> elsewhere;
  for (const auto& st : stacks) {
    if (st.where.empty()) continue;
    (st.collective.empty() ? elsewhere : h.waiting).push_back(&st);
  }
  if (h.waiting.empty()) return h;
  if (!elsewhere.empty()) {
    h.ranks = std::move(elsewhere);
  } else if (!mute.empty()) {
    for (const auto& m : mute) h.ranks.push_back(&m);
    h.mute = true;
  }
  return h;
}

/// From the ranks' stacks: which rank holds the others (not in a collective while they wait in
/// one, or silent without a stack while they wait in one), or that the ranks wait in different
/// collectives (one that only some ranks call). Adds it to the evidence (and numbers.holding_rank
/// for a single one) and returns the advice's first sentences; empty when the stacks do not tell
/// (all elsewhere, all in the same collective, or one stack only). `data_keys`: the ranks waiting
/// for data.
Phrase who_holds_the_job(Finding& f, const std::vector<RankStack>& mute,
                         const std::set<std::int64_t>& data_keys) {
  const Holders h = holders_of(f.stacks, mute);
  if (!h.ranks.empty()) {
    const RankStack& first = *h.ranks.front();
    const Phrase odd = ranks_text(h.ranks), others = ranks_text(h.waiting);
    const std::string& coll = h.waiting.front()->collective;
    const bool one = h.ranks.size() == 1, one_waits = h.waiting.size() == 1;
    if (h.mute && one && one_waits)
      say(f, "; {} sent no stack and stopped reporting while {} waits in a collective ({}): {} holds the job",
          odd, others, coll, odd);
    else if (h.mute && one)
      say(f, "; {} sent no stack and stopped reporting while {} wait in a collective ({}): {} holds the job",
          odd, others, coll, odd);
    else if (h.mute && one_waits)
      say(f, "; {} sent no stack and stopped reporting while {} waits in a collective ({}): {} hold the job",
          odd, others, coll, odd);
    else if (h.mute)
      say(f, "; {} sent no stack and stopped reporting while {} wait in a collective ({}): {} hold the job",
          odd, others, coll, odd);
    else if (one && one_waits)
      say(f, "; {} is not in a collective while {} waits in one ({}): {} holds the job", odd, others, coll,
          odd);
    else if (one)
      say(f, "; {} is not in a collective while {} wait in one ({}): {} holds the job", odd, others, coll,
          odd);
    else if (one_waits)
      say(f, "; {} are not in a collective while {} waits in one ({}): {} hold the job", odd, others, coll,
          odd);
    else
      say(f, "; {} are not in a collective while {} wait in one ({}): {} hold the job", odd, others, coll,
          odd);
    if (one && first.rank >= 0) put(f.numbers, "holding_rank", first.rank);
    if (h.mute)
      return one ? phrase(
                       "Look at {} first: it answers nothing (no stack, no heartbeat) while the others wait "
                       "for it in a collective: its process is stopped (State: T in /proc/{}/status: "
                       "SIGSTOP or a debugger; `kill -CONT {}` resumes it) or Python is blocked holding the "
                       "GIL (`py-spy dump --pid {}` still reads it). ",
                       odd, first.pid, first.pid, first.pid)
                 : phrase(
                       "Look at {} first: they answer nothing (no stack, no heartbeat) while the others wait "
                       "for them in a collective: their processes are stopped (State: T in "
                       "/proc/PID/status: SIGSTOP or a debugger; `kill -CONT PID` resumes them) or Python "
                       "is blocked holding the GIL (`py-spy dump --pid PID` still reads it). ",
                       odd);
    const std::string& line = first.caller.empty() ? first.where : first.caller;
    if (one && data_keys.contains(first.rank_key)) {
      Phrase p = phrase(
          "Look at {} first: it waits for its next batch (at {}) while the others wait for it in a "
          "collective. ",
          odd, line);
      p += loader_advice(first.pid);
      return p;
    }
    return one ? phrase("Look at {} first: it is at {} while the others wait for it in a collective. ", odd,
                        line)
               : phrase("Look at {} first: they are at {} while the others wait for them in a collective. ",
                        odd, line);
  }
  const auto& waiting = h.waiting;
  if (waiting.size() < 2) return {};
  // Waits that any collective ends in (a work handle's wait, a CUDA synchronize) say nothing of which.
  auto generic = [](const std::string& c) { return c == "wait" || c == "synchronize" || c == "_wait"; };
  std::vector<std::string> seen;
  for (const auto* st : waiting) {
    if (generic(st->collective)) continue;
    if (std::find(seen.begin(), seen.end(), st->collective) == seen.end()) seen.push_back(st->collective);
  }
  if (seen.size() < 2) return {};
  Phrase list;
  for (const auto* st : waiting) add_listed(list, phrase("{} in {}", who(*st), st->collective));
  say(f,
      "; the ranks wait in different collectives ({}): a collective that only some ranks call never "
      "completes",
      list);
  return phrase(
      "The ranks must call the same collectives in the same order: look for a branch on the rank, or ranks "
      "that "
      "get different numbers of batches (DistributedSampler(drop_last=True), or DDP's join() for uneven "
      "inputs). ");
}

}  // namespace trainmon::diagnose::d23
