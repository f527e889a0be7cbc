// SPDX-License-Identifier: Apache-2.0
// Test helpers for the fake NVML: dlopen a built variant, write a scenario, freeze time.
// Each variant is opened once per test binary (RTLD_LOCAL); tests re-read their scenario through
// nvmlShutdown + nvmlInit, which reloads $TRAINMON_FAKE_NVML_SCENARIO.
#pragma once

#include <unistd.h>

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <map>
#include <string>

#include "device/nvml/nvml_api.h"

namespace fake_nvml_test {

/// The path of a variant ("" = the default fake_nvml, else e.g. "r535_43").
inline std::string variant_path(const std::string& variant) {
  std::string p = TRAINMON_FAKE_NVML_PATH;
  if (variant.empty()) return p;
  const std::string dir = "/fake_nvml/";
  const auto at = p.rfind(dir);
  return p.substr(0, at) + "/fake_nvml_" + variant + "/" + p.substr(at + dir.size());
}

/// A dlopen'ed fake library (kept open for the whole test binary).
class Lib {
 public:
  explicit Lib(const std::string& variant = "") {
    static std::map<std::string, void*> opened;
    void*& h = opened[variant];
    if (h == nullptr) h = dlopen(variant_path(variant).c_str(), RTLD_NOW | RTLD_LOCAL);
    handle_ = h;
  }
  [[nodiscard]] bool ok() const { return handle_ != nullptr; }
  /// The symbol, or nullptr when this variant does not export it.
  void* sym(const char* name) const { return handle_ ? dlsym(handle_, name) : nullptr; }

 private:
  void* handle_ = nullptr;
};

/// Resolves an entry point with its declared type.
#define FAKE_FN(lib, name) reinterpret_cast<decltype(&::name)>((lib).sym(#name))

/// Writes a scenario to a temp file and points the fake at it; freezes time at `time_s` (< 0: not).
inline std::string use_scenario(const std::string& json, double time_s, const std::string& tag) {
  // One file per test process: ctest runs the cases of one suite side by side (-j), and several
  // checkouts may run their suites at once.
  const std::string path =
      ::testing::TempDir() + "fake_nvml_" + tag + "_" + std::to_string(::getpid()) + ".json";
  std::ofstream(path) << json;
  setenv("TRAINMON_FAKE_NVML_SCENARIO", path.c_str(), 1);
  if (time_s >= 0) {
    setenv("TRAINMON_FAKE_NVML_TIME_S", std::to_string(time_s).c_str(), 1);
  } else {
    unsetenv("TRAINMON_FAKE_NVML_TIME_S");
  }
  unsetenv("TRAINMON_FAKE_NVML_TIME_SCALE");
  return path;
}

/// Freezes scenario time at t seconds.
inline void freeze(double t) {
  setenv("TRAINMON_FAKE_NVML_TIME_S", std::to_string(t).c_str(), 1);
}

/// A session: init on construction (result in rc), shutdown on destruction if init succeeded.
class Session {
 public:
  explicit Session(const Lib& lib) : lib_(lib) {
    rc = FAKE_FN(lib_, nvmlInit_v2)();
    if (rc == NVML_SUCCESS) FAKE_FN(lib_, nvmlDeviceGetHandleByIndex_v2)(0, &dev0);
  }
  ~Session() {
    if (rc == NVML_SUCCESS) FAKE_FN(lib_, nvmlShutdown)();
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  int rc = -1;
  nvmlDevice_t dev0 = nullptr;

 private:
  const Lib& lib_;
};

/// A one-GPU scenario with the given extra device keys and top-level keys (JSON fragments).
inline std::string one_gpu(const std::string& device_keys, const std::string& top_keys = "") {
  return R"({"driver_version": "590.48.01", "devices": [{"name": "NVIDIA H100 80GB HBM3",
    "uuid": "GPU-11111111-2222-3333-4444-555555555555", "memory_total": 85520809984,
    "ecc_mode": true, "pci": {"bus_id": "00000000:18:00.0", "bus": 24})" +
         (device_keys.empty() ? "" : ", " + device_keys) + "}]" + (top_keys.empty() ? "" : ", " + top_keys) +
         "}";
}

}  // namespace fake_nvml_test
