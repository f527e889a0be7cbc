// SPDX-License-Identifier: Apache-2.0
// PCIe throughput from NVML's byte counters (fields 197/198) and its fallbacks to the blocking
// nvmlDeviceGetPcieThroughput: the pure rate function, the link bound, and the backend through
// open_nvml_backend() into the fake driver (which counts calls per entry point: fakeNvmlCallCount).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "device/nvml/nvml_device.h"
#include "device/nvml/nvml_pcie.h"
#include "device/nvml/nvml_validate.h"
#include "nvml_test_util.h"

namespace trainmon {
namespace {

using namespace std::chrono_literals;
using nvml::PcieCounterReading;
using nvml::PcieRateStatus;
using testing::open_fake;
using testing::ScopedEnv;
using testing::Tick;
using testing::tick;

// ---- the pure rate function ----

TEST(NvmlPcieRate, FirstReadingHasNoRate) {
  EXPECT_EQ(nvml::pcie_counter_rate(std::nullopt, {1000, 5, 5}).status, PcieRateStatus::no_previous);
}

TEST(NvmlPcieRate, DriverTimestampsGiveTheInterval) {
  // 1 MiB over 0.5 s of driver time = 2048 KiB/s, whatever our own (monotonic) clock says.
  const PcieCounterReading a{10'000, 1'700'000'000'000'000, 100};
  const PcieCounterReading b{10'000 + 1'048'576, 1'700'000'000'500'000, 9'000'000};
  auto r = nvml::pcie_counter_rate(a, b);
  ASSERT_EQ(r.status, PcieRateStatus::ok);
  EXPECT_DOUBLE_EQ(r.kib_s, 2048.0);
}

TEST(NvmlPcieRate, MonotonicTimeWhenATimestampIsMissing) {
  const PcieCounterReading a{0, 0, 1'000'000};
  const PcieCounterReading b{4096, 1'700'000'000'000'000, 3'000'000};  // only one has a driver time
  auto r = nvml::pcie_counter_rate(a, b);
  ASSERT_EQ(r.status, PcieRateStatus::ok);
  EXPECT_DOUBLE_EQ(r.kib_s, 2.0);  // 4 KiB over 2 s
}

TEST(NvmlPcieRate, NoElapsedTimeGivesNoRate) {
  EXPECT_EQ(nvml::pcie_counter_rate(PcieCounterReading{0, 500, 1}, {100, 500, 2}).status,
            PcieRateStatus::no_elapsed_time);  // frozen driver clock
  EXPECT_EQ(nvml::pcie_counter_rate(PcieCounterReading{0, 500, 1}, {100, 400, 2}).status,
            PcieRateStatus::no_elapsed_time);  // driver clock stepped back
  EXPECT_EQ(nvml::pcie_counter_rate(PcieCounterReading{0, 0, 7}, {100, 0, 7}).status,
            PcieRateStatus::no_elapsed_time);  // no driver time, same monotonic instant
}

TEST(NvmlPcieRate, CounterGoingBackwardsIsAReset) {
  EXPECT_EQ(nvml::pcie_counter_rate(PcieCounterReading{5000, 1, 1}, {4999, 2, 2}).status,
            PcieRateStatus::counter_went_backwards);
}

TEST(NvmlPcieRate, IdleLinkIsZeroAndHugeCountersStayExact) {
  auto idle = nvml::pcie_counter_rate(PcieCounterReading{777, 1'000'000, 0}, {777, 2'000'000, 0});
  ASSERT_EQ(idle.status, PcieRateStatus::ok);
  EXPECT_EQ(idle.kib_s, 0.0);
  // Near 2^64 the delta is taken in integers before it becomes a double.
  const std::uint64_t big = ~std::uint64_t{0} - 10'000'000;
  auto r = nvml::pcie_counter_rate(PcieCounterReading{big, 1'000'000, 0}, {big + 1024, 2'000'000, 0});
  ASSERT_EQ(r.status, PcieRateStatus::ok);
  EXPECT_DOUBLE_EQ(r.kib_s, 1.0);
}

// ---- the physical bound ----

TEST(NvmlPcieBound, LinkMaximum) {
  EXPECT_DOUBLE_EQ(*nvml::pcie_link_max_bytes_s(1, 1), 250e6);
  EXPECT_DOUBLE_EQ(*nvml::pcie_link_max_bytes_s(3, 16), 8e9 * 128 / 130 / 8 * 16);
  EXPECT_NEAR(*nvml::pcie_link_max_bytes_s(5, 16), 63.015e9, 0.001e9);
  EXPECT_FALSE(nvml::pcie_link_max_bytes_s(0, 16));
  EXPECT_FALSE(nvml::pcie_link_max_bytes_s(8, 16));
  EXPECT_FALSE(nvml::pcie_link_max_bytes_s(5, 0));
  EXPECT_FALSE(nvml::pcie_link_max_bytes_s(5, 0xFFFFFFFFu));
}

TEST(NvmlPcieBound, RatesAboveTwiceTheLinkAreInvalid) {
  const double link = *nvml::pcie_link_max_bytes_s(5, 16);
  const double limit_kib_s = 2 * link / 1024;
  auto ok = nvml::checked_pcie_rate_kib_s(limit_kib_s - 1, link);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok.value, static_cast<unsigned>(std::llround(limit_kib_s - 1)));
  EXPECT_EQ(nvml::checked_pcie_rate_kib_s(limit_kib_s + 1, link).status, ReadStatus::invalid_value);
  EXPECT_EQ(nvml::checked_pcie_rate_kib_s(1234.4, link).value, 1234u);
  EXPECT_EQ(nvml::checked_pcie_rate_kib_s(-1, link).status, ReadStatus::invalid_value);
  EXPECT_EQ(nvml::checked_pcie_rate_kib_s(std::nan(""), link).status, ReadStatus::invalid_value);
  // Unknown link: 1 TB/s.
  EXPECT_TRUE(nvml::checked_pcie_rate_kib_s(0.99e12 / 1024, std::nullopt).ok());
  EXPECT_EQ(nvml::checked_pcie_rate_kib_s(1.01e12 / 1024, std::nullopt).status, ReadStatus::invalid_value);
}

// ---- the backend through the fake driver ----

/// fakeNvmlCallCount of the default fake (the instance the backend loaded).
unsigned long long calls(const char* fn) {
  void* lib = dlopen(TRAINMON_FAKE_NVML_PATH, RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) return ~0ull;
  auto count = reinterpret_cast<unsigned long long (*)(const char*)>(dlsym(lib, "fakeNvmlCallCount"));
  const unsigned long long n = count ? count(fn) : ~0ull;
  dlclose(lib);
  return n;
}
unsigned long long blocking_calls() {
  return calls("nvmlDeviceGetPcieThroughput");
}
unsigned long long field_calls() {
  return calls("nvmlDeviceGetFieldValues");
}

/// A one-GPU scenario (Gen5 x16) in a fresh file; `device_extra` is spliced into the device object
/// and `metrics` is its metrics object; `top` (ending in a comma) adds top-level keys.
std::string scenario(const std::string& device_extra, const std::string& metrics,
                     const std::string& top = "") {
  struct TempDir {  // removed at exit
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("trainmon-pcie-test-" + std::to_string(::getpid()));
    ~TempDir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static TempDir tmp;
  static int n = 0;
  const auto& dir = tmp.path;
  std::filesystem::create_directories(dir);
  auto path = dir / ("s" + std::to_string(n++) + ".json");
  std::ofstream(path) << R"({"name": "pcie", )" << top << R"( "devices": [{"name": "NVIDIA H100 80GB HBM3",
    "uuid": "GPU-00000000-0000-4000-8000-0000000000c1", "memory_total": 85520809984,
    "pcie": {"gen_max": 5, "gen_current": 5, "width_max": 16, "width_current": 16},)"
                      << device_extra << R"( "metrics": )" << metrics << "}]}";
  return path.string();
}

const std::string kConstant = R"({"pcie_rx": 250000, "pcie_tx": 125000, "utilization_gpu": 10})";

/// Steps frozen scenario time (the fake reads TRAINMON_FAKE_NVML_TIME_S at every call).
Tick tick_at(DeviceBackend& b, double t) {
  setenv("TRAINMON_FAKE_NVML_TIME_S", std::to_string(t).c_str(), 1);
  return tick(b);
}

TEST(NvmlPcieCounters, SteadyTicksUseCountersAndNoBlockingCall) {
  // rx steps from 250000 to 500000 KB/s at t = 31.5: the counter rate over [31, 32] is the
  // average 375000 (the blocking call would see 500000 then).
  auto b = open_fake(scenario("", R"({"pcie_rx": [[0, 250000], [31.5, 500000]], "pcie_tx": 125000})"), 30);
  ASSERT_EQ(calls("fakeNvmlCallCount"), 0u);  // the hook is there (and not counted)
  const auto before = blocking_calls();
  auto t = tick_at(*b, 30);  // first tick: no previous counter value → blocking call
  ASSERT_EQ(t.gpus.size(), 1u);
  EXPECT_EQ(t.gpus[0].pcie_rx_kib_s, Reading<unsigned>::of(250000));
  EXPECT_EQ(t.gpus[0].pcie_tx_kib_s, Reading<unsigned>::of(125000));
  EXPECT_EQ(blocking_calls() - before, 2u);
  t = tick_at(*b, 31);
  EXPECT_EQ(t.gpus[0].pcie_rx_kib_s, Reading<unsigned>::of(250000));
  EXPECT_EQ(t.gpus[0].pcie_tx_kib_s, Reading<unsigned>::of(125000));
  t = tick_at(*b, 32);
  EXPECT_EQ(t.gpus[0].pcie_rx_kib_s, Reading<unsigned>::of(375000));
  EXPECT_EQ(t.gpus[0].pcie_tx_kib_s, Reading<unsigned>::of(125000));
  t = tick_at(*b, 34);  // a 2 s gap: still a per-second rate
  EXPECT_EQ(t.gpus[0].pcie_rx_kib_s, Reading<unsigned>::of(500000));
  EXPECT_EQ(blocking_calls() - before, 2u) << "steady-state ticks must not call nvmlDeviceGetPcieThroughput";
}

TEST(NvmlPcieCounters, RunningClockGivesTheTimelineRate) {
  for (const char* scale : {"1", "10"}) {  // the field timestamps run on the scenario clock
    ScopedEnv ts("TRAINMON_FAKE_NVML_TIME_SCALE", std::string(scale));
    auto b = open_fake(scenario("", kConstant), std::nullopt);
    const auto before = blocking_calls();
    tick(*b);
    for (int i = 0; i < 3; ++i) {
      std::this_thread::sleep_for(150ms);
      auto t = tick(*b);
      ASSERT_TRUE(t.gpus[0].pcie_rx_kib_s.ok()) << scale;
      ASSERT_TRUE(t.gpus[0].pcie_tx_kib_s.ok()) << scale;
      // Exact but for rounding to whole bytes and µs timestamps.
      EXPECT_NEAR(t.gpus[0].pcie_rx_kib_s.value, 250000.0, 3) << scale;
      EXPECT_NEAR(t.gpus[0].pcie_tx_kib_s.value, 125000.0, 3) << scale;
    }
    EXPECT_EQ(blocking_calls() - before, 2u) << scale;
  }
}

TEST(NvmlPcieCounters, NoDriverTimestampsUseTheMonotonicClock) {
  auto b = open_fake(scenario(R"("pcie_counters": {"timestamps": false},)", kConstant), std::nullopt);
  const auto before = blocking_calls();
  tick(*b);
  std::this_thread::sleep_for(400ms);
  auto t = tick(*b);
  ASSERT_TRUE(t.gpus[0].pcie_rx_kib_s.ok());
  // Our clock around the call, not the driver's instant: close, not exact (a loaded machine can
  // delay a thread between the two).
  EXPECT_GT(t.gpus[0].pcie_rx_kib_s.value, 125000u);
  EXPECT_LT(t.gpus[0].pcie_rx_kib_s.value, 375000u);
  EXPECT_EQ(blocking_calls() - before, 2u);
}

TEST(NvmlPcieCounters, FrozenClockFallsBackThenStopsProbing) {
  // The golden tests' case: counters and timestamps stand still, so every value comes from the
  // blocking call, and after kPcieCounterMaxMisses such ticks the counters are not read any more.
  auto b = open_fake(scenario("", kConstant), 30);
  const auto blocking0 = blocking_calls();
  const auto fields0 = field_calls();
  constexpr unsigned kTicks = nvml::kPcieCounterMaxMisses + 4;
  for (unsigned i = 0; i < kTicks; ++i) {
    auto t = tick_at(*b, 30);
    EXPECT_EQ(t.gpus[0].pcie_rx_kib_s, Reading<unsigned>::of(250000)) << i;
    EXPECT_EQ(t.gpus[0].pcie_tx_kib_s, Reading<unsigned>::of(125000)) << i;
  }
  EXPECT_EQ(blocking_calls() - blocking0, 2u * kTicks);
  // One field-values call per tick for the other fields, plus the counter probes: the first tick
  // and kPcieCounterMaxMisses misses.
  EXPECT_EQ(field_calls() - fields0, kTicks + 1 + nvml::kPcieCounterMaxMisses);
}

/// Counters the backend must not use: every tick takes the blocking call, and the counters are
/// probed once (not every tick).
void expect_blocking_every_tick(const std::string& path) {
  auto b = open_fake(path, 30);
  const auto blocking0 = blocking_calls();
  const auto fields0 = field_calls();
  for (int i = 0; i < 4; ++i) {
    auto t = tick_at(*b, 30 + i);
    EXPECT_EQ(t.gpus[0].pcie_rx_kib_s, Reading<unsigned>::of(250000)) << i;
    EXPECT_EQ(t.gpus[0].pcie_tx_kib_s, Reading<unsigned>::of(125000)) << i;
  }
  EXPECT_EQ(blocking_calls() - blocking0, 8u);
  EXPECT_EQ(field_calls() - fields0, 4u + 1u);
}

TEST(NvmlPcieCounters, ThirtyTwoBitCountersAreNotUsed) {
  expect_blocking_every_tick(scenario(R"("pcie_counters": {"value_type": "UNSIGNED_INT"},)", kConstant));
}

TEST(NvmlPcieCounters, ThirtyTwoBitCounterInA64BitFieldIsNeverTrusted) {
  // 3,000,000 KB/s wraps a 32-bit counter every 1.4 s. Its values never exceed 2^32 - 1, so they
  // never give a rate: every tick is answered by the blocking call, right from the first.
  auto b = open_fake(
      scenario(R"("pcie_counters": {"width_bits": 32},)", R"({"pcie_rx": 3000000, "pcie_tx": 125000})"), 30);
  const auto before = blocking_calls();
  for (int i = 0; i < 4; ++i) {
    auto t = tick_at(*b, 30 + i);
    EXPECT_EQ(t.gpus[0].pcie_rx_kib_s, Reading<unsigned>::of(3000000)) << i;
    EXPECT_EQ(t.gpus[0].pcie_tx_kib_s, Reading<unsigned>::of(125000)) << i;
  }
  EXPECT_EQ(blocking_calls() - before, 8u);
}

TEST(NvmlPcieCounters, SmallCountersGiveRatesOnceAbove32Bits) {
  // A driver loaded moments ago: 1 GiB short of 2^32 at t = 30, 1,000,000 KB/s (~1 GiB/s). The
  // counters are only trusted from the tick where one passed 2^32 - 1 (t = 32); the next tick has a
  // counter rate.
  const unsigned long long start = (1ull << 32) - (1ull << 30) - 30ull * 1000000 * 1024;
  auto b = open_fake(scenario(R"("pcie_counters": {"start_bytes": )" + std::to_string(start) + "},",
                              R"({"pcie_rx": 1000000, "pcie_tx": 1000000})"),
                     30);
  const auto before = blocking_calls();
  for (int i = 0; i < 4; ++i) {
    auto t = tick_at(*b, 30 + i);
    EXPECT_EQ(t.gpus[0].pcie_rx_kib_s, Reading<unsigned>::of(1000000)) << i;
  }
  // t = 30, 31: blocking (below 2^32); t = 32: proven, but the previous value is from t = 31 and
  // gives a rate; t = 33: counters.
  EXPECT_EQ(blocking_calls() - before, 4u);
}

TEST(NvmlPcieCounters, OneFieldNotSupportedMeansBlocking) {
  expect_blocking_every_tick(scenario(R"("not_supported": ["NVML_FI_DEV_PCIE_COUNT_TX_BYTES"],)", kConstant));
}

TEST(NvmlPcieCounters, FieldValuesNotSupportedMeansBlocking) {
  auto b = open_fake(scenario(R"("not_supported": ["nvmlDeviceGetFieldValues"],)", kConstant), 30);
  const auto blocking0 = blocking_calls();
  for (int i = 0; i < 3; ++i) {
    auto t = tick_at(*b, 30 + i);
    EXPECT_EQ(t.gpus[0].pcie_rx_kib_s, Reading<unsigned>::of(250000)) << i;
  }
  EXPECT_EQ(blocking_calls() - blocking0, 6u);
}

TEST(NvmlPcieCounters, OldDriverWithoutTheFieldsMeansBlocking) {
  // R535 and older answer NOT_SUPPORTED for fields 197/198.
  auto b = open_fake(scenario("", kConstant), 30, {}, testing::fake_variant_path("fake_nvml_r535_43"));
  for (int i = 0; i < 3; ++i) {
    auto t = tick_at(*b, 30 + i);
    EXPECT_EQ(t.gpus[0].pcie_rx_kib_s, Reading<unsigned>::of(250000)) << i;
    EXPECT_EQ(t.gpus[0].pcie_tx_kib_s, Reading<unsigned>::of(125000)) << i;
  }
}

TEST(NvmlPcieCounters, ResetFallsBackForOneTickAndRestarts) {
  auto b = open_fake(scenario(R"("pcie_counters": {"reset_at_s": 31.5, "start_bytes": 1000000000000},)",
                              R"({"pcie_rx": [[0, 250000], [31.5, 100000]], "pcie_tx": 125000})"),
                     30);
  const auto before = blocking_calls();
  tick_at(*b, 30);
  auto t = tick_at(*b, 31);
  EXPECT_EQ(t.gpus[0].pcie_rx_kib_s, Reading<unsigned>::of(250000));
  EXPECT_EQ(blocking_calls() - before, 2u);
  t = tick_at(*b, 32);  // both counters went back to ~0: the blocking call answers this tick
  EXPECT_EQ(t.gpus[0].pcie_rx_kib_s, Reading<unsigned>::of(100000));
  EXPECT_EQ(t.gpus[0].pcie_tx_kib_s, Reading<unsigned>::of(125000));
  EXPECT_EQ(blocking_calls() - before, 4u);
  t = tick_at(*b, 33);  // and the counters again from the new value
  EXPECT_EQ(t.gpus[0].pcie_rx_kib_s, Reading<unsigned>::of(100000));
  EXPECT_EQ(t.gpus[0].pcie_tx_kib_s, Reading<unsigned>::of(125000));
  EXPECT_EQ(blocking_calls() - before, 4u);
}

TEST(NvmlPcieCounters, ATransientErrorIsReprobedAfterFullReprobeTicks) {
  // The counter probe of the first tick fails (the 2nd nvmlDeviceGetFieldValues call: the 1st is
  // the sample's own fields); the blocking call is not supported here (and so costs no 20 ms sleep
  // in the fake), which makes the source of each value visible.
  auto b = open_fake(scenario(R"("not_supported": ["nvmlDeviceGetPcieThroughput"],)", kConstant,
                              R"("errors": [{"function": "nvmlDeviceGetFieldValues", "calls": [2],
                                  "return": "NVML_ERROR_UNKNOWN"}],)"),
                     30);
  const auto fields0 = field_calls();
  const unsigned reprobe_tick = nvml::kFullReprobeTicks + 1;
  for (unsigned k = 1; k <= reprobe_tick; ++k) {
    auto t = tick_at(*b, 30 + k);
    ASSERT_EQ(t.gpus[0].pcie_rx_kib_s.status, ReadStatus::not_supported) << k;
  }
  // Probed on the first tick and at the re-probe only.
  EXPECT_EQ(field_calls() - fields0, reprobe_tick + 2);
  auto t = tick_at(*b, 30 + reprobe_tick + 1);  // the counters now have a previous value
  EXPECT_EQ(t.gpus[0].pcie_rx_kib_s, Reading<unsigned>::of(250000));
  EXPECT_EQ(t.gpus[0].pcie_tx_kib_s, Reading<unsigned>::of(125000));
}

TEST(NvmlPcieCounters, RateAboveTheLinkIsInvalid) {
  // 200 GB/s on a Gen5 x16 link (63 GB/s): more than twice what it can carry.
  auto b = open_fake(scenario("", R"({"pcie_rx": 200000000, "pcie_tx": 125000})"), 30);
  tick_at(*b, 30);
  auto t = tick_at(*b, 31);
  EXPECT_EQ(t.gpus[0].pcie_rx_kib_s.status, ReadStatus::invalid_value);
  EXPECT_EQ(t.gpus[0].pcie_tx_kib_s, Reading<unsigned>::of(125000));
}

TEST(NvmlPcieCounters, NotCollectedMeansNoCall) {
  BackendOptions o;
  o.collect_pcie_throughput = false;
  auto b = open_fake(scenario("", kConstant), 30, o);
  const auto before = blocking_calls();
  auto t = tick_at(*b, 30);
  t = tick_at(*b, 31);
  EXPECT_EQ(t.gpus[0].pcie_rx_kib_s.status, ReadStatus::not_collected);
  EXPECT_EQ(blocking_calls() - before, 0u);
}

}  // namespace
}  // namespace trainmon
