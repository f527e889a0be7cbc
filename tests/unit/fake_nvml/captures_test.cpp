// SPDX-License-Identifier: Apache-2.0
// Fake NVML: every capture scenario loads and answers the capture's --query-gpu values
// (memory.total/used [MiB], power.draw [W], temperature.gpu) at a frozen time.
#include "fake_nvml_fixture.h"

using namespace fake_nvml_test;

namespace {
struct Expected {
  const char* scenario;
  unsigned long long total_mib, used_mib;
  unsigned power_mw, temp_c;
};
constexpr Expected kCaptures[] = {
    {"h100-idle", 81559, 0, 69850, 41},     {"h100-load", 81559, 19818, 631950, 59},
    {"h200-idle", 143771, 0, 77710, 28},    {"h200-load", 143771, 32362, 627400, 52},
    {"rtx2080-idle", 8192, 214, 39320, 40}, {"rtx2080-load", 8192, 819, 111500, 45},
    {"h100-mig", 81559, 11125, 433780, 53}, {"h100-mig-idle", 81559, 59, 71150, 42},
};
}  // namespace

TEST(FakeNvmlCaptures, ScenariosReproduceTheCaptureValues) {
  Lib lib;
  for (const auto& e : kCaptures) {
    SCOPED_TRACE(e.scenario);
    setenv("TRAINMON_FAKE_NVML_SCENARIO",
           (std::string(TRAINMON_SCENARIOS_DIR) + "/" + e.scenario + ".json").c_str(), 1);
    freeze(12345.6);
    Session s(lib);
    ASSERT_EQ(s.rc, NVML_SUCCESS);
    nvmlMemory_v2_t m{};
    m.version = TRAINMON_NVML_STRUCT_VERSION(nvmlMemory_v2_t, 2);
    ASSERT_EQ(FAKE_FN(lib, nvmlDeviceGetMemoryInfo_v2)(s.dev0, &m), NVML_SUCCESS);
    EXPECT_EQ(m.total, e.total_mib * 1048576ull);
    EXPECT_EQ(m.used, e.used_mib * 1048576ull);
    unsigned p = 0, t = 0;
    ASSERT_EQ(FAKE_FN(lib, nvmlDeviceGetPowerUsage)(s.dev0, &p), NVML_SUCCESS);
    EXPECT_EQ(p, e.power_mw);
    ASSERT_EQ(FAKE_FN(lib, nvmlDeviceGetTemperature)(s.dev0, NVML_TEMPERATURE_GPU, &t), NVML_SUCCESS);
    EXPECT_EQ(t, e.temp_c);
  }
}

TEST(FakeNvmlCaptures, H200LoadHasTheThreeCapturedProcesses) {
  Lib lib;
  setenv("TRAINMON_FAKE_NVML_SCENARIO", TRAINMON_SCENARIOS_DIR "/h200-load.json", 1);
  freeze(1);
  Session s(lib);
  ASSERT_EQ(s.rc, NVML_SUCCESS);
  nvmlProcessInfo_v2_t p[8]{};
  unsigned n = 8;
  ASSERT_EQ(FAKE_FN(lib, nvmlDeviceGetComputeRunningProcesses_v3)(s.dev0, &n, p), NVML_SUCCESS);
  ASSERT_EQ(n, 3u);
  EXPECT_EQ(p[0].pid, 10291u);
  EXPECT_EQ(p[0].usedGpuMemory, 2566ull * 1048576);
  EXPECT_EQ(p[2].pid, 10309u);
  char name[64];
  ASSERT_EQ(FAKE_FN(lib, nvmlSystemGetProcessName)(10309, name, sizeof name), NVML_SUCCESS);
  EXPECT_STREQ(name, "./gpu_burn");
}

TEST(FakeNvmlCaptures, EveryScenarioInTheDirectoryLoads) {
  Lib lib;
  for (const char* name :
       {"healthy-1gpu", "ddp-8gpu-healthy", "d1-fragmentation-oom", "d2-ddp-imbalance", "d3-host-memory-leak",
        "d4-dataloader-starved", "d5-gpu-memory-growth", "d6-power-bound", "d7-wrong-device",
        "d8-ddp-not-running", "d9-ghost-process", "d10-ecc-errors"}) {
    SCOPED_TRACE(name);
    setenv("TRAINMON_FAKE_NVML_SCENARIO",
           (std::string(TRAINMON_SCENARIOS_DIR) + "/" + name + ".json").c_str(), 1);
    freeze(15);
    Session s(lib);
    ASSERT_EQ(s.rc, NVML_SUCCESS);
    unsigned count = 0;
    ASSERT_EQ(FAKE_FN(lib, nvmlDeviceGetCount_v2)(&count), NVML_SUCCESS);
    EXPECT_GE(count, 1u);
  }
}
