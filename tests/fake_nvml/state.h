// SPDX-License-Identifier: Apache-2.0
// Process-wide state of the fake NVML: the loaded scenario (re-read by the first nvmlInit after a
// full nvmlShutdown), scenario time, device handles, and the per-call guard that applies
// error injection. Thread-safe: the scenario is an immutable shared_ptr swapped under a mutex.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "device/nvml/nvml_api.h"
#include "scenario.h"

/// What an nvmlDevice_t points to: a GPU index and, for MIG device handles, the MIG index.
struct nvmlDevice_st {
  unsigned gpu;
  int mig;  // -1: the physical GPU
};

/// Exported with default visibility (the library is built with hidden visibility).
#define FAKE_NVML_EXPORT extern "C" __attribute__((visibility("default")))

namespace fake_nvml {

constexpr unsigned kMaxGpus = 64;
constexpr unsigned kMaxMig = 8;

/// The result of entering an entry point: rc != NVML_SUCCESS means "return rc now".
struct Call {
  int rc = NVML_SUCCESS;
  std::shared_ptr<const Scenario> sc;
  const Device* dev = nullptr;     // the physical GPU (also set for MIG handles)
  const MigDevice* mig = nullptr;  // set for MIG device handles
  unsigned gpu = 0;
  int mig_index = -1;
  double t = 0;  // scenario seconds at the call

  /// The value of a device metric at the call time, or nullopt when the scenario omits it.
  [[nodiscard]] std::optional<double> metric(const char* key) const;
};

/// Guards every entry point: checks init and the handle, applies error injection (hang, return
/// code) and the device's "not_supported" list. `device` may be null for device-less calls.
Call enter(const char* fn, nvmlDevice_t device, bool needs_device = true);

/// How many times entry point `fn` was entered since load (exported as fakeNvmlCallCount).
unsigned long long call_count(const char* fn);

/// nvmlInit*: loads the scenario on the first reference; returns the NVML code.
int init(const char* fn);
/// nvmlShutdown: drops one reference; the scenario is released on the last.
int shutdown();

/// Scenario seconds per wall second (TRAINMON_FAKE_NVML_TIME_SCALE, else the scenario's time_scale).
double time_scale(const Scenario& sc);
/// Scenario seconds now (frozen by TRAINMON_FAKE_NVML_TIME_S, scaled by time_scale).
double scenario_now(const Scenario& sc);
/// Scenario seconds at a wall-clock instant given as µs since the Unix epoch.
double scenario_at_wall_us(const Scenario& sc, unsigned long long wall_us);
/// The wall-clock instant (µs since the epoch) the time origin was taken.
unsigned long long origin_wall_us();
/// Wall clock now in µs since the Unix epoch.
unsigned long long wall_now_us();

/// The stable handle of GPU `gpu` (mig = -1) or of its MIG device `mig`.
nvmlDevice_t handle_of(unsigned gpu, int mig = -1);

/// Copies s into buf (NUL-terminated); INSUFFICIENT_SIZE when length is too small.
int copy_string(const std::string& s, char* buf, unsigned length);

/// Mutable per-device state shared by the process-list entry points.
struct DeviceRuntime {
  unsigned growth_done = 0;  // buffer calls that have grown the list so far
};
/// Locks and returns the runtime state of GPU `gpu` (valid while the lock is held).
std::pair<std::unique_lock<std::mutex>, DeviceRuntime*> runtime_of(unsigned gpu);

/// The variant this library was built as ("current", "r430", "r450", "r535_43", "cuda_stub").
const char* variant();

}  // namespace fake_nvml
