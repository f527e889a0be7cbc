// SPDX-License-Identifier: Apache-2.0
// Loading NVML: missing library, libraries without NVML, the CUDA stub, init failures, zero GPUs,
// and old-driver ABI variants choosing the right symbols. All through open_nvml_backend().
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "device/nvml/nvml_loader.h"
#include "nvml_test_util.h"
#include "trainmon/tui/screen.h"

namespace trainmon {
namespace {

using testing::bound;
using testing::device_scenario;
using testing::fake_variant_path;
using testing::open_fake;
using testing::ScopedEnv;
using testing::tick;

void expect_one_clear_line(const DriverInfo& d) {
  EXPECT_FALSE(d.loaded);
  EXPECT_FALSE(d.error.empty());
  EXPECT_EQ(d.error.find('\n'), std::string::npos) << d.error;
}

TEST(NvmlLoader, MissingLibraryGivesOneClearLine) {
  BackendOptions o;
  o.library_path = "/nonexistent/dir/libnvidia-ml.so.1";
  auto b = open_nvml_backend(o);
  DriverInfo d = b->driver_info();
  expect_one_clear_line(d);
  EXPECT_NE(d.error.find("/nonexistent/dir/libnvidia-ml.so.1"), std::string::npos) << d.error;
  EXPECT_NE(d.error.find("lsmod | grep nvidia"), std::string::npos) << d.error;
  EXPECT_NE(d.error.find("TRAINMON_NVML_LIBRARY"), std::string::npos) << d.error;
  EXPECT_EQ(b->device_count(), 0u);
  std::vector<GpuSample> gpus;
  std::vector<GpuProcessSample> procs;
  b->sample(gpus, procs);  // never crashes, adds nothing
  EXPECT_TRUE(gpus.empty());
  EXPECT_TRUE(procs.empty());
  EXPECT_TRUE(b->drain_events().empty());
}

TEST(NvmlLoader, EnvironmentOverrideIsTriedAlone) {
  ScopedEnv env("TRAINMON_NVML_LIBRARY", "/nonexistent/env/libnvidia-ml.so.1");
  EXPECT_EQ(nvml::nvml_library_candidates(""),
            std::vector<std::string>{"/nonexistent/env/libnvidia-ml.so.1"});
  EXPECT_EQ(nvml::nvml_library_candidates("/x/y.so"), std::vector<std::string>{"/x/y.so"});
  auto b = open_nvml_backend({});
  expect_one_clear_line(b->driver_info());
  EXPECT_NE(b->driver_info().error.find("/nonexistent/env/libnvidia-ml.so.1"), std::string::npos);
}

TEST(NvmlLoader, DefaultCandidates) {
  ScopedEnv env("TRAINMON_NVML_LIBRARY", std::nullopt);
  EXPECT_EQ(nvml::nvml_library_candidates(""),
            (std::vector<std::string>{"libnvidia-ml.so.1", "libnvidia-ml.so"}));
}

TEST(NvmlLoader, LibraryWithoutNvmlIsRefused) {
  BackendOptions o;
  o.library_path = "libm.so.6";
  auto b = open_nvml_backend(o);
  expect_one_clear_line(b->driver_info());
  EXPECT_NE(b->driver_info().error.find("lacks required entry points: nvmlInit_v2"), std::string::npos)
      << b->driver_info().error;
}

TEST(NvmlLoader, LibraryUnderStubsIsRefused) {
  std::string path = testing::isolated_fake_copy("fake_nvml", "cuda/lib64/stubs", "libnvidia-ml.so");
  BackendOptions o;
  o.library_path = path;
  auto b = open_nvml_backend(o);
  expect_one_clear_line(b->driver_info());
  EXPECT_NE(b->driver_info().error.find("stub"), std::string::npos) << b->driver_info().error;
  std::filesystem::remove_all(
      std::filesystem::path(path).parent_path().parent_path().parent_path().parent_path());
}

TEST(NvmlLoader, CudaStubInitFailureIsExplained) {
  std::string lib = fake_variant_path("fake_nvml_cuda_stub");
  if (!std::filesystem::exists(lib)) GTEST_SKIP() << "no " << lib;
  auto b = open_fake(device_scenario("exact-2gpu.json"), 30, {}, lib);
  DriverInfo d = b->driver_info();
  expect_one_clear_line(d);
  EXPECT_NE(d.error.find("NVML_ERROR_LIBRARY_NOT_FOUND"), std::string::npos) << d.error;
  EXPECT_NE(d.error.find("stub"), std::string::npos) << d.error;
  EXPECT_EQ(d.device_count.status, ReadStatus::failed);
  EXPECT_EQ(d.device_count.code, 12);
}

TEST(NvmlLoader, InitFailureDriverNotLoaded) {
  auto b = open_fake(device_scenario("init-driver-not-loaded.json"));
  DriverInfo d = b->driver_info();
  expect_one_clear_line(d);
  EXPECT_EQ(d.library_path, TRAINMON_FAKE_NVML_PATH);
  EXPECT_EQ(d.error.rfind("NVIDIA driver not loaded: ", 0), 0u) << d.error;
  EXPECT_NE(d.error.find("(nvmlInit_v2: NVML_ERROR_DRIVER_NOT_LOADED, library "), std::string::npos)
      << d.error;
  EXPECT_NE(d.error.find("lsmod | grep nvidia"), std::string::npos) << d.error;
  EXPECT_EQ(b->device_count(), 0u);
}

TEST(NvmlLoader, InitFailureWithoutScenarioIsDriverNotLoaded) {
  ScopedEnv sc("TRAINMON_FAKE_NVML_SCENARIO", std::nullopt);
  BackendOptions o;
  o.library_path = TRAINMON_FAKE_NVML_PATH;
  auto b = open_nvml_backend(o);
  expect_one_clear_line(b->driver_info());
  EXPECT_NE(b->driver_info().error.find("NVML_ERROR_DRIVER_NOT_LOADED"), std::string::npos);
}

TEST(NvmlLoader, InitFailureVersionMismatch) {
  auto b = open_fake(device_scenario("init-version-mismatch.json"));
  DriverInfo d = b->driver_info();
  expect_one_clear_line(d);
  EXPECT_NE(d.error.find("NVML_ERROR_LIB_RM_VERSION_MISMATCH"), std::string::npos) << d.error;
  EXPECT_NE(d.error.find("reboot"), std::string::npos) << d.error;
}

TEST(NvmlLoader, ZeroGpus) {
  auto b = open_fake(device_scenario("zero-gpus.json"));
  DriverInfo d = b->driver_info();
  EXPECT_TRUE(d.loaded);
  EXPECT_EQ(d.device_count.status, ReadStatus::ok);
  EXPECT_EQ(d.device_count.value, 0u);
  EXPECT_NE(d.error.find("reports no GPUs"), std::string::npos) << d.error;
  EXPECT_EQ(d.error.find('\n'), std::string::npos);
  auto t = tick(*b);
  EXPECT_TRUE(t.gpus.empty());
}

TEST(NvmlLoader, CurrentDriverBindsVersionedNames) {
  auto b = open_fake(device_scenario("exact-2gpu.json"));
  ASSERT_TRUE(b->driver_info().loaded);
  EXPECT_EQ(bound(*b, "nvmlInit_v2"), "nvmlInit_v2");
  EXPECT_EQ(bound(*b, "nvmlDeviceGetCount_v2"), "nvmlDeviceGetCount_v2");
  EXPECT_EQ(bound(*b, "nvmlDeviceGetHandleByIndex_v2"), "nvmlDeviceGetHandleByIndex_v2");
  EXPECT_EQ(bound(*b, "nvmlDeviceGetComputeRunningProcesses_v3"), "nvmlDeviceGetComputeRunningProcesses_v3");
  EXPECT_EQ(bound(*b, "nvmlDeviceGetMemoryInfo_v2"), "nvmlDeviceGetMemoryInfo_v2");
  EXPECT_EQ(bound(*b, "nvmlDeviceGetCurrentClocksEventReasons"), "nvmlDeviceGetCurrentClocksEventReasons");
  EXPECT_EQ(bound(*b, "nvmlEventSetWait_v2"), "nvmlEventSetWait_v2");
  EXPECT_EQ(bound(*b, "nvmlSystemGetCudaDriverVersion_v2"), "nvmlSystemGetCudaDriverVersion_v2");
  EXPECT_EQ(bound(*b, "nvmlDeviceGetPciInfo_v3"), "nvmlDeviceGetPciInfo_v3");
}

TEST(NvmlLoader, Driver430UsesPlainNamesAndV1Structs) {
  std::string lib = fake_variant_path("fake_nvml_r430");
  if (!std::filesystem::exists(lib)) GTEST_SKIP() << "no " << lib;
  auto b = open_fake(device_scenario("exact-2gpu.json"), 30, {}, lib);
  ASSERT_TRUE(b->driver_info().loaded) << b->driver_info().error;
  EXPECT_EQ(bound(*b, "nvmlDeviceGetComputeRunningProcesses_v3"), "");
  EXPECT_EQ(bound(*b, "nvmlDeviceGetComputeRunningProcesses_v2"), "");
  EXPECT_EQ(bound(*b, "nvmlDeviceGetComputeRunningProcesses"), "nvmlDeviceGetComputeRunningProcesses");
  EXPECT_EQ(bound(*b, "nvmlDeviceGetMemoryInfo_v2"), "");
  EXPECT_EQ(bound(*b, "nvmlDeviceGetCurrentClocksEventReasons"), "nvmlDeviceGetCurrentClocksThrottleReasons");
  EXPECT_EQ(bound(*b, "nvmlEventSetWait_v2"), "nvmlEventSetWait");
  EXPECT_EQ(bound(*b, "nvmlSystemGetCudaDriverVersion_v2"), "nvmlSystemGetCudaDriverVersion");

  auto t = tick(*b);
  ASSERT_EQ(t.gpus.size(), 2u);
  const GpuSample& s = t.gpus[0];
  // memory v1: used includes reserved, no reserved field
  EXPECT_EQ(s.memory_used_bytes.value, 65498251264ull + 564133888ull);
  EXPECT_EQ(s.memory_reserved_bytes.status, ReadStatus::not_supported);
  EXPECT_EQ(s.memory_free_bytes.value, 85520809984ull - 65498251264ull - 564133888ull);
  EXPECT_EQ(s.clocks_event_reasons_active.value, 0x4ull);  // through the ThrottleReasons name
  EXPECT_EQ(s.utilization_jpeg_pct.status, ReadStatus::missing_symbol);
  EXPECT_EQ(s.utilization_jpeg_pct.code, 13);
  EXPECT_EQ(s.mig_mode_current.status, ReadStatus::missing_symbol);
  EXPECT_EQ(s.gpm_sm_util_pct.status, ReadStatus::not_supported);
  ASSERT_EQ(t.processes.size(), 4u);
  EXPECT_EQ(t.processes[0].pid, 1001u);
  EXPECT_EQ(t.processes[0].used_memory_bytes.value, 1073741824ull);
  EXPECT_EQ(t.processes[0].gpu_instance_id.status, ReadStatus::not_supported);  // v1 struct has no ids
  EXPECT_EQ(t.processes[3].pid, 2001u);
}

TEST(NvmlLoader, Driver450UsesV2Processes) {
  std::string lib = fake_variant_path("fake_nvml_r450");
  if (!std::filesystem::exists(lib)) GTEST_SKIP() << "no " << lib;
  auto b = open_fake(device_scenario("exact-2gpu.json"), 30, {}, lib);
  ASSERT_TRUE(b->driver_info().loaded) << b->driver_info().error;
  EXPECT_EQ(bound(*b, "nvmlDeviceGetComputeRunningProcesses_v3"), "");
  EXPECT_EQ(bound(*b, "nvmlDeviceGetComputeRunningProcesses_v2"), "nvmlDeviceGetComputeRunningProcesses_v2");
  EXPECT_EQ(bound(*b, "nvmlDeviceGetMemoryInfo_v2"), "");
  auto t = tick(*b);
  ASSERT_EQ(t.processes.size(), 4u);
  EXPECT_EQ(t.processes[0].pid, 1001u);
  EXPECT_EQ(t.processes[0].gpu_instance_id.status, ReadStatus::not_available);  // 0xFFFFFFFF: MIG off
  EXPECT_EQ(t.processes[2].pid, 1003u);
  EXPECT_EQ(t.processes[2].used_memory_bytes.value, 268435456ull);
  EXPECT_EQ(t.gpus[0].mig_mode_current.value, 0u);
}

TEST(NvmlLoader, Driver535_43ThirtyTwoByteLayoutReadCorrectly) {
  std::string lib = fake_variant_path("fake_nvml_r535_43");
  if (!std::filesystem::exists(lib)) GTEST_SKIP() << "no " << lib;
  auto b = open_fake(device_scenario("exact-2gpu.json"), 30, {}, lib);
  ASSERT_TRUE(b->driver_info().loaded) << b->driver_info().error;
  for (int i = 0; i < 2; ++i) {  // first tick probes the _v3 layout, the next uses _v2
    auto t = tick(*b);
    ASSERT_EQ(t.processes.size(), 4u) << "tick " << i;
    EXPECT_EQ(t.processes[0].pid, 1001u);
    EXPECT_EQ(t.processes[0].used_memory_bytes.value, 1073741824ull);
    EXPECT_EQ(t.processes[0].gpu_instance_id.status, ReadStatus::not_available);
    EXPECT_EQ(t.processes[1].pid, 1002u);
    EXPECT_EQ(t.processes[2].pid, 1003u);
    EXPECT_EQ(t.processes[2].used_memory_bytes.value, 268435456ull);
    EXPECT_TRUE(t.processes[2].compute_and_graphics);
    EXPECT_EQ(t.processes[3].pid, 2001u);
  }
}

// ---- issue 33: the reason and the advice first, the library path last ----

std::string init_error_scenario(const std::string& code) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("trainmon-init-" + std::to_string(::getpid()) + "-" + code + ".json");
  std::ofstream(path) << R"({"name": "init", "init_error": ")" << code << R"(", "devices": []})";
  return path.string();
}

/// `top`'s screen text at width x 24 for a host whose driver says `error`.
std::string top_text(const DriverInfo& d, int width) {
  Snapshot snap;
  snap.driver = d;
  snap.host.hostname = "node";
  tui::UiState ui;
  tui::ScreenInput in{&snap, nullptr, nullptr};
  return tui::render(in, ui, width, 24, true).canvas.text();
}

/// The text as shown over several screen rows, joined: each row's blanks at both ends dropped.
std::string joined_rows(const std::string& screen) {
  std::string out;
  std::size_t b = 0;
  while (b < screen.size()) {
    std::size_t e = screen.find('\n', b);
    if (e == std::string::npos) e = screen.size();
    std::string row = screen.substr(b, e - b);
    while (!row.empty() && row.back() == ' ') row.pop_back();
    std::size_t f = row.find_first_not_of(' ');
    if (f != std::string::npos) out += (out.empty() ? "" : " ") + row.substr(f);
    b = e + 1;
  }
  return out;
}

TEST(NvmlLoader, EveryReasonComesFirstWithItsAdviceAndThePathLast) {
  const std::string empty_dir =
      std::filesystem::temp_directory_path() / ("trainmon-empty-" + std::to_string(::getpid()));
  std::filesystem::create_directories(empty_dir);
  // How it fails, the reason, a piece of the advice, how the detail begins.
  struct Case {
    std::string what;
    std::unique_ptr<DeviceBackend> backend;
    std::string reason, advice, detail;
  };
  std::vector<Case> cases;
  {
    BackendOptions o;
    o.library_path = empty_dir + "/libnvidia-ml.so.1";  // no library there
    cases.push_back(
        {"missing", open_nvml_backend(o), "NVML library not loaded: ", "nvidia-smi", "(tried " + empty_dir});
  }
  {
    BackendOptions o;
    o.library_path = "libm.so.6";  // a library, but no NVML
    cases.push_back({"not NVML", open_nvml_backend(o), "NVML library not loaded: ", "TRAINMON_NVML_LIBRARY",
                     "(tried libm.so.6"});
  }
  for (auto [code, reason, advice] :
       {std::tuple{"NVML_ERROR_DRIVER_NOT_LOADED", "NVIDIA driver not loaded: ", "modprobe nvidia"},
        {"NVML_ERROR_LIB_RM_VERSION_MISMATCH", "NVIDIA driver/library version mismatch: ", "reboot"},
        {"NVML_ERROR_NO_PERMISSION", "no permission to use the NVIDIA driver: ", "/dev/nvidiactl"},
        {"NVML_ERROR_UNKNOWN", "NVML failed to start (", "nvidia-smi"}}) {
    cases.push_back({code, open_fake(init_error_scenario(code)), reason, advice,
                     std::string("(nvmlInit_v2: ") + code + ", library "});
  }
  cases.push_back({"zero GPUs", open_fake(device_scenario("zero-gpus.json")),
                   "NVML reports no GPUs: ", "nvidia-smi -L", "(library "});
  for (const auto& c : cases) {
    const DriverInfo d = c.backend->driver_info();
    SCOPED_TRACE(c.what + ": " + d.error);
    EXPECT_EQ(d.error.find('\n'), std::string::npos);
    EXPECT_EQ(d.error.rfind(c.reason, 0), 0u);
    const auto advice = d.error.find(c.advice);
    const auto detail = d.error.find(c.detail);
    ASSERT_NE(advice, std::string::npos);
    ASSERT_NE(detail, std::string::npos);
    EXPECT_LT(advice, detail) << "the advice comes before the detail";
    if (!d.library_path.empty()) {
      EXPECT_LT(advice, d.error.find(d.library_path));
    }
    EXPECT_EQ(d.error.back(), ')');
    // top's header at 80 and 60 columns shows the reason and the whole advice (wrapped).
    const std::string head = d.error.substr(0, detail - 1);
    for (int width : {80, 60}) {
      const std::string shown = joined_rows(top_text(d, width));
      EXPECT_NE(shown.find("GPU: none, host only: " + head), std::string::npos) << width << "\n" << shown;
    }
  }
  std::filesystem::remove_all(empty_dir);
}

}  // namespace
}  // namespace trainmon
