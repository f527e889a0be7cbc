// SPDX-License-Identifier: Apache-2.0
// Internal to the NVML backend: the per-device state that one DeviceWorker owns, the call wrapper
// that stops touching a device once it reported itself lost, and the readers that fill
// GpuStaticInfo / GpuSample / GpuProcessSample (one file each).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "device/nvml/nvml_api.h"
#include "device/nvml/nvml_error.h"
#include "device/nvml/nvml_loader.h"
#include "device/nvml/nvml_pcie.h"
#include "trainmon/core/gpu_sample.h"
#include "trainmon/device/backend.h"

namespace trainmon::nvml {

/// Wraps NVML calls for one device during one tick. A missing entry point answers
/// NVML_ERROR_FUNCTION_NOT_FOUND; after GPU_IS_LOST / RESET_REQUIRED every later call answers the
/// same code without calling the driver (a lost GPU is not hammered, and every field says lost).
class Call {
 public:
  /// `fn` is a plain entry point or a Versioned one (by reference: its choice of version persists).
  template <class Fn, class... A>
  int operator()(const Fn& fn, A&&... args) {
    if (fatal_ != 0) return fatal_;
    if (fn == nullptr) return NVML_ERROR_FUNCTION_NOT_FOUND;
    int rc = fn(std::forward<A>(args)...);
    if (rc == NVML_SUCCESS) {
      ++ok_;
    } else if (nvml_device_fatal(rc)) {
      fatal_ = rc;
    } else if (nvml_read_status(rc) == ReadStatus::failed || rc == NVML_ERROR_TIMEOUT) {
      ++failed_;
      last_failure_ = rc;
    }
    return rc;
  }
  int fatal() const noexcept { return fatal_; }
  unsigned ok_count() const noexcept { return ok_; }
  unsigned failed_count() const noexcept { return failed_; }
  /// The code of the most recent failed call (0 when none).
  int last_failure() const noexcept { return last_failure_; }

 private:
  int fatal_ = 0;
  unsigned ok_ = 0;
  unsigned failed_ = 0;
  int last_failure_ = 0;
};

/// `check(value)` when rc is NVML_SUCCESS, else the failure status for rc.
template <class V, class Check>
auto checked(int rc, const V& value, Check check) -> decltype(check(value)) {
  using R = decltype(check(value));
  if (rc != NVML_SUCCESS) return R::fail(nvml_read_status(rc), rc);
  return check(value);
}

/// GPM state of one device: the previous tick's sample and this tick's.
struct GpmState {
  nvmlGpmSample_t previous = nullptr;
  nvmlGpmSample_t current = nullptr;
  bool previous_valid = false;
};

/// Everything one device's worker keeps between ticks. Only that worker's thread touches it.
struct DeviceContext {
  DeviceContext(std::shared_ptr<NvmlLibrary> library, nvmlDevice_t h, unsigned i, const BackendOptions& o)
      : lib(std::move(library)), api(&lib->api()), handle(h), index(i), options(o) {}
  ~DeviceContext();
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  std::shared_ptr<NvmlLibrary> lib;  ///< keeps the entry points alive while a job runs
  const NvmlApi* api;
  nvmlDevice_t handle;  ///< null until the device's first tick looks it up (and after a failed look-up)
  unsigned index;
  BackendOptions options;
  /// Registers the device for NVML events (EventWatcher::register_job); true once done. Empty: none.
  std::function<bool(nvmlDevice_t, unsigned)> register_events;
  std::atomic<bool> events_done{false};  ///< written by the worker, read by the sampler

  // static info (nvml_static_info.cpp)
  std::shared_ptr<const GpuStaticInfo> info;
  unsigned ticks_since_full_probe = 0;

  // high-resolution samples and per-process utilisation: newest driver timestamp seen (µs)
  std::uint64_t last_gpu_util_sample_us = 0;
  std::uint64_t last_power_sample_us = 0;
  std::uint64_t last_process_util_us = 0;

  // previous good values of cumulative counters (backwards = invalid_value)
  std::optional<std::uint64_t> prev_energy_mj;
  std::array<std::optional<std::uint64_t>, 4> prev_ecc;        // cor/unc × volatile/aggregate
  std::array<std::optional<std::uint64_t>, 6> prev_violation;  // 74, 75, 269, 270, 271, 76

  // process lists (nvml_processes.cpp): stride of _v3 entries once known (24 or 32); per list
  // (compute, graphics) how many of the newest versions (_v3, _v2) answered that they are not
  // implemented (nvml_answer_means_try_older) while an older one worked: skipped from then on
  std::optional<std::size_t> v3_stride;
  std::array<unsigned, 2> process_list_versions_skipped{};
  // the newest utilisation sample seen per pid (kept for kProcessUtilHoldS while the pid is listed)
  std::map<std::uint32_t, nvmlProcessUtilizationSample_t> last_process_util;

  GpmState gpm;
  std::map<unsigned, GpmState> gpm_mig;  ///< per GPU instance id (nvmlGpmMigSampleGet)

  // NVLink data counters (fields 138/139, KiB summed over tx and rx) at the previous tick
  std::optional<PcieCounterReading> previous_nvlink;

  // PCIe throughput source and previous byte counters (nvml_pcie.{h,cpp})
  PcieThroughputState pcie;
};

/// Microseconds since the Unix epoch (NVML's sample clock).
std::uint64_t now_unix_us();

// ---- driver sample timestamps (nvmlDeviceGetSamples, nvmlDeviceGetProcessUtilization) ----
// The driver dates each sample (µs since the epoch, the same CLOCK_REALTIME as now_unix_us) and
// answers only samples newer than the "last seen" timestamp the caller passes. A sample is never
// trusted without its date: one dated after now (a driver bug, a clock stepped back) must not
// become the next "last seen" (every later read would find nothing newer until that date: blank
// ticks for an hour or for years), and one dated at or before what was asked for is not news.

/// How far after the clock read right after the call a sample may be dated and still count (µs):
/// the two clocks are the same, read a moment apart; more is a bad date.
inline constexpr std::uint64_t kSampleFutureSlackUs = 500'000;

/// Whether a sample dated `ts_us` answers a read for samples after `since_us` made at `now_us`:
/// since_us < ts_us <= now_us + kSampleFutureSlackUs. A timestamp of 0 (undated) never does.
bool sample_dated_in_window(std::uint64_t ts_us, std::uint64_t since_us, std::uint64_t now_us) noexcept;

/// The "last seen" timestamp to ask the driver with at `now_us`: `last_seen_us` itself, or, when it
/// is unset (0) or after now + kSampleFutureSlackUs (a clock stepped back), now - 1 s (the first
/// read's window, as nvitop's).
std::uint64_t sample_window_start(std::uint64_t last_seen_us, std::uint64_t now_us) noexcept;

/// Read (or re-probe) the static facts into ctx.info. Fields that failed transiently are re-read
/// every tick; every field is re-read every kFullReprobeTicks ticks (never switched off for good).
void read_static_info(DeviceContext& ctx, Call& call);
inline constexpr unsigned kFullReprobeTicks = 300;

/// One tick of dynamic metrics for ctx's device.
GpuSample read_sample(DeviceContext& ctx, Call& call);
/// GPM metrics into `s` (nvml_gpm.cpp); needs info->gpm_supported.
void read_gpm(DeviceContext& ctx, Call& call, GpuSample& s);
/// PCIe rx/tx KiB/s into `s` (nvml_pcie.cpp): byte counters when the driver has 64-bit ones, else
/// the blocking nvmlDeviceGetPcieThroughput. Call only when collect_pcie_throughput is on.
void read_pcie_throughput(DeviceContext& ctx, Call& call, GpuSample& s);
/// Release GPM samples (on context destruction).
void free_gpm(DeviceContext& ctx);
/// Every GPM field of `s` and its MIG rows gets `status` (GPM not read this tick).
void set_gpm_status(GpuSample& s, ReadStatus status);
/// GpuSample::nvlink_data_kib_s from the link count and the NVLink data counters of this tick's
/// field values (nvml_nvlink.cpp): `count`, `tx`, `rx` are fields 91, 138, 139 (scope UINT_MAX) as
/// answered; `rc` the call's code; `mid_us` CLOCK_MONOTONIC at the middle of the call.
void read_nvlink_throughput(DeviceContext& ctx, int rc, const nvmlFieldValue_t& count,
                            const nvmlFieldValue_t& tx, const nvmlFieldValue_t& rx, std::int64_t mid_us,
                            GpuSample& s);
/// Processes on ctx's device: compute and graphics lists, utilisation, names. One entry per pid
/// (its memory summed over the entries listing it: MIG instances, duplicates). `count` gets the
/// number of pids, or why the lists are unknown (GpuSample::process_count); the entries of a list
/// that did answer are returned all the same. `mig_enabled`: a list the GPU's own handle refuses is
/// read from each MIG device handle instead.
std::vector<GpuProcessSample> read_processes(DeviceContext& ctx, Call& call, Reading<unsigned>& count,
                                             bool mig_enabled);

/// Give every Reading of `s` (and its MIG rows) the same status: a lost or hung device. The
/// process_count too when `processes` (the processes were asked for: they are unknown as well).
void set_all_status(GpuSample& s, ReadStatus status, std::int32_t code, bool processes = false);

}  // namespace trainmon::nvml
