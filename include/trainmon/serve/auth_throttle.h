// SPDX-License-Identifier: Apache-2.0
// AuthThrottle: slows down a client that keeps sending wrong tokens to `trainmon serve`, with bounded
// memory. Each client (by address) may fail kFreeFailures times; after that it must wait before the
// next attempt, 1 s after the first extra failure and twice as long after each further one, up to
// kMaxDelay (the lock-out schedule of OpenSSH's PerSourcePenalties and fail2ban's bantime.increment).
// While it waits, its requests are answered 429 without the token being looked at, so guessing
// runs at most one try per delay whatever the client's request rate. Only requests that present a
// credential count (a browser's first visit without one is no guess). A success does not forget the
// failures: every loopback client shares one address, and a scraper's success would otherwise hand a
// guesser on the same machine fresh tries. At most kMaxClients are remembered (the one seen least recently
// goes first): an attacker cycling addresses costs us a fixed table, never memory.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace trainmon::serve {

class AuthThrottle {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kFreeFailures = 5;
  static constexpr std::chrono::seconds kFirstDelay{1};
  static constexpr std::chrono::seconds kMaxDelay{60};
  /// A client without a failure for this long is forgotten.
  static constexpr std::chrono::minutes kForgetAfter{10};
  static constexpr std::size_t kMaxClients = 1024;

  /// How long `client` must still wait before its token is checked again; zero: check it now.
  std::chrono::milliseconds wait_for(std::string_view client, Clock::time_point now);
  /// A wrong or missing token from `client`.
  void failed(std::string_view client, Clock::time_point now);
  /// Clients remembered now (tests).
  std::size_t clients() const noexcept { return table_.size(); }

 private:
  struct Entry {
    int failures = 0;
    Clock::time_point last{};
    Clock::time_point until{};  ///< no check before this
  };
  void evict(Clock::time_point now);
  std::unordered_map<std::string, Entry> table_;
};

}  // namespace trainmon::serve
