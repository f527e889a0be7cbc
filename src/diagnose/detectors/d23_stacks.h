// SPDX-License-Identifier: Apache-2.0
// D23's stack attribution (d23_stack_attribution.cpp): the Python stacks trainmon asked the ranks for
// when a hang opened, matched to the stalled ranks, and from them the rank that holds the job (not in
// a collective, or silent, while the others wait in one) or collectives that only some ranks call.
// Used by d23_training_hang.cpp only.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "diagnose/detail.h"
#include "trainmon/diagnose/finding.h"
#include "trainmon/diagnose/series.h"

namespace trainmon::diagnose::d23 {

using detail::Phrase;

/// The latest stack of rank `id` (by rank key, else by pid) asked for within [t0, t1] (seconds since
/// the run's start), parsed; nullopt when the rank sent none in that time.
std::optional<RankStack> stack_of(const RunSeries& s, const TrainRank& id, double t0, double t1);

/// "rank 3", or "process 4242" for a process without a rank (both languages).
Phrase who(const RankStack& st);

/// The DataLoader sentence of the advice for a process waiting for its next batch; `pid` its pid.
Phrase loader_advice(std::uint32_t pid);

/// The ranks that hold the others, from the stacks: those not in a collective while others wait in
/// one; else, while others wait in one, the stalled ranks in `mute` (they stopped reporting and sent
/// no stack). Empty when the stacks do not tell.
struct Holders {
  std::vector<const RankStack*> ranks, waiting;
  bool mute = false;  ///< the holders are `mute` ranks (no stack)
};
Holders holders_of(const std::vector<RankStack>& stacks, const std::vector<RankStack>& mute);

/// From the ranks' stacks (f.stacks): which rank holds the others (not in a collective while they
/// wait in one, or silent without a stack while they wait in one), or that the ranks wait in
/// different collectives (one that only some ranks call). Adds it to the evidence (and
/// numbers.holding_rank for a single one) and returns the advice's first sentences; empty when the
/// stacks do not tell (all elsewhere, all in the same collective, or one stack only). `data_keys`:
/// the ranks waiting for data.
Phrase who_holds_the_job(Finding& f, const std::vector<RankStack>& mute,
                         const std::set<std::int64_t>& data_keys);

}  // namespace trainmon::diagnose::d23
