// SPDX-License-Identifier: Apache-2.0
// Fake NVML: process-list two-call protocol, list growth, layouts per variant, samples, variants.
#include <chrono>

#include "fake_nvml_fixture.h"

using namespace fake_nvml_test;

namespace {
const char* kProcs = R"("processes": [
  {"pid": 101, "gpu": 0, "type": "C", "name": "train", "used_memory": 1000, "sm_util": 80},
  {"pid": 102, "gpu": 0, "type": "C+G", "used_memory": 2000, "start_s": 5},
  {"pid": 103, "gpu": 0, "type": "G", "used_memory": 3000, "end_s": 50},
  {"pid": "env:FAKE_NVML_TEST_PID", "gpu": 0, "type": "C", "used_memory": 4000},
  {"pid": "env:FAKE_NVML_TEST_UNSET", "gpu": 0, "type": "C", "used_memory": 5000}])";
}  // namespace

TEST(FakeNvmlProcesses, TwoCallProtocolLifetimesAndEnvPids) {
  Lib lib;
  setenv("FAKE_NVML_TEST_PID", "4242", 1);
  unsetenv("FAKE_NVML_TEST_UNSET");
  use_scenario(one_gpu(R"("metrics": {"utilization_gpu": 50})", kProcs), 1, "procs");
  Session s(lib);
  ASSERT_EQ(s.rc, NVML_SUCCESS);
  auto v3 = FAKE_FN(lib, nvmlDeviceGetComputeRunningProcesses_v3);
  unsigned n = 0;
  ASSERT_EQ(v3(s.dev0, &n, nullptr), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(n, 2u);  // 101 and env pid 4242; 102 starts at 5 s; the unset env var drops its process
  nvmlProcessInfo_v2_t buf[8]{};
  n = 1;
  EXPECT_EQ(v3(s.dev0, &n, buf), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(n, 2u);
  n = 8;
  ASSERT_EQ(v3(s.dev0, &n, buf), NVML_SUCCESS);
  ASSERT_EQ(n, 2u);
  EXPECT_EQ(buf[0].pid, 101u);
  EXPECT_EQ(buf[0].usedGpuMemory, 1000u);
  EXPECT_EQ(buf[0].gpuInstanceId, 0xFFFFFFFFu);
  EXPECT_EQ(buf[1].pid, 4242u);
  freeze(10);
  n = 8;
  ASSERT_EQ(v3(s.dev0, &n, buf), NVML_SUCCESS);
  EXPECT_EQ(n, 3u);
  n = 8;
  ASSERT_EQ(FAKE_FN(lib, nvmlDeviceGetGraphicsRunningProcesses_v3)(s.dev0, &n, buf), NVML_SUCCESS);
  EXPECT_EQ(n, 2u);  // 102 (C+G) and 103
  freeze(60);
  n = 0;
  EXPECT_EQ(FAKE_FN(lib, nvmlDeviceGetGraphicsRunningProcesses_v3)(s.dev0, &n, nullptr),
            NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(n, 1u);  // 103 ended at 50 s
  // The plain name takes the 16-byte v1 layout.
  nvmlProcessInfo_v1_t v1[8]{};
  n = 8;
  ASSERT_EQ(FAKE_FN(lib, nvmlDeviceGetComputeRunningProcesses)(s.dev0, &n, v1), NVML_SUCCESS);
  ASSERT_EQ(n, 3u);
  EXPECT_EQ(v1[1].pid, 102u);
  EXPECT_EQ(v1[1].usedGpuMemory, 2000u);
  char name[64];
  ASSERT_EQ(FAKE_FN(lib, nvmlSystemGetProcessName)(101, name, sizeof name), NVML_SUCCESS);
  EXPECT_STREQ(name, "train");
  EXPECT_EQ(FAKE_FN(lib, nvmlSystemGetProcessName)(4000000, name, sizeof name), NVML_ERROR_NOT_FOUND);
}

TEST(FakeNvmlProcesses, EmptyListAndGrowthBetweenCalls) {
  Lib lib;
  use_scenario(one_gpu(R"("process_list_growth": {"extra": 2, "times": 1})",
                       R"("processes": [{"pid": 7, "gpu": 0, "used_memory": 1}])"),
               1, "growth");
  Session s(lib);
  ASSERT_EQ(s.rc, NVML_SUCCESS);
  auto v3 = FAKE_FN(lib, nvmlDeviceGetComputeRunningProcesses_v3);
  unsigned n = 0;
  ASSERT_EQ(v3(s.dev0, &n, nullptr), NVML_ERROR_INSUFFICIENT_SIZE);
  ASSERT_EQ(n, 1u);
  nvmlProcessInfo_v2_t buf[8]{};
  EXPECT_EQ(v3(s.dev0, &n, buf), NVML_ERROR_INSUFFICIENT_SIZE);  // grew between the two calls
  EXPECT_EQ(n, 3u);
  ASSERT_EQ(v3(s.dev0, &n, buf), NVML_SUCCESS);  // the retry with the new count succeeds
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(buf[1].pid, 4100000u);
  // No processes at all: the count query answers SUCCESS with 0.
  n = 0;
  EXPECT_EQ(FAKE_FN(lib, nvmlDeviceGetGraphicsRunningProcesses_v3)(s.dev0, &n, nullptr), NVML_SUCCESS);
  EXPECT_EQ(n, 0u);
}

TEST(FakeNvmlVariants, R535_43WritesThe32ByteLayoutAndOldDriversLackSymbols) {
  Lib broken("r535_43");
  ASSERT_TRUE(broken.ok()) << dlerror();
  use_scenario(one_gpu("", kProcs), 10, "r535");
  Session s(broken);
  ASSERT_EQ(s.rc, NVML_SUCCESS);
  nvmlProcessInfo_535_t buf[8]{};
  unsigned n = 8;
  ASSERT_EQ(FAKE_FN(broken, nvmlDeviceGetComputeRunningProcesses_v3)(
                s.dev0, &n, reinterpret_cast<nvmlProcessInfo_v2_t*>(buf)),
            NVML_SUCCESS);
  ASSERT_GE(n, 2u);
  EXPECT_EQ(buf[0].pid, 101u);
  EXPECT_EQ(buf[1].pid, 102u);  // a 24-byte reader would find this at byte 24, not 32
  EXPECT_EQ(buf[1].usedGpuMemory, 2000u);
  EXPECT_EQ(buf[1].usedGpuCcProtectedMemory, 0u);

  Lib r430("r430"), r450("r450"), current;
  ASSERT_TRUE(r430.ok() && r450.ok());
  EXPECT_NE(r430.sym("nvmlDeviceGetComputeRunningProcesses"), nullptr);
  EXPECT_EQ(r430.sym("nvmlDeviceGetComputeRunningProcesses_v2"), nullptr);
  EXPECT_EQ(r430.sym("nvmlDeviceGetMemoryInfo_v2"), nullptr);
  EXPECT_EQ(r430.sym("nvmlDeviceGetCurrentClocksEventReasons"), nullptr);
  EXPECT_EQ(r430.sym("nvmlGpmMetricsGet"), nullptr);
  EXPECT_NE(r450.sym("nvmlDeviceGetComputeRunningProcesses_v2"), nullptr);
  EXPECT_EQ(r450.sym("nvmlDeviceGetComputeRunningProcesses_v3"), nullptr);
  EXPECT_NE(current.sym("nvmlDeviceGetComputeRunningProcesses_v3"), nullptr);
  EXPECT_NE(current.sym("nvmlDeviceGetCurrentClocksEventReasons"), nullptr);
  EXPECT_EQ(current.sym("_ZN9fake_nvml5enterEPKcP13nvmlDevice_stb"), nullptr);  // internals stay hidden
}

TEST(FakeNvmlVariants, CudaStubFailsInitWithAWarning) {
  Lib stub("cuda_stub");
  ASSERT_TRUE(stub.ok()) << dlerror();
  use_scenario(one_gpu(""), 0, "stub");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(FAKE_FN(stub, nvmlInit_v2)(), NVML_ERROR_LIBRARY_NOT_FOUND);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("stub library"), std::string::npos) << err;
}

TEST(FakeNvmlSamples, RingBufferLastSeenAndProcessUtilization) {
  Lib lib;
  use_scenario(one_gpu(R"("metrics": {"utilization_gpu": 77, "power_draw": 300000})", kProcs), 10, "samples");
  Session s(lib);
  ASSERT_EQ(s.rc, NVML_SUCCESS);
  auto samples = FAKE_FN(lib, nvmlDeviceGetSamples);
  unsigned type = 99, count = 0;
  ASSERT_EQ(samples(s.dev0, NVML_GPU_UTILIZATION_SAMPLES, 0, &type, &count, nullptr), NVML_SUCCESS);
  ASSERT_GE(count, 1u);
  EXPECT_LE(count, 120u);
  EXPECT_EQ(type, static_cast<unsigned>(NVML_VALUE_TYPE_UNSIGNED_INT));
  std::vector<nvmlSample_t> buf(count + 8);
  count = static_cast<unsigned>(buf.size());
  ASSERT_EQ(samples(s.dev0, NVML_GPU_UTILIZATION_SAMPLES, 0, &type, &count, buf.data()), NVML_SUCCESS);
  const auto now_us = static_cast<unsigned long long>(std::chrono::duration_cast<std::chrono::microseconds>(
                                                          std::chrono::system_clock::now().time_since_epoch())
                                                          .count());
  EXPECT_EQ(buf[count - 1].sampleValue.uiVal, 77u);
  EXPECT_LE(buf[count - 1].timeStamp, now_us);
  EXPECT_GT(buf[count - 1].timeStamp, now_us - 60'000'000ull);  // real wall clock, µs since epoch
  const unsigned long long last = buf[count - 1].timeStamp;
  EXPECT_EQ(samples(s.dev0, NVML_GPU_UTILIZATION_SAMPLES, last, &type, &count, buf.data()),
            NVML_ERROR_NOT_FOUND);
  count = static_cast<unsigned>(buf.size());
  ASSERT_EQ(samples(s.dev0, NVML_TOTAL_POWER_SAMPLES, 0, &type, &count, buf.data()), NVML_SUCCESS);
  EXPECT_EQ(buf[0].sampleValue.uiVal, 300000u);

  auto putil = FAKE_FN(lib, nvmlDeviceGetProcessUtilization);
  unsigned n = 0;
  ASSERT_EQ(putil(s.dev0, nullptr, &n, 0), NVML_ERROR_INSUFFICIENT_SIZE);
  ASSERT_EQ(n, 1u);  // only pid 101 has non-zero utilization
  nvmlProcessUtilizationSample_t pu[4]{};
  n = 4;
  ASSERT_EQ(putil(s.dev0, pu, &n, 0), NVML_SUCCESS);
  EXPECT_EQ(pu[0].pid, 101u);
  EXPECT_EQ(pu[0].smUtil, 80u);
  EXPECT_EQ(putil(s.dev0, pu, &n, pu[0].timeStamp), NVML_ERROR_NOT_FOUND);
}
