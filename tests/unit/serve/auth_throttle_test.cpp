// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <string>

#include "trainmon/serve/auth_throttle.h"

using namespace trainmon::serve;
using namespace std::chrono_literals;

TEST(AuthThrottle, FreeFailuresThenDoublingDelaysPerClient) {
  AuthThrottle t;
  const auto t0 = AuthThrottle::Clock::time_point{} + 1h;
  for (int i = 0; i < AuthThrottle::kFreeFailures; ++i) {
    EXPECT_EQ(t.wait_for("10.0.0.1", t0), 0ms);
    t.failed("10.0.0.1", t0);
  }
  EXPECT_EQ(t.wait_for("10.0.0.1", t0), 0ms) << "five tries cost nothing";
  t.failed("10.0.0.1", t0);
  EXPECT_EQ(t.wait_for("10.0.0.1", t0), 1000ms);
  EXPECT_EQ(t.wait_for("10.0.0.2", t0), 0ms) << "another client is not slowed";
  t.failed("10.0.0.1", t0 + 1s);
  EXPECT_EQ(t.wait_for("10.0.0.1", t0 + 1s), 2000ms);
  t.failed("10.0.0.1", t0 + 3s);
  EXPECT_EQ(t.wait_for("10.0.0.1", t0 + 3s), 4000ms);
  for (int i = 0; i < 20; ++i) t.failed("10.0.0.1", t0 + 10s);
  EXPECT_EQ(t.wait_for("10.0.0.1", t0 + 10s), std::chrono::milliseconds(AuthThrottle::kMaxDelay));
  EXPECT_EQ(t.wait_for("10.0.0.1", t0 + 10s + AuthThrottle::kMaxDelay), 0ms) << "the wait ends";
  // Forgotten after a quiet while: it starts with free tries again.
  for (int i = 0; i < 8; ++i) t.failed("10.0.0.3", t0);
  const auto later = t0 + AuthThrottle::kForgetAfter + 1s;
  t.failed("10.0.0.3", later);
  EXPECT_EQ(t.wait_for("10.0.0.3", later), 0ms);
}

TEST(AuthThrottle, MemoryIsBoundedWhateverTheNumberOfClients) {
  AuthThrottle t;
  const auto t0 = AuthThrottle::Clock::time_point{} + 1h;
  for (int i = 0; i < 20000; ++i) t.failed("client-" + std::to_string(i), t0 + std::chrono::milliseconds(i));
  EXPECT_LE(t.clients(), AuthThrottle::kMaxClients);
  // The newest clients are the ones kept.
  for (int k = 0; k < 6; ++k) t.failed("client-19999", t0 + 20s);
  EXPECT_GT(t.wait_for("client-19999", t0 + 20s), 0ms);
}
