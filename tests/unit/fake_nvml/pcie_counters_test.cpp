// SPDX-License-Identifier: Apache-2.0
// Fake NVML: the PCIe byte-counter fields 197/198 (integrals of pcie_tx / pcie_rx), their
// timestamps on the scenario clock, the pcie_counters switches and the call-count hook.
#include <array>

#include "fake_nvml_fixture.h"

using namespace fake_nvml_test;

namespace {

struct Counters {
  int rc = -1;
  std::array<nvmlFieldValue_t, 2> f{};  // [0] = TX (197), [1] = RX (198)
};

Counters read_counters(const Lib& lib, nvmlDevice_t dev) {
  Counters c;
  c.f[0].fieldId = NVML_FI_DEV_PCIE_COUNT_TX_BYTES;
  c.f[1].fieldId = NVML_FI_DEV_PCIE_COUNT_RX_BYTES;
  c.rc = FAKE_FN(lib, nvmlDeviceGetFieldValues)(dev, 2, c.f.data());
  return c;
}

const char* kRates = R"("pcie": {"gen_max": 5, "width_max": 16},
    "metrics": {"pcie_tx": 1000, "pcie_rx": [[0, 2000], [10, 4000]]})";

}  // namespace

TEST(FakeNvmlPcieCounters, IntegralOfTheRateWithScenarioTimestamps) {
  Lib lib;
  use_scenario(one_gpu(kRates), 5, "pcie_counters");
  Session s(lib);
  ASSERT_EQ(s.rc, NVML_SUCCESS);
  Counters a = read_counters(lib, s.dev0);
  ASSERT_EQ(a.rc, NVML_SUCCESS);
  for (const auto& f : a.f) {
    EXPECT_EQ(f.nvmlReturn, NVML_SUCCESS);
    EXPECT_EQ(f.valueType, NVML_VALUE_TYPE_UNSIGNED_LONG_LONG);
    EXPECT_GT(f.timestamp, 1'600'000'000'000'000LL);  // µs since the epoch
  }
  constexpr unsigned long long kStart = 1ull << 40;  // start_bytes' default: a driver loaded long ago
  EXPECT_EQ(a.f[0].value.ullVal, kStart + 1000ull * 5 * 1024);
  EXPECT_EQ(a.f[1].value.ullVal, kStart + 2000ull * 5 * 1024);
  EXPECT_EQ(read_counters(lib, s.dev0).f[0].timestamp, a.f[0].timestamp);  // frozen: stands still
  freeze(12);
  Counters b = read_counters(lib, s.dev0);
  EXPECT_EQ(b.f[0].timestamp - a.f[0].timestamp, 7'000'000);
  EXPECT_EQ(b.f[0].value.ullVal, kStart + 1000ull * 12 * 1024);
  EXPECT_EQ(b.f[1].value.ullVal, kStart + (2000ull * 10 + 4000ull * 2) * 1024);
}

TEST(FakeNvmlPcieCounters, ThirtyTwoBitResetAndNoTimestamps) {
  Lib lib;
  use_scenario(one_gpu(std::string(kRates) + R"(, "pcie_counters": {"value_type": "UNSIGNED_INT",
      "reset_at_s": 20, "timestamps": false, "start_bytes": 4294967296})"),
               5, "pcie_counters");
  Session s(lib);
  ASSERT_EQ(s.rc, NVML_SUCCESS);
  Counters a = read_counters(lib, s.dev0);
  EXPECT_EQ(a.f[0].valueType, NVML_VALUE_TYPE_UNSIGNED_INT);
  EXPECT_EQ(a.f[0].value.uiVal, 1000u * 5 * 1024);  // start_bytes (2^32) wrapped away
  EXPECT_EQ(a.f[0].timestamp, 0);
  freeze(21);  // restarted at 20, without start_bytes
  EXPECT_EQ(read_counters(lib, s.dev0).f[1].value.uiVal, 4000u * 1 * 1024);
}

TEST(FakeNvmlPcieCounters, ThirtyTwoBitWidthInA64BitField) {
  Lib lib;
  use_scenario(
      one_gpu(R"("metrics": {"pcie_tx": 1000000, "pcie_rx": 1}, "pcie_counters": {"width_bits": 32})"), 5,
      "pcie_counters");
  Session s(lib);
  ASSERT_EQ(s.rc, NVML_SUCCESS);
  Counters a = read_counters(lib, s.dev0);
  EXPECT_EQ(a.f[0].valueType, NVML_VALUE_TYPE_UNSIGNED_LONG_LONG);
  EXPECT_EQ(a.f[0].value.ullVal, (1000000ull * 5 * 1024) & 0xFFFFFFFFull);
}

TEST(FakeNvmlPcieCounters, NotSupportedByNameByMissingMetricAndOnOldDrivers) {
  Lib lib;
  use_scenario(
      one_gpu(R"("metrics": {"pcie_tx": 1000}, "not_supported": ["NVML_FI_DEV_PCIE_COUNT_TX_BYTES"])"), 5,
      "pcie_counters");
  {
    Session s(lib);
    Counters a = read_counters(lib, s.dev0);
    ASSERT_EQ(a.rc, NVML_SUCCESS);
    EXPECT_EQ(a.f[0].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);  // named
    EXPECT_EQ(a.f[1].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);  // no pcie_rx metric
  }
  Lib old("r535_43");
  ASSERT_TRUE(old.ok());
  use_scenario(one_gpu(kRates), 5, "pcie_counters");
  Session s(old);
  ASSERT_EQ(s.rc, NVML_SUCCESS);
  EXPECT_EQ(read_counters(old, s.dev0).f[1].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(old.sym("fakeNvmlCallCount"), nullptr);  // only the current variant has the hook
}

TEST(FakeNvmlPcieCounters, BadValueTypeNamesTheKey) {
  Lib lib;
  use_scenario(one_gpu(R"("pcie_counters": {"value_type": "DOUBLE"})"), 0, "pcie_counters");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(FAKE_FN(lib, nvmlInit_v2)(), NVML_ERROR_UNKNOWN);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("devices[0].pcie_counters.value_type"), std::string::npos) << err;
}

TEST(FakeNvmlPcieCounters, CallCountHook) {
  Lib lib;
  using CountFn = unsigned long long (*)(const char*);
  auto count = reinterpret_cast<CountFn>(lib.sym("fakeNvmlCallCount"));
  ASSERT_NE(count, nullptr);
  use_scenario(one_gpu(kRates), 5, "pcie_counters");
  Session s(lib);
  const auto before = count("nvmlDeviceGetPcieThroughput");
  unsigned v = 0;
  EXPECT_EQ(FAKE_FN(lib, nvmlDeviceGetPcieThroughput)(s.dev0, NVML_PCIE_UTIL_TX_BYTES, &v), NVML_SUCCESS);
  EXPECT_EQ(v, 1000u);
  EXPECT_EQ(FAKE_FN(lib, nvmlDeviceGetPcieThroughput)(s.dev0, 7, &v), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(count("nvmlDeviceGetPcieThroughput") - before, 2u);  // every call, whatever it answered
  EXPECT_EQ(count("noSuchFunction"), 0u);
  EXPECT_EQ(count(nullptr), 0u);
}
