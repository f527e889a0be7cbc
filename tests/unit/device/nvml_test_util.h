// SPDX-License-Identifier: Apache-2.0
// Helpers for the NVML backend tests: every test goes through open_nvml_backend() and the real
// dlopen loader, pointed at a fake libnvidia-ml.so.1 (tests/fake_nvml, docs/fake-nvml.md).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "device/nvml/nvml_backend.h"
#include "trainmon/device/backend.h"

namespace trainmon::testing {

/// Sets an environment variable for the scope, restoring the previous value (or unsetting).
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::optional<std::string>& value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    if (value) {
      setenv(name_.c_str(), value->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

/// Path of a fake driver variant ("fake_nvml", "fake_nvml_r430", ...), a sibling directory of
/// the default fake's directory.
inline std::string fake_variant_path(const std::string& variant) {
  std::filesystem::path p(TRAINMON_FAKE_NVML_PATH);
  return (p.parent_path().parent_path() / variant / p.filename()).string();
}

/// A private copy of a fake variant under a fresh temporary directory (`subdir` inside it): a
/// test that leaves a thread stuck inside the library (hang injection) must not share the loaded
/// instance (and its init count) with later tests.
inline std::string isolated_fake_copy(const std::string& variant, const std::string& subdir = "lib",
                                      const std::string& filename = "libnvidia-ml.so.1") {
  static int counter = 0;
  auto dir = std::filesystem::temp_directory_path() /
             ("trainmon-nvml-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++)) / subdir;
  std::filesystem::create_directories(dir);
  auto dst = dir / filename;
  std::filesystem::copy_file(fake_variant_path(variant), dst,
                             std::filesystem::copy_options::overwrite_existing);
  return dst.string();
}

inline std::string device_scenario(const std::string& name) {
  std::string path = TRAINMON_SOURCE_DIR;
  path += "/tests/unit/device/scenarios/";
  path += name;
  return path;
}

/// Opens the backend on `library` with scenario `scenario` (a full path), time frozen at
/// `frozen_s` when given. The scenario is read by nvmlInit inside open_nvml_backend().
inline std::unique_ptr<DeviceBackend> open_fake(const std::string& scenario,
                                                std::optional<double> frozen_s = 30,
                                                BackendOptions options = {},
                                                const std::string& library = TRAINMON_FAKE_NVML_PATH) {
  ScopedEnv sc("TRAINMON_FAKE_NVML_SCENARIO", scenario);
  options.library_path = library;
  if (frozen_s)
    setenv("TRAINMON_FAKE_NVML_TIME_S", std::to_string(*frozen_s).c_str(), 1);
  else
    unsetenv("TRAINMON_FAKE_NVML_TIME_S");
  return open_nvml_backend(options);
}

struct Tick {
  std::vector<GpuSample> gpus;
  std::vector<GpuProcessSample> processes;
};

inline Tick tick(DeviceBackend& b) {
  Tick t;
  b.sample(t.gpus, t.processes);
  return t;
}

inline const nvml::NvmlBackend& as_nvml(const DeviceBackend& b) {
  return dynamic_cast<const nvml::NvmlBackend&>(b);
}

inline std::string bound(const DeviceBackend& b, const std::string& entry) {
  for (const auto& s : as_nvml(b).bindings()) {
    if (s.entry == entry) return s.bound;
  }
  return "<no entry " + entry + ">";
}

}  // namespace trainmon::testing
