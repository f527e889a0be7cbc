// SPDX-License-Identifier: Apache-2.0
// Fake NVML: timelines at frozen times, memory accounting, init failures, malformed scenarios.
#include <algorithm>
#include <cmath>
#include <set>

#include "fake_nvml_fixture.h"

using namespace fake_nvml_test;

TEST(FakeNvmlTimeline, SteppedLinearAndNoiseAtFrozenTimes) {
  Lib lib;
  ASSERT_TRUE(lib.ok()) << dlerror();
  use_scenario(one_gpu(R"("metrics": {
      "utilization_gpu": [[0, 0], [10, 95], [60, 20]],
      "power_draw": {"points": [[0, 100000], [10, 600000]], "interp": "linear"},
      "temperature_gpu": {"points": 50, "noise": 5, "noise_seed": 3}})"),
               5, "timeline");
  auto util = FAKE_FN(lib, nvmlDeviceGetUtilizationRates);
  auto power = FAKE_FN(lib, nvmlDeviceGetPowerUsage);
  auto temp = FAKE_FN(lib, nvmlDeviceGetTemperature);
  Session s(lib);
  ASSERT_EQ(s.rc, NVML_SUCCESS);
  nvmlUtilization_t u{};
  unsigned p = 0;
  ASSERT_EQ(util(s.dev0, &u), NVML_SUCCESS);
  EXPECT_EQ(u.gpu, 0u);  // step: the value at 0 holds until 10
  ASSERT_EQ(power(s.dev0, &p), NVML_SUCCESS);
  EXPECT_EQ(p, 350000u);  // linear halfway
  freeze(10);
  ASSERT_EQ(util(s.dev0, &u), NVML_SUCCESS);
  EXPECT_EQ(u.gpu, 95u);
  EXPECT_EQ(u.memory, 0u);  // absent utilization_memory reads 0
  freeze(59.9);
  ASSERT_EQ(util(s.dev0, &u), NVML_SUCCESS);
  EXPECT_EQ(u.gpu, 95u);
  freeze(1000);
  ASSERT_EQ(util(s.dev0, &u), NVML_SUCCESS);
  EXPECT_EQ(u.gpu, 20u);  // after the last point the last value holds
  ASSERT_EQ(power(s.dev0, &p), NVML_SUCCESS);
  EXPECT_EQ(p, 600000u);

  // Noise: deterministic for a frozen time, within ± amplitude, and not constant over time.
  unsigned a = 0, b = 0;
  std::set<unsigned> seen;
  for (int t = 0; t < 40; ++t) {
    freeze(t + 0.5);
    ASSERT_EQ(temp(s.dev0, NVML_TEMPERATURE_GPU, &a), NVML_SUCCESS);
    ASSERT_EQ(temp(s.dev0, NVML_TEMPERATURE_GPU, &b), NVML_SUCCESS);
    EXPECT_EQ(a, b);
    EXPECT_GE(a, 45u);
    EXPECT_LE(a, 55u);
    seen.insert(a);
  }
  EXPECT_GE(seen.size(), 4u);
  EXPECT_EQ(temp(s.dev0, 7, &a), NVML_ERROR_INVALID_ARGUMENT);
  // Fan-less board (num_fans absent = 0): NOT_SUPPORTED, like an H100.
  EXPECT_EQ(FAKE_FN(lib, nvmlDeviceGetFanSpeed)(s.dev0, &a), NVML_ERROR_NOT_SUPPORTED);
}

TEST(FakeNvmlTimeline, RepeatAndEnergyIntegral) {
  Lib lib;
  use_scenario(one_gpu(R"("metrics": {
      "utilization_gpu": {"points": [[0, 0], [2, 90], [8, 0]], "repeat_s": 10},
      "power_draw": [[0, 100000], [10, 300000]]})"),
               13, "repeat");
  Session s(lib);
  ASSERT_EQ(s.rc, NVML_SUCCESS);
  nvmlUtilization_t u{};
  ASSERT_EQ(FAKE_FN(lib, nvmlDeviceGetUtilizationRates)(s.dev0, &u), NVML_SUCCESS);
  EXPECT_EQ(u.gpu, 90u);  // 13 s = 3 s into the second period
  freeze(19);
  ASSERT_EQ(FAKE_FN(lib, nvmlDeviceGetUtilizationRates)(s.dev0, &u), NVML_SUCCESS);
  EXPECT_EQ(u.gpu, 0u);
  // Energy = ∫ power: 10 s × 100 W + 9 s × 300 W = 3700 J = 3 700 000 mJ.
  unsigned long long e = 0;
  ASSERT_EQ(FAKE_FN(lib, nvmlDeviceGetTotalEnergyConsumption)(s.dev0, &e), NVML_SUCCESS);
  EXPECT_EQ(e, 3700000ull);
}

TEST(FakeNvmlTimeline, MemoryV1IncludesReservedAndV2SplitsIt) {
  Lib lib;
  use_scenario(one_gpu(R"("metrics": {"memory_used": 1000000000, "memory_reserved": 500000000})"), 1,
               "memory");
  Session s(lib);
  ASSERT_EQ(s.rc, NVML_SUCCESS);
  nvmlMemory_t m1{};
  ASSERT_EQ(FAKE_FN(lib, nvmlDeviceGetMemoryInfo)(s.dev0, &m1), NVML_SUCCESS);
  EXPECT_EQ(m1.total, 85520809984ull);
  EXPECT_EQ(m1.used, 1500000000ull);
  EXPECT_EQ(m1.free, 85520809984ull - 1500000000ull);
  nvmlMemory_v2_t m2{};
  EXPECT_EQ(FAKE_FN(lib, nvmlDeviceGetMemoryInfo_v2)(s.dev0, &m2), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  m2.version = TRAINMON_NVML_STRUCT_VERSION(nvmlMemory_v2_t, 2);
  ASSERT_EQ(FAKE_FN(lib, nvmlDeviceGetMemoryInfo_v2)(s.dev0, &m2), NVML_SUCCESS);
  EXPECT_EQ(m2.used, 1000000000ull);
  EXPECT_EQ(m2.reserved, 500000000ull);
  EXPECT_EQ(m2.free, m2.total - m2.used - m2.reserved);
}

TEST(FakeNvmlInit, InitErrorAndReload) {
  Lib lib;
  use_scenario(one_gpu("", R"("init_error": "NVML_ERROR_DRIVER_NOT_LOADED")"), 0, "initerr");
  EXPECT_EQ(FAKE_FN(lib, nvmlInit_v2)(), NVML_ERROR_DRIVER_NOT_LOADED);
  EXPECT_EQ(FAKE_FN(lib, nvmlInitWithFlags)(0), NVML_ERROR_DRIVER_NOT_LOADED);
  unsigned n = 0;
  EXPECT_EQ(FAKE_FN(lib, nvmlDeviceGetCount_v2)(&n), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(FAKE_FN(lib, nvmlShutdown)(), NVML_ERROR_UNINITIALIZED);
  // A corrected file is picked up by the next init.
  use_scenario(one_gpu(""), 0, "initerr");
  ASSERT_EQ(FAKE_FN(lib, nvmlInit_v2)(), NVML_SUCCESS);
  ASSERT_EQ(FAKE_FN(lib, nvmlInit)(), NVML_SUCCESS);  // ref-counted
  ASSERT_EQ(FAKE_FN(lib, nvmlDeviceGetCount_v2)(&n), NVML_SUCCESS);
  EXPECT_EQ(n, 1u);
  char ver[80];
  ASSERT_EQ(FAKE_FN(lib, nvmlSystemGetDriverVersion)(ver, sizeof ver), NVML_SUCCESS);
  EXPECT_STREQ(ver, "590.48.01");
  EXPECT_EQ(FAKE_FN(lib, nvmlSystemGetDriverVersion)(ver, 4), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(FAKE_FN(lib, nvmlShutdown)(), NVML_SUCCESS);
  EXPECT_EQ(FAKE_FN(lib, nvmlDeviceGetCount_v2)(&n), NVML_SUCCESS);  // one reference left
  EXPECT_EQ(FAKE_FN(lib, nvmlShutdown)(), NVML_SUCCESS);
  EXPECT_EQ(FAKE_FN(lib, nvmlDeviceGetCount_v2)(&n), NVML_ERROR_UNINITIALIZED);
  EXPECT_STREQ(FAKE_FN(lib, nvmlErrorString)(NVML_ERROR_GPU_IS_LOST), "GPU is lost");
}

TEST(FakeNvmlInit, MalformedScenarioFailsWithOneClearLine) {
  Lib lib;
  const std::string path = use_scenario(R"({"devices": [ {"name": "x", }] })", 0, "malformed");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(FAKE_FN(lib, nvmlInit_v2)(), NVML_ERROR_UNKNOWN);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find(path), std::string::npos) << err;
  EXPECT_NE(err.find("parse error"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  // A well-formed file with a bad value names the key.
  use_scenario(one_gpu(R"("metrics": {"power_draw": {"points": [[0, 1]], "interp": "cubic"}})"), 0,
               "malformed");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(FAKE_FN(lib, nvmlInit_v2)(), NVML_ERROR_UNKNOWN);
  const std::string err2 = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err2.find("devices[0].metrics.power_draw"), std::string::npos) << err2;
}
