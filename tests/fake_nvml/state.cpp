// SPDX-License-Identifier: Apache-2.0
#include "state.h"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>
#include <unordered_map>

namespace fake_nvml {
namespace {

struct Global {
  std::mutex mu;
  int refs = 0;
  std::shared_ptr<const Scenario> sc;
  std::string counters_for;                    // path the rule counters belong to
  std::vector<unsigned long long> rule_calls;  // matching calls seen, per rule
  std::array<DeviceRuntime, kMaxGpus> runtime{};
  bool origin_set = false;
  std::chrono::steady_clock::time_point origin_steady;
  unsigned long long origin_wall = 0;
  std::mutex calls_mu;                                             // only guards calls
  std::unordered_map<std::string_view, unsigned long long> calls;  // entry point → calls (__func__ keys)
};

Global* g_global = nullptr;

Global& g() {
  // Created on first use and kept for calls during exit; freed when the library is unloaded
  // (release_at_unload below), so a dlclose()d fake leaves nothing behind for LeakSanitizer.
  static Global* global = g_global = new Global();
  return *global;
}

std::array<std::array<nvmlDevice_st, kMaxMig + 1>, kMaxGpus>& handles() {
  static std::array<std::array<nvmlDevice_st, kMaxMig + 1>, kMaxGpus> h = [] {
    std::array<std::array<nvmlDevice_st, kMaxMig + 1>, kMaxGpus> a{};
    for (unsigned i = 0; i < kMaxGpus; ++i)
      for (unsigned m = 0; m <= kMaxMig; ++m) a[i][m] = nvmlDevice_st{i, static_cast<int>(m) - 1};
    return a;
  }();
  return h;
}

std::optional<double> env_double(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(v, &end);
  if (end == v) return std::nullopt;
  return d;
}

// Set once (at load) and never changed afterwards: readers that see origin_ready need no lock.
std::atomic<bool> origin_ready{false};

void set_origin_locked(Global& gl) {
  if (gl.origin_set) return;
  gl.origin_set = true;
  gl.origin_steady = std::chrono::steady_clock::now();
  gl.origin_wall = wall_now_us();
  origin_ready.store(true, std::memory_order_release);
}

void ensure_origin() {
  if (origin_ready.load(std::memory_order_acquire)) return;
  std::lock_guard lk(g().mu);
  set_origin_locked(g());
}

// The time origin is taken when the library is loaded (first use at the latest).
[[maybe_unused]] const bool kOriginAtLoad = [] {
  std::lock_guard lk(g().mu);
  set_origin_locked(g());
  return true;
}();

bool rule_matches_fn(const ErrorRule& r, const char* fn) {
  return r.function == "*" || r.function == fn;
}

}  // namespace

unsigned long long wall_now_us() {
  return static_cast<unsigned long long>(std::chrono::duration_cast<std::chrono::microseconds>(
                                             std::chrono::system_clock::now().time_since_epoch())
                                             .count());
}

unsigned long long origin_wall_us() {
  ensure_origin();
  return g().origin_wall;
}

double time_scale(const Scenario& sc) {
  return env_double("TRAINMON_FAKE_NVML_TIME_SCALE").value_or(sc.time_scale);
}

double scenario_now(const Scenario& sc) {
  if (auto frozen = env_double("TRAINMON_FAKE_NVML_TIME_S")) return *frozen;
  ensure_origin();
  const std::chrono::steady_clock::time_point origin = g().origin_steady;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - origin).count();
  return wall * time_scale(sc) + sc.start_offset_s;
}

double scenario_at_wall_us(const Scenario& sc, unsigned long long wall_us) {
  if (auto frozen = env_double("TRAINMON_FAKE_NVML_TIME_S")) return *frozen;
  const unsigned long long origin = origin_wall_us();
  const double wall = wall_us > origin ? static_cast<double>(wall_us - origin) / 1e6 : 0.0;
  return wall * time_scale(sc) + sc.start_offset_s;
}

nvmlDevice_t handle_of(unsigned gpu, int mig) {
  return &handles()[gpu][static_cast<unsigned>(mig + 1)];
}

int copy_string(const std::string& s, char* buf, unsigned length) {
  if (buf == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (length < s.size() + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(buf, s.c_str(), s.size() + 1);
  return NVML_SUCCESS;
}

std::pair<std::unique_lock<std::mutex>, DeviceRuntime*> runtime_of(unsigned gpu) {
  std::unique_lock lk(g().mu);
  return {std::move(lk), &g().runtime[gpu % kMaxGpus]};
}

std::optional<double> Call::metric(const char* key) const {
  if (mig != nullptr) {
    auto it = mig->metrics.find(key);
    if (it != mig->metrics.end()) return it->second.at(t);
    return std::nullopt;
  }
  if (dev == nullptr) return std::nullopt;
  if (const Timeline* tl = dev->metric(key)) return tl->at(t);
  return std::nullopt;
}

Call enter(const char* fn, nvmlDevice_t device, bool needs_device) {
  Call c;
  Global& gl = g();
  {
    std::lock_guard lk(gl.calls_mu);
    ++gl.calls[fn];
  }
  unsigned hang_ms = 0;
  std::optional<int> injected;
  {
    std::lock_guard lk(gl.mu);
    c.sc = gl.sc;
  }
  if (!c.sc) {
    c.rc = NVML_ERROR_UNINITIALIZED;
    return c;
  }
  if (needs_device) {
    auto& h = handles();
    const auto* begin = &h[0][0];
    const auto* end = begin + kMaxGpus * (kMaxMig + 1);
    if (device == nullptr || device < begin || device >= end || device->gpu >= c.sc->devices.size()) {
      c.rc = NVML_ERROR_INVALID_ARGUMENT;
      return c;
    }
    c.gpu = device->gpu;
    c.dev = &c.sc->devices[c.gpu];
    c.mig_index = device->mig;
    if (device->mig >= 0) {
      if (!c.dev->mig_enabled() || static_cast<unsigned>(device->mig) >= c.dev->mig_devices.size()) {
        c.rc = NVML_ERROR_INVALID_ARGUMENT;
        return c;
      }
      c.mig = &c.dev->mig_devices[static_cast<unsigned>(device->mig)];
    }
  }
  c.t = scenario_now(*c.sc);
  if (!c.sc->errors.empty()) {  // most scenarios inject nothing: no lock shared by every call
    std::lock_guard lk(gl.mu);
    if (gl.rule_calls.size() != c.sc->errors.size()) gl.rule_calls.assign(c.sc->errors.size(), 0);
    for (std::size_t i = 0; i < c.sc->errors.size(); ++i) {
      const ErrorRule& r = c.sc->errors[i];
      if (!rule_matches_fn(r, fn)) continue;
      if (r.gpu && (!needs_device || *r.gpu != c.gpu)) continue;
      if (r.mig_handle && (!needs_device || *r.mig_handle != (c.mig_index >= 0))) continue;
      const unsigned long long n = ++gl.rule_calls[i];
      if (c.t < r.from_s || c.t >= r.to_s) continue;
      if (!r.calls.empty() && !r.calls.contains(n)) continue;
      if (r.call_to > 0 && (n < r.call_from || n > r.call_to)) continue;
      if (hang_ms == 0) hang_ms = r.hang_ms;
      if (!injected && r.ret) injected = r.ret;
    }
  }
  if (hang_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(hang_ms));
  if (injected) {
    c.rc = *injected;
    return c;
  }
  if (c.dev != nullptr && c.dev->not_supported.contains(fn)) c.rc = NVML_ERROR_NOT_SUPPORTED;
  return c;
}

unsigned long long call_count(const char* fn) {
  if (fn == nullptr) return 0;
  Global& gl = g();
  std::lock_guard lk(gl.calls_mu);
  auto it = gl.calls.find(fn);
  return it == gl.calls.end() ? 0 : it->second;
}

std::mutex* g_init_mu = nullptr;

std::mutex& init_mu() {
  static auto* mu = g_init_mu = new std::mutex();
  return *mu;
}

// Runs at dlclose() or process exit. The backend never unloads a library while one of its calls
// is still running (a hung worker keeps it loaded), so nothing can use these after this point.
__attribute__((destructor)) void release_at_unload() {
  delete g_global;
  g_global = nullptr;
  delete g_init_mu;
  g_init_mu = nullptr;
}

int init(const char* fn) {
  std::lock_guard serial(init_mu());  // one init/shutdown at a time
  Global& gl = g();
  {
    std::lock_guard lk(gl.mu);
    set_origin_locked(gl);
    if (gl.refs > 0) {
      ++gl.refs;
      return NVML_SUCCESS;
    }
  }
  const char* path = std::getenv("TRAINMON_FAKE_NVML_SCENARIO");
  if (path == nullptr || *path == '\0') {
    std::fprintf(stderr, "fake NVML: TRAINMON_FAKE_NVML_SCENARIO is not set; no driver to talk to\n");
    return NVML_ERROR_DRIVER_NOT_LOADED;
  }
  std::shared_ptr<const Scenario> sc;
  try {
    sc = std::make_shared<const Scenario>(load_scenario(path));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fake NVML: cannot load scenario %s: %s\n", path, e.what());
    return NVML_ERROR_UNKNOWN;
  }
  if (sc->devices.size() > kMaxGpus) {
    std::fprintf(stderr, "fake NVML: cannot load scenario %s: more than %u devices\n", path, kMaxGpus);
    return NVML_ERROR_UNKNOWN;
  }
  {
    std::lock_guard lk(gl.mu);
    if (gl.counters_for != path) {  // counters survive re-init of the same file (init retries)
      gl.counters_for = path;
      gl.rule_calls.assign(sc->errors.size(), 0);
      gl.runtime = {};
    }
    gl.sc = sc;
  }
  // Injection on the init entry points themselves (e.g. fail the first two nvmlInit_v2 calls).
  Call c = enter(fn, nullptr, false);
  int rc = c.rc;
  if (rc == NVML_SUCCESS && sc->init_error) rc = *sc->init_error;
  std::lock_guard lk(gl.mu);
  if (rc != NVML_SUCCESS) {
    if (gl.refs == 0) gl.sc.reset();
    return rc;
  }
  ++gl.refs;
  return NVML_SUCCESS;
}

int shutdown() {
  std::lock_guard serial(init_mu());
  Global& gl = g();
  std::lock_guard lk(gl.mu);
  if (gl.refs == 0) return NVML_ERROR_UNINITIALIZED;
  if (--gl.refs == 0) gl.sc.reset();
  return NVML_SUCCESS;
}

}  // namespace fake_nvml

/// Test hook (not an NVML function): how many times entry point `fn` (e.g.
/// "nvmlDeviceGetPcieThroughput") was entered since the library was loaded, whatever it answered.
FAKE_NVML_EXPORT unsigned long long fakeNvmlCallCount(const char* fn) {
  return fake_nvml::call_count(fn);
}
