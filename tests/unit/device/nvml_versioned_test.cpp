// SPDX-License-Identifier: Apache-2.0
// A versioned entry point that is exported but answers NVML_ERROR_FUNCTION_NOT_FOUND or
// NOT_SUPPORTED when called falls back to the older version, as a missing symbol does: for every
// versioned entry point of the loader's table (Versioned slots) and every per-layout family (process
// lists, memory). Through open_nvml_backend() into the fake driver, whose error rules answer at call
// time for one exact exported name (docs/fake-nvml.md, "Error injection").
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "device/nvml/nvml_loader.h"
#include "nvml_test_util.h"

namespace trainmon {
namespace {

using testing::open_fake;
using testing::tick;

/// fakeNvmlCallCount of the default fake (the instance the backend loaded).
unsigned long long calls(const std::string& fn) {
  void* lib = dlopen(TRAINMON_FAKE_NVML_PATH, RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) return 0;  // not loaded yet: nothing called
  auto count = reinterpret_cast<unsigned long long (*)(const char*)>(dlsym(lib, "fakeNvmlCallCount"));
  const unsigned long long n = count ? count(fn.c_str()) : ~0ull;
  dlclose(lib);
  return n;
}

/// Two GPUs with a compute and a graphics process each, clock event reasons, an Xid on GPU 1; every
/// name in `declined` answers `code` at call time.
std::string scenario(const std::vector<std::string>& declined, const std::string& code) {
  std::string errors;
  for (const auto& fn : declined)
    errors += (errors.empty() ? "" : ",") + std::string(R"({"function": ")") + fn + R"(", "return": ")" +
              code + "\"}";
  std::string devices;
  for (int i = 0; i < 2; ++i) {
    devices += (i ? "," : "") + std::string(R"({"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-v-)") +
               std::to_string(i) + R"(", "pci": {"bus_id": "00000000:1)" + std::to_string(8 + i) +
               R"(:00.0", "domain": 0, "bus": )" + std::to_string(24 + i) +
               R"(, "device": 0}, "memory_total": 85520809984, "supported_clocks_event_reasons": "0x1FF",
                  "driver_model": 1,
                  "supported_event_types": "0x1F",
                  "metrics": {"utilization_gpu": 90, "memory_used": 4294967296, "clocks_event_reasons": 4}})";
  }
  const std::string text = R"({"name": "versioned", "cuda_version": "13.1", "devices": [)" + devices +
                           R"(], "processes": [
      {"pid": 5101, "gpu": 0, "type": "C", "used_memory": 1073741824},
      {"pid": 5102, "gpu": 0, "type": "G", "used_memory": 536870912},
      {"pid": 5201, "gpu": 1, "type": "C", "used_memory": 2147483648}],
    "events": [{"t": 1, "gpu": 1, "type": "xid", "xid": 79}],
    "errors": [)" + errors +
                           "]}";
  static int n = 0;
  const auto path =
      std::filesystem::temp_directory_path() /
      ("trainmon-versioned-" + std::to_string(::getpid()) + "-" + std::to_string(n++) + ".json");
  std::ofstream(path) << text;
  return path.string();
}

struct Case {
  std::string entry;                  ///< the table entry's preferred name (SymbolBinding::entry)
  std::vector<std::string> declined;  ///< the newer names that decline at call time
  std::string older;                  ///< the name that must then be called
  /// What the data must show once the older version answered (through the backend).
  std::function<void(DeviceBackend&, const testing::Tick&)> check;
  BackendOptions options = {};  ///< what the backend reads (the rarer values need collect_extended)
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"nvmlInit_v2",
       {"nvmlInit_v2"},
       "nvmlInit",
       [](DeviceBackend& b, const testing::Tick& t) {
         EXPECT_TRUE(b.driver_info().loaded) << b.driver_info().error;
         EXPECT_EQ(t.gpus.size(), 2u);
       }},
      {"nvmlSystemGetCudaDriverVersion_v2",
       {"nvmlSystemGetCudaDriverVersion_v2"},
       "nvmlSystemGetCudaDriverVersion",
       [](DeviceBackend& b, const testing::Tick&) {
         EXPECT_EQ(b.driver_info().cuda_driver_version.value, 13010);
       }},
      {"nvmlDeviceGetCount_v2",
       {"nvmlDeviceGetCount_v2"},
       "nvmlDeviceGetCount",
       [](DeviceBackend& b, const testing::Tick& t) {
         EXPECT_EQ(b.driver_info().device_count.value, 2u);
         EXPECT_EQ(t.gpus.size(), 2u);
       }},
      {"nvmlDeviceGetHandleByIndex_v2",
       {"nvmlDeviceGetHandleByIndex_v2"},
       "nvmlDeviceGetHandleByIndex",
       [](DeviceBackend&, const testing::Tick& t) {
         ASSERT_EQ(t.gpus.size(), 2u);
         EXPECT_TRUE(t.gpus[1].responsive.ok());
         EXPECT_EQ(t.gpus[1].utilization_gpu_pct.value, 90u);
       }},
      {"nvmlDeviceGetPciInfo_v3",
       {"nvmlDeviceGetPciInfo_v3"},
       "nvmlDeviceGetPciInfo_v2",
       [](DeviceBackend&, const testing::Tick& t) {
         ASSERT_EQ(t.gpus.size(), 2u);
         EXPECT_EQ(t.gpus[1].info->pci_bus_id.value, "00000000:19:00.0");
       }},
      {"nvmlDeviceGetPciInfo_v3",
       {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"},
       "nvmlDeviceGetPciInfo",
       [](DeviceBackend&, const testing::Tick& t) {
         ASSERT_EQ(t.gpus.size(), 2u);
         EXPECT_EQ(t.gpus[0].info->pci_bus_id.value, "00000000:18:00.0");
       }},
      {"nvmlDeviceGetCurrentClocksEventReasons",
       {"nvmlDeviceGetCurrentClocksEventReasons"},
       "nvmlDeviceGetCurrentClocksThrottleReasons",
       [](DeviceBackend&, const testing::Tick& t) {
         ASSERT_EQ(t.gpus.size(), 2u);
         EXPECT_EQ(t.gpus[0].clocks_event_reasons_active.value, 4u);
       }},
      {"nvmlDeviceGetSupportedClocksEventReasons",
       {"nvmlDeviceGetSupportedClocksEventReasons"},
       "nvmlDeviceGetSupportedClocksThrottleReasons",
       [](DeviceBackend&, const testing::Tick& t) {
         ASSERT_EQ(t.gpus.size(), 2u);
         EXPECT_EQ(t.gpus[0].info->clocks_event_reasons_supported.value, 0x1FFu);
       }},
      {"nvmlEventSetWait_v2",
       {"nvmlEventSetWait_v2"},
       "nvmlEventSetWait",
       [](DeviceBackend& b, const testing::Tick&) {
         std::vector<GpuEvent> events;
         for (int i = 0; i < 20 && events.empty(); ++i) {
           (void)tick(b);
           events = b.drain_events();
         }
         ASSERT_EQ(events.size(), 1u);
         EXPECT_EQ(events[0].xid, 79u);
         EXPECT_EQ(events[0].gpu_index, 1u);
       }},
      // The per-layout families: the readers fall back from one slot to the next.
      {"nvmlDeviceGetComputeRunningProcesses_v3",
       {"nvmlDeviceGetComputeRunningProcesses_v3"},
       "nvmlDeviceGetComputeRunningProcesses_v2",
       [](DeviceBackend&, const testing::Tick& t) {
         ASSERT_EQ(t.processes.size(), 3u);
         EXPECT_EQ(t.processes[0].pid, 5101u);
         EXPECT_EQ(t.processes[0].used_memory_bytes.value, 1073741824u);
         EXPECT_EQ(t.processes[2].used_memory_bytes.value, 2147483648u);
         EXPECT_TRUE(t.gpus[0].process_count.ok());
       }},
      {"nvmlDeviceGetComputeRunningProcesses_v3",
       {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"},
       "nvmlDeviceGetComputeRunningProcesses",
       [](DeviceBackend&, const testing::Tick& t) {
         ASSERT_EQ(t.processes.size(), 3u);
         EXPECT_EQ(t.processes[2].pid, 5201u);
         EXPECT_EQ(t.processes[2].used_memory_bytes.value, 2147483648u);
         EXPECT_EQ(t.gpus[1].process_count.value, 1u);
       }},
      {"nvmlDeviceGetGraphicsRunningProcesses_v3",
       {"nvmlDeviceGetGraphicsRunningProcesses_v3"},
       "nvmlDeviceGetGraphicsRunningProcesses_v2",
       [](DeviceBackend&, const testing::Tick& t) {
         ASSERT_EQ(t.processes.size(), 3u);
         EXPECT_EQ(t.processes[1].pid, 5102u);
         EXPECT_EQ(t.processes[1].type, 'G');
         EXPECT_EQ(t.processes[1].used_memory_bytes.value, 536870912u);
       }},
      {"nvmlDeviceGetGraphicsRunningProcesses_v3",
       {"nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2"},
       "nvmlDeviceGetGraphicsRunningProcesses",
       [](DeviceBackend&, const testing::Tick& t) {
         ASSERT_EQ(t.processes.size(), 3u);
         EXPECT_EQ(t.processes[1].type, 'G');
         EXPECT_TRUE(t.gpus[0].process_count.ok());
       }},
      {"nvmlDeviceGetDriverModel_v2",
       {"nvmlDeviceGetDriverModel_v2"},
       "nvmlDeviceGetDriverModel",
       [](DeviceBackend&, const testing::Tick& t) {
         ASSERT_EQ(t.gpus.size(), 2u);
         EXPECT_EQ(t.gpus[1].info->driver_model_current.value, 1u);  // TCC
         EXPECT_TRUE(t.gpus[1].info->driver_model_pending.ok());
       },
       [] {
         BackendOptions o;
         o.collect_extended = true;
         return o;
       }()},
      {"nvmlDeviceGetMemoryInfo_v2",
       {"nvmlDeviceGetMemoryInfo_v2"},
       "nvmlDeviceGetMemoryInfo",
       [](DeviceBackend&, const testing::Tick& t) {
         ASSERT_EQ(t.gpus.size(), 2u);
         EXPECT_EQ(t.gpus[0].memory_used_bytes.value, 4294967296u);
         EXPECT_EQ(t.gpus[0].info->memory_total_bytes.value, 85520809984u);
       }},
  };
  return c;
}

class NvmlVersionedFallback : public ::testing::TestWithParam<std::tuple<std::size_t, std::string>> {};

TEST_P(NvmlVersionedFallback, OlderVersionAnswersForTheDecliningOne) {
  const auto& [i, code] = GetParam();
  const Case& c = cases()[i];
  const auto before = calls(c.older);
  auto b = open_fake(scenario(c.declined, code), 30, c.options);
  auto t = tick(*b);
  c.check(*b, t);
  EXPECT_GT(calls(c.older), before) << c.older << " was never called";
  // The backend now calls the older version directly: `doctor` and JSON say which one answers.
  if (c.entry != "nvmlDeviceGetComputeRunningProcesses_v3" &&
      c.entry != "nvmlDeviceGetGraphicsRunningProcesses_v3" && c.entry != "nvmlDeviceGetMemoryInfo_v2") {
    EXPECT_EQ(testing::bound(*b, c.entry), c.older);
  }
  // ...and calls the one that declined no more once it said FUNCTION_NOT_FOUND.
  if (code == "NVML_ERROR_FUNCTION_NOT_FOUND" && c.entry != "nvmlInit_v2" &&
      c.entry != "nvmlDeviceGetCount_v2" && c.entry != "nvmlSystemGetCudaDriverVersion_v2") {
    const auto declined_before = calls(c.declined.front());
    for (int k = 0; k < 3; ++k) (void)tick(*b);
    if (c.entry != "nvmlDeviceGetMemoryInfo_v2") {  // memory_v2 is asked first on every tick by design
      EXPECT_EQ(calls(c.declined.front()), declined_before) << c.declined.front() << " still called";
    }
  }
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<std::size_t, std::string>>& info) {
  const Case& c = cases()[std::get<0>(info.param)];
  std::string n = c.older + "_after_" + std::to_string(c.declined.size()) + "_" +
                  (std::get<1>(info.param) == "NVML_ERROR_NOT_SUPPORTED" ? "not_supported" : "not_found");
  return std::regex_replace(n, std::regex("[^A-Za-z0-9_]"), "_");
}

INSTANTIATE_TEST_SUITE_P(EveryEntry, NvmlVersionedFallback,
                         ::testing::Combine(::testing::Range<std::size_t>(0, 15),
                                            ::testing::Values("NVML_ERROR_FUNCTION_NOT_FOUND",
                                                              "NVML_ERROR_NOT_SUPPORTED")),
                         case_name);

TEST(NvmlVersionedFallback, EveryVersionedEntryPointIsCovered) {
  ASSERT_EQ(cases().size(), 15u);  // the Range above
  auto b = open_fake(scenario({}, "NVML_ERROR_NOT_SUPPORTED"), 30);
  std::set<std::string> covered;
  for (const auto& c : cases()) covered.insert(c.entry);
  // A table entry exporting several names, or one entry of a family of per-version slots (names
  // that differ only in their _vN suffix), must have a case above.
  std::map<std::string, std::vector<std::string>> families;
  for (const auto& s : testing::as_nvml(*b).bindings()) {
    if (s.exported.size() > 1) {
      EXPECT_TRUE(covered.contains(s.entry)) << s.entry << " has no fallback case";
    }
    families[std::regex_replace(s.entry, std::regex("_v[0-9]+$"), "")].push_back(s.entry);
  }
  for (const auto& [base, entries] : families) {
    if (entries.size() < 2) continue;
    EXPECT_TRUE(
        std::any_of(entries.begin(), entries.end(), [&](const auto& e) { return covered.contains(e); }))
        << base << " (" << entries.size() << " slots) has no fallback case";
  }
}

TEST(NvmlVersionedFallback, ReproFunctionNotFoundAtCallTime) {
  // /work/shared/repro/function-not-found-at-call-time.json: _v3 exported but FUNCTION_NOT_FOUND.
  auto b = open_fake(testing::device_scenario("function-not-found-at-call-time.json"), 30);
  auto t = tick(*b);
  ASSERT_EQ(t.gpus.size(), 1u);
  EXPECT_EQ(t.gpus[0].process_count.value, 2u);
  EXPECT_TRUE(t.gpus[0].process_count.ok());
  ASSERT_EQ(t.processes.size(), 2u);
  EXPECT_EQ(t.processes[0].pid, 1001u);
  EXPECT_EQ(t.processes[0].used_memory_bytes.value, 3221225472u);
  EXPECT_EQ(t.processes[1].pid, 1002u);
  EXPECT_EQ(t.processes[1].used_memory_bytes.value, 1073741824u);
}

// ---- the Versioned slot itself ----

int g_calls[3];
nvmlReturn_t g_answer[3];
nvmlReturn_t v0(unsigned* x) {
  ++g_calls[0];
  *x = 0;
  return g_answer[0];
}
nvmlReturn_t v1(unsigned* x) {
  ++g_calls[1];
  *x = 1;
  return g_answer[1];
}
nvmlReturn_t v2(unsigned* x) {
  ++g_calls[2];
  *x = 2;
  return g_answer[2];
}

void reset(nvmlReturn_t a, nvmlReturn_t b, nvmlReturn_t c) {
  g_calls[0] = g_calls[1] = g_calls[2] = 0;
  g_answer[0] = a;
  g_answer[1] = b;
  g_answer[2] = c;
}

TEST(NvmlVersioned, NotFoundSkipsThatVersionForGood) {
  nvml::Versioned<nvmlReturn_t (*)(unsigned*)> f;
  EXPECT_TRUE(f == nullptr);
  f.add(&v0);
  f.add(&v1);
  f.add(&v2);
  EXPECT_FALSE(f == nullptr);
  reset(NVML_ERROR_FUNCTION_NOT_FOUND, NVML_SUCCESS, NVML_SUCCESS);
  unsigned x = 9;
  EXPECT_EQ(f(&x), NVML_SUCCESS);
  EXPECT_EQ(x, 1u);
  EXPECT_EQ(f.in_use(), 1u);
  EXPECT_EQ(f(&x), NVML_SUCCESS);
  EXPECT_EQ(g_calls[0], 1);  // not asked again
  EXPECT_EQ(g_calls[1], 2);
}

TEST(NvmlVersioned, NotSupportedMovesOnlyWhenAnOlderOneWorks) {
  nvml::Versioned<nvmlReturn_t (*)(unsigned*)> f;
  f.add(&v0);
  f.add(&v1);
  unsigned x = 9;
  // Both decline (a device without the feature): the newest is asked again next time, and the
  // answer is NOT_SUPPORTED, the most telling one.
  reset(NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_FUNCTION_NOT_FOUND, NVML_SUCCESS);
  EXPECT_EQ(f(&x), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(f.in_use(), 0u);
  // The newer declines, the older answers: the older from then on.
  reset(NVML_ERROR_NOT_SUPPORTED, NVML_SUCCESS, NVML_SUCCESS);
  EXPECT_EQ(f(&x), NVML_SUCCESS);
  EXPECT_EQ(x, 1u);
  EXPECT_EQ(f.in_use(), 1u);
  // A real error of the newest is its answer (no fallback).
  nvml::Versioned<nvmlReturn_t (*)(unsigned*)> g;
  g.add(&v0);
  g.add(&v1);
  reset(NVML_ERROR_GPU_IS_LOST, NVML_SUCCESS, NVML_SUCCESS);
  EXPECT_EQ(g(&x), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(g_calls[1], 0);
  // Copies keep the choice.
  auto h = f;
  EXPECT_EQ(h.in_use(), 1u);
}

}  // namespace
}  // namespace trainmon
