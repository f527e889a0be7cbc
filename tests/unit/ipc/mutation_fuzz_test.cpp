// SPDX-License-Identifier: Apache-2.0
// Seeded mutation fuzzing of parse_train_event, run in CI (and under ASan/UBSan with
// -DTRAINMON_SANITIZE=ON). The libFuzzer target tests/fuzz/fuzz_train_event.cpp explores further.
#include <gtest/gtest.h>

#include <array>
#include <random>
#include <string>
#include <vector>

#include "trainmon/diagnose/train_message.h"

using namespace trainmon::diagnose;  // the training-event parser (diagnose/train_message.h)

namespace {

const std::vector<std::string>& seeds() {
  static const std::vector<std::string> s = {
      R"({"v":1,"type":"hello","t":1718000000.5,"pid":4242,"framework":"loop","run_id":"7"})",
      R"({"v":1,"type":"train_start","t":1718000001,"epochs":200,"batch_size":128,"imgsz":640})",
      R"({"v":1,"type":"epoch_start","t":1718000002,"epoch":0,"epochs":200})",
      R"({"v":1,"type":"batch_end","t":1718000003.125,"seq":3,"epoch":0,"batch":17,"batches":100,)"
      R"("step":17,"batch_size":128,"loss":2.5,"lr":0.01,"rss_bytes":123456789})",
      R"({"v":1,"type":"epoch_end","t":1718000004,"epoch":0,"epochs":200,"rank":1,"gpu":1,)"
      R"("torch":{"allocated_bytes":3328599654,"reserved_bytes":4294967296,"peak_bytes":3865470566,)"
      R"("num_alloc_retries":2,"num_ooms":0},"dropped":0})",
      R"({"v":1,"type":"val_end","t":1718000005,"epoch":0,"loss":-0.0})",
      R"({"v":1,"type":"memory","t":1718000006,"rss_bytes":1,"extra":{"a":[1,2,{"b":null}]}})",
      R"({"v":1,"type":"train_end","t":1718000007,"epoch":199,"framework":"ultralytics"})",
      // protocol v3: the collective wait and the collective a rank is inside
      R"({"v":3,"type":"batch_end","t":1718000008,"mt":812.5,"rank":1,"steps":{"n":2,"span_s":0.9,)"
      R"("step_s":{"sum":0.9,"min":0.4,"max":0.5,"p50":0.4,"p90":0.5,"p99":0.5},)"
      R"("comm_s":{"sum":0.3,"min":0.1,"max":0.2,"p50":0.1,"p90":0.2,"p99":0.2},)"
      R"("total":{"steps":40,"step_s":18.2,"comm_s":5.5},"phase":"collective","phase_mt":812.4,)"
      R"("coll":{"op":"all_reduce","seq":5120,"pg":"0","bytes":4194304}}})",
  };
  return s;
}

// Tokens that tend to reach interesting parser and validator branches.
constexpr std::array<std::string_view, 24> kTokens = {"{",
                                                      "}",
                                                      "[",
                                                      "]",
                                                      "\"",
                                                      ",",
                                                      ":",
                                                      "\\",
                                                      "\\u0000",
                                                      "\\ud800",
                                                      "null",
                                                      "true",
                                                      "1e999",
                                                      "-1",
                                                      "-0",
                                                      "0.5",
                                                      "1e15",
                                                      "nan",
                                                      "\xff",
                                                      "\xc3\xa9",
                                                      "99999999999999999999999",
                                                      "\"type\":\"epoch_end\"",
                                                      "\"v\":1",
                                                      "\"torch\":{"};

std::string mutate(std::string s, std::mt19937_64& rng) {
  auto pick = [&](std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(rng() % n); };
  int rounds = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < rounds; ++i) {
    switch (rng() % 8) {
      case 0:  // flip one bit
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1u << (rng() % 8));
        break;
      case 1:  // random byte
        s.insert(s.begin() + static_cast<long>(pick(s.size() + 1)), static_cast<char>(rng() & 0xff));
        break;
      case 2: {  // delete a range
        if (s.empty()) break;
        std::size_t at = pick(s.size());
        s.erase(at, 1 + pick(std::min<std::size_t>(16, s.size() - at)));
        break;
      }
      case 3: {  // duplicate a range
        if (s.empty()) break;
        std::size_t at = pick(s.size());
        std::size_t len = 1 + pick(std::min<std::size_t>(32, s.size() - at));
        s.insert(pick(s.size() + 1), s.substr(at, len));
        break;
      }
      case 4: {  // splice with another seed
        const auto& other = seeds()[pick(seeds().size())];
        std::size_t cut = pick(s.size() + 1);
        s = s.substr(0, cut) + other.substr(pick(other.size() + 1));
        break;
      }
      case 5:  // insert a token
        s.insert(pick(s.size() + 1), kTokens[pick(kTokens.size())]);
        break;
      case 6: {  // replace a digit run with a token
        std::size_t at = s.find_first_of("0123456789", pick(s.size() + 1));
        if (at == std::string::npos) break;
        std::size_t end = s.find_first_not_of("0123456789.", at);
        s.replace(at, (end == std::string::npos ? s.size() : end) - at, kTokens[pick(kTokens.size())]);
        break;
      }
      default: {  // nest deeply
        std::size_t n = 1 + pick(64);
        s = std::string(n, '[') + s + std::string(n, ']');
        break;
      }
    }
    if (s.size() > kMaxMessageBytes + 16) s.resize(kMaxMessageBytes + 16);
  }
  return s;
}

}  // namespace

TEST(IpcFuzz, TwoHundredThousandMutatedMessagesNeverCrashAndAcceptedOnesRoundTrip) {
  std::mt19937_64 rng(0x7261696e6d6f6eULL);  // fixed seed: failures reproduce
  std::array<std::size_t, kRejectReasonCount> rejected{};
  std::size_t accepted = 0;
  for (int i = 0; i < 200'000; ++i) {
    const std::string input = mutate(seeds()[static_cast<std::size_t>(i) % seeds().size()], rng);
    auto r = parse_train_event(input);
    if (!r) {
      ++rejected[static_cast<std::size_t>(reject_reason_of(r.error()))];
      ASSERT_FALSE(r.error().name.empty());
      continue;
    }
    ++accepted;
    // Whatever was accepted is in range and survives its canonical form unchanged.
    ASSERT_GE(r->time_unix_s, 1e9) << input;
    ASSERT_LE(r->framework.size(), kMaxStringBytes);
    auto again = parse_train_event(to_json(*r));
    ASSERT_TRUE(again.has_value()) << input << "\n" << to_json(*r);
    ASSERT_EQ(*again, *r) << input;
  }
  // The mutations reach both sides and the main reject branches.
  EXPECT_GT(accepted, 1000u);
  EXPECT_GT(rejected[static_cast<std::size_t>(RejectReason::not_json)], 1000u);
  EXPECT_GT(rejected[static_cast<std::size_t>(RejectReason::bad_field)], 100u);
  EXPECT_GT(rejected[static_cast<std::size_t>(RejectReason::too_deep)], 100u);
  EXPECT_GT(rejected[static_cast<std::size_t>(RejectReason::unknown_type)], 10u);
}

TEST(IpcFuzz, SeedsAreValid) {
  for (const auto& s : seeds()) EXPECT_TRUE(parse_train_event(s).has_value()) << s;
}
