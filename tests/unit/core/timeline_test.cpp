// SPDX-License-Identifier: Apache-2.0
// The run's timeline (wall time at start + monotonic elapsed), the tick schedule that skips what a
// stall missed, and counters that continue across resets.
#include <gtest/gtest.h>

#include "trainmon/core/counter.h"
#include "trainmon/core/timeline.h"

namespace trainmon {
namespace {

constexpr std::int64_t kS = 1'000'000'000;

TEST(CatchUp, OnTimeAndALittleLateKeepThePhase) {
  EXPECT_EQ(catch_up(kS, kS, kS / 2).at_ns, kS);  // early: the loop waits for it
  EXPECT_EQ(catch_up(kS, kS, kS / 2).skipped, 0);
  // late by less than one interval: the tick is just late, nothing skipped
  const auto late = catch_up(kS, kS, kS + kS / 2);
  EXPECT_EQ(late.at_ns, kS);
  EXPECT_EQ(late.skipped, 0);
}

TEST(CatchUp, AStallSkipsTheMissedTicksInsteadOfReplayingThem) {
  // tick 1 was due, the loop woke at 10.3 (stopped meanwhile): ticks 1..9 are skipped, the tick
  // taken now is tick 10
  const auto n = catch_up(kS, kS, 10 * kS + 3 * kS / 10);
  EXPECT_EQ(n.skipped, 9);
  EXPECT_EQ(n.at_ns, 10 * kS);
  // the next one is due an interval later, on the same phase: one tick per interval, no burst
  const auto m = catch_up(n.at_ns + kS, kS, 10 * kS + 4 * kS / 10);
  EXPECT_EQ(m.at_ns, 11 * kS);
  EXPECT_EQ(m.skipped, 0);
  // exactly one interval late is one skipped tick
  EXPECT_EQ(catch_up(kS, kS, 2 * kS).skipped, 1);
}

TEST(Timeline, TimesComeFromTheMonotonicClock) {
  const Timeline tl{1'700'000'000 * kS, 50 * kS};
  Snapshot snap;
  snap.monotonic_ns = 53 * kS;
  snap.time_unix_ns = 1'700'000'000 * kS + 3 * kS + 86'400 * kS;  // the wall clock stepped a day
  EXPECT_EQ(tl.of(snap), 1'700'000'000 * kS + 3 * kS);
  EXPECT_DOUBLE_EQ(tl.elapsed_s(snap.monotonic_ns), 3.0);
  // an event read 0.2 s before the snapshot, by the stepped wall clock, lies 0.2 s before it
  EXPECT_EQ(tl.of_wall(snap.time_unix_ns - kS / 5, snap, tl.at(52 * kS), tl.at(54 * kS)),
            tl.of(snap) - kS / 5);
  // one read before the step (a day earlier by the wall clock) stays inside the tick
  EXPECT_EQ(tl.of_wall(snap.time_unix_ns - 86'400 * kS, snap, tl.at(52 * kS), tl.at(54 * kS)),
            tl.at(52 * kS));
  EXPECT_EQ(tl.of_wall(snap.time_unix_ns + 86'400 * kS, snap, tl.at(52 * kS), tl.at(54 * kS)),
            tl.at(54 * kS));
}

TEST(ContinuedCounter, AResetIsNotADecrease) {
  ContinuedCounter c;
  EXPECT_FALSE(c.seen());
  EXPECT_DOUBLE_EQ(c.observe(5), 5);
  EXPECT_DOUBLE_EQ(c.observe(7), 7);
  EXPECT_DOUBLE_EQ(c.observe(0), 7);  // driver reload: counted again from 0
  EXPECT_DOUBLE_EQ(c.observe(2), 9);
  EXPECT_DOUBLE_EQ(c.increase(), 4);
  EXPECT_DOUBLE_EQ(c.highest(), 7);
  EXPECT_DOUBLE_EQ(c.last(), 2);
  EXPECT_EQ(c.resets(), 1u);
  EXPECT_DOUBLE_EQ(c.observe(1), 10);  // a second reset to 1: 1 new count
  EXPECT_EQ(c.resets(), 2u);
}

}  // namespace
}  // namespace trainmon
