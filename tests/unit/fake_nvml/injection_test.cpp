// SPDX-License-Identifier: Apache-2.0
// Fake NVML: error injection by window, call number and device; hangs; events; MIG rules.
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "fake_nvml_fixture.h"

using namespace fake_nvml_test;

TEST(FakeNvmlInjection, WindowCallNumbersDeviceAndHang) {
  Lib lib;
  use_scenario(R"({"devices": [{"name": "a", "metrics": {"power_draw": 100000}},
                               {"name": "b", "metrics": {"power_draw": 200000}}],
    "errors": [
      {"function": "nvmlDeviceGetPowerUsage", "gpu": 1, "from_s": 10, "to_s": 20, "return": "NVML_ERROR_GPU_IS_LOST"},
      {"function": "nvmlDeviceGetTemperature", "calls": [2, 3], "return": "UNKNOWN"},
      {"function": "nvmlDeviceGetName", "hang_ms": 150},
      {"function": "nvmlDeviceGetUUID", "call_from": 2, "hang_ms": 100, "return": "NVML_ERROR_TIMEOUT"}]})",
               5, "inject");
  Session s(lib);
  ASSERT_EQ(s.rc, NVML_SUCCESS);
  nvmlDevice_t d1 = nullptr;
  ASSERT_EQ(FAKE_FN(lib, nvmlDeviceGetHandleByIndex_v2)(1, &d1), NVML_SUCCESS);
  auto power = FAKE_FN(lib, nvmlDeviceGetPowerUsage);
  unsigned p = 0;
  EXPECT_EQ(power(d1, &p), NVML_SUCCESS);
  EXPECT_EQ(p, 200000u);
  freeze(10);
  EXPECT_EQ(power(d1, &p), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(power(s.dev0, &p), NVML_SUCCESS);  // only gpu 1
  freeze(20);
  EXPECT_EQ(power(d1, &p), NVML_SUCCESS);  // window is [10, 20)

  auto temp = FAKE_FN(lib, nvmlDeviceGetTemperature);
  unsigned t = 0;
  EXPECT_EQ(temp(s.dev0, 0, &t), NVML_ERROR_NOT_SUPPORTED);  // call 1: no metric -> NOT_SUPPORTED
  EXPECT_EQ(temp(d1, 0, &t), NVML_ERROR_UNKNOWN);            // call 2
  EXPECT_EQ(temp(s.dev0, 0, &t), NVML_ERROR_UNKNOWN);        // call 3
  EXPECT_EQ(temp(s.dev0, 0, &t), NVML_ERROR_NOT_SUPPORTED);  // call 4

  char buf[96];
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(FAKE_FN(lib, nvmlDeviceGetName)(s.dev0, buf, sizeof buf), NVML_SUCCESS);
  auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(ms, 150);
  EXPECT_STREQ(buf, "a");
  auto uuid = FAKE_FN(lib, nvmlDeviceGetUUID);
  start = std::chrono::steady_clock::now();
  EXPECT_EQ(uuid(s.dev0, buf, sizeof buf), NVML_SUCCESS);  // call 1 answers at once
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(100));
  EXPECT_EQ(uuid(s.dev0, buf, sizeof buf), NVML_ERROR_TIMEOUT);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(100));
}

TEST(FakeNvmlInjection, InitFailsForTheFirstCallsOnly) {
  Lib lib;
  use_scenario(
      one_gpu(
          "",
          R"("errors": [{"function": "nvmlInit_v2", "calls": [1, 2], "return": "NVML_ERROR_DRIVER_NOT_LOADED"}])"),
      0, "initretry");
  EXPECT_EQ(FAKE_FN(lib, nvmlInit_v2)(), NVML_ERROR_DRIVER_NOT_LOADED);
  EXPECT_EQ(FAKE_FN(lib, nvmlInit_v2)(), NVML_ERROR_DRIVER_NOT_LOADED);
  ASSERT_EQ(FAKE_FN(lib, nvmlInit_v2)(), NVML_SUCCESS);
  EXPECT_EQ(FAKE_FN(lib, nvmlShutdown)(), NVML_SUCCESS);
}

TEST(FakeNvmlEvents, XidDeliveredAtItsTimeOnlyWhenRegistered) {
  Lib lib;
  use_scenario(one_gpu("", R"("events": [{"t": 5, "gpu": 0, "type": "xid", "xid": 48},
                                         {"t": 5, "gpu": 0, "type": "double_bit_ecc"},
                                         {"t": 30, "gpu": 0, "type": "xid", "xid": 79}])"),
               4, "events");
  Session s(lib);
  ASSERT_EQ(s.rc, NVML_SUCCESS);
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(FAKE_FN(lib, nvmlEventSetCreate)(&set), NVML_SUCCESS);
  ASSERT_EQ(FAKE_FN(lib, nvmlDeviceRegisterEvents)(s.dev0, nvmlEventTypeXidCriticalError, set), NVML_SUCCESS);
  auto wait = FAKE_FN(lib, nvmlEventSetWait_v2);
  nvmlEventData_t e{};
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(wait(set, &e, 50), NVML_ERROR_TIMEOUT);  // t = 4: nothing yet
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(50));
  freeze(6);
  ASSERT_EQ(wait(set, &e, 50), NVML_SUCCESS);
  EXPECT_EQ(e.eventType, nvmlEventTypeXidCriticalError);
  EXPECT_EQ(e.eventData, 48u);
  EXPECT_EQ(e.device, s.dev0);
  EXPECT_EQ(wait(set, &e, 10), NVML_ERROR_TIMEOUT);  // the DBE event is not registered; 79 is later
  freeze(31);
  ASSERT_EQ(wait(set, &e, 10), NVML_SUCCESS);
  EXPECT_EQ(e.eventData, 79u);
  EXPECT_EQ(FAKE_FN(lib, nvmlEventSetFree)(set), NVML_SUCCESS);
}

TEST(FakeNvmlMig, DeviceUtilizationUnsupportedAndMigHandlesAnswerMemory) {
  Lib lib;
  use_scenario(
      one_gpu(
          R"("mig_mode": true, "metrics": {"utilization_gpu": 50, "memory_used": 5000},
    "mig_devices": [{"gpu_instance_id": 2, "compute_instance_id": 0, "uuid": "MIG-aaaa", "memory_total": 40000,
                     "metrics": {"memory_used": 1234}},
                    {"gpu_instance_id": 9, "compute_instance_id": 0, "uuid": "MIG-bbbb", "memory_total": 10000}])",
          R"("processes": [{"pid": 5, "gpu": 0, "used_memory": 700, "gpu_instance_id": 9, "compute_instance_id": 0}])"),
      1, "mig");
  Session s(lib);
  ASSERT_EQ(s.rc, NVML_SUCCESS);
  nvmlUtilization_t u{};
  EXPECT_EQ(FAKE_FN(lib, nvmlDeviceGetUtilizationRates)(s.dev0, &u), NVML_ERROR_NOT_SUPPORTED);
  unsigned type = 0, count = 0;
  EXPECT_EQ(
      FAKE_FN(lib, nvmlDeviceGetSamples)(s.dev0, NVML_GPU_UTILIZATION_SAMPLES, 0, &type, &count, nullptr),
      NVML_ERROR_NOT_SUPPORTED);
  unsigned n = 0;
  EXPECT_EQ(FAKE_FN(lib, nvmlDeviceGetProcessUtilization)(s.dev0, nullptr, &n, 0), NVML_ERROR_NOT_SUPPORTED);
  unsigned cur = 9, pend = 9;
  ASSERT_EQ(FAKE_FN(lib, nvmlDeviceGetMigMode)(s.dev0, &cur, &pend), NVML_SUCCESS);
  EXPECT_EQ(cur, 1u);
  nvmlDevice_t m0 = nullptr, m1 = nullptr, m2 = nullptr;
  auto by_index = FAKE_FN(lib, nvmlDeviceGetMigDeviceHandleByIndex);
  ASSERT_EQ(by_index(s.dev0, 0, &m0), NVML_SUCCESS);
  ASSERT_EQ(by_index(s.dev0, 1, &m1), NVML_SUCCESS);
  EXPECT_EQ(by_index(s.dev0, 2, &m2), NVML_ERROR_NOT_FOUND);
  nvmlMemory_t mem{};
  ASSERT_EQ(FAKE_FN(lib, nvmlDeviceGetMemoryInfo)(m0, &mem), NVML_SUCCESS);
  EXPECT_EQ(mem.total, 40000u);
  EXPECT_EQ(mem.used, 1234u);
  ASSERT_EQ(FAKE_FN(lib, nvmlDeviceGetMemoryInfo)(m1, &mem), NVML_SUCCESS);
  EXPECT_EQ(mem.used, 700u);  // the sum of its processes
  unsigned gi = 0, ci = 7;
  ASSERT_EQ(FAKE_FN(lib, nvmlDeviceGetGpuInstanceId)(m1, &gi), NVML_SUCCESS);
  ASSERT_EQ(FAKE_FN(lib, nvmlDeviceGetComputeInstanceId)(m1, &ci), NVML_SUCCESS);
  EXPECT_EQ(gi, 9u);
  EXPECT_EQ(ci, 0u);
  char uuid[96];
  ASSERT_EQ(FAKE_FN(lib, nvmlDeviceGetUUID)(m1, uuid, sizeof uuid), NVML_SUCCESS);
  EXPECT_STREQ(uuid, "MIG-bbbb");
  EXPECT_EQ(FAKE_FN(lib, nvmlDeviceGetUtilizationRates)(m1, &u), NVML_ERROR_NOT_SUPPORTED);
  nvmlProcessInfo_v2_t p[4]{};
  n = 4;
  ASSERT_EQ(FAKE_FN(lib, nvmlDeviceGetComputeRunningProcesses_v3)(m0, &n, p), NVML_SUCCESS);
  EXPECT_EQ(n, 0u);
  n = 4;
  ASSERT_EQ(FAKE_FN(lib, nvmlDeviceGetComputeRunningProcesses_v3)(m1, &n, p), NVML_SUCCESS);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(p[0].gpuInstanceId, 9u);
}

TEST(FakeNvmlThreads, ConcurrentCallsAreConsistent) {
  Lib lib;
  use_scenario(one_gpu(R"("metrics": {"power_draw": 123000, "memory_used": 5000})",
                       R"("processes": [{"pid": 1, "gpu": 0, "used_memory": 10}])"),
               3, "threads");
  Session s(lib);
  ASSERT_EQ(s.rc, NVML_SUCCESS);
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      for (int k = 0; k < 500; ++k) {
        unsigned p = 0, n = 4;
        nvmlProcessInfo_v2_t buf[4];
        nvmlMemory_t m{};
        if (FAKE_FN(lib, nvmlDeviceGetPowerUsage)(s.dev0, &p) != NVML_SUCCESS || p != 123000) ++bad;
        if (FAKE_FN(lib, nvmlDeviceGetComputeRunningProcesses_v3)(s.dev0, &n, buf) != NVML_SUCCESS || n != 1)
          ++bad;
        if (FAKE_FN(lib, nvmlDeviceGetMemoryInfo)(s.dev0, &m) != NVML_SUCCESS || m.used != 5000) ++bad;
        if (FAKE_FN(lib, nvmlInit_v2)() != NVML_SUCCESS || FAKE_FN(lib, nvmlShutdown)() != NVML_SUCCESS)
          ++bad;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
}
