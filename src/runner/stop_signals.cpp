// SPDX-License-Identifier: Apache-2.0
#include "trainmon/runner/stop_signals.h"

#include <signal.h>

#include <atomic>

#include "trainmon/runner/launcher.h"

namespace trainmon::runner {
namespace {

std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");

void on_stop_signal(int) {
  g_stop.store(true, std::memory_order_relaxed);
}

}  // namespace

void catch_stop_signals(bool hangup, bool restart) {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = restart ? SA_RESTART : 0;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  if (hangup) ::sigaction(SIGHUP, &sa, nullptr);
}

bool stop_requested() noexcept {
  return g_stop.load(std::memory_order_relaxed) || stop_signal_pending();
}

}  // namespace trainmon::runner
