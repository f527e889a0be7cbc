// SPDX-License-Identifier: Apache-2.0
// One full DeviceBackend::sample() of 8 fake GPUs with 64 processes (tests/scenarios/
// bench-8gpu-64proc.json, time frozen), against the fake driver's own cost: the same NVML entry
// points called directly through dlsym in the same order on one thread. The difference is what
// trainmon's backend adds per tick (target: under 200 µs).
//
// CPU time is process CPU time (all threads: the backend samples on one worker per GPU).
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <time.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "device/nvml/nvml_api.h"
#include "trainmon/device/backend.h"

namespace {

const char* kScenario = TRAINMON_SCENARIOS_DIR "/bench-8gpu-64proc.json";

void set_env() {
  setenv("TRAINMON_FAKE_NVML_SCENARIO", kScenario, 1);
  setenv("TRAINMON_FAKE_NVML_TIME_S", "30", 1);
}

trainmon::BackendOptions bench_options(bool pcie = true) {
  trainmon::BackendOptions o;
  o.collect_pcie_throughput = pcie;
  o.library_path = TRAINMON_FAKE_NVML_PATH;
  o.watch_events = false;  // a separate thread, not part of one tick
  return o;
}

/// The fake's entry points, bound directly (the same names the backend binds on a current driver).
struct Direct {
  void* handle = nullptr;
  template <class F>
  F get(const char* name) {
    return reinterpret_cast<F>(dlsym(handle, name));
  }
  Direct() : handle(dlopen(TRAINMON_FAKE_NVML_PATH, RTLD_NOW | RTLD_LOCAL)) {}
  ~Direct() {
    if (handle) dlclose(handle);
  }
};

struct DirectApi {
  Direct lib;
  decltype(&nvmlInit_v2) init = lib.get<decltype(&nvmlInit_v2)>("nvmlInit_v2");
  decltype(&nvmlShutdown) shutdown = lib.get<decltype(&nvmlShutdown)>("nvmlShutdown");
  decltype(&nvmlDeviceGetCount_v2) count = lib.get<decltype(&nvmlDeviceGetCount_v2)>("nvmlDeviceGetCount_v2");
  decltype(&nvmlDeviceGetHandleByIndex_v2) handle_by_index =
      lib.get<decltype(&nvmlDeviceGetHandleByIndex_v2)>("nvmlDeviceGetHandleByIndex_v2");
  decltype(&nvmlDeviceGetMemoryInfo_v2) mem =
      lib.get<decltype(&nvmlDeviceGetMemoryInfo_v2)>("nvmlDeviceGetMemoryInfo_v2");
  decltype(&nvmlDeviceGetBAR1MemoryInfo) bar1 =
      lib.get<decltype(&nvmlDeviceGetBAR1MemoryInfo)>("nvmlDeviceGetBAR1MemoryInfo");
  decltype(&nvmlDeviceGetUtilizationRates) util =
      lib.get<decltype(&nvmlDeviceGetUtilizationRates)>("nvmlDeviceGetUtilizationRates");
  decltype(&nvmlDeviceGetEncoderUtilization) enc =
      lib.get<decltype(&nvmlDeviceGetEncoderUtilization)>("nvmlDeviceGetEncoderUtilization");
  decltype(&nvmlDeviceGetDecoderUtilization) dec =
      lib.get<decltype(&nvmlDeviceGetDecoderUtilization)>("nvmlDeviceGetDecoderUtilization");
  decltype(&nvmlDeviceGetJpgUtilization) jpg =
      lib.get<decltype(&nvmlDeviceGetJpgUtilization)>("nvmlDeviceGetJpgUtilization");
  decltype(&nvmlDeviceGetOfaUtilization) ofa =
      lib.get<decltype(&nvmlDeviceGetOfaUtilization)>("nvmlDeviceGetOfaUtilization");
  decltype(&nvmlDeviceGetSamples) samples = lib.get<decltype(&nvmlDeviceGetSamples)>("nvmlDeviceGetSamples");
  decltype(&nvmlDeviceGetTemperature) temp =
      lib.get<decltype(&nvmlDeviceGetTemperature)>("nvmlDeviceGetTemperature");
  decltype(&nvmlDeviceGetPowerUsage) power =
      lib.get<decltype(&nvmlDeviceGetPowerUsage)>("nvmlDeviceGetPowerUsage");
  decltype(&nvmlDeviceGetPowerManagementLimit) limit =
      lib.get<decltype(&nvmlDeviceGetPowerManagementLimit)>("nvmlDeviceGetPowerManagementLimit");
  decltype(&nvmlDeviceGetEnforcedPowerLimit) enforced =
      lib.get<decltype(&nvmlDeviceGetEnforcedPowerLimit)>("nvmlDeviceGetEnforcedPowerLimit");
  decltype(&nvmlDeviceGetTotalEnergyConsumption) energy =
      lib.get<decltype(&nvmlDeviceGetTotalEnergyConsumption)>("nvmlDeviceGetTotalEnergyConsumption");
  decltype(&nvmlDeviceGetFanSpeed) fan = lib.get<decltype(&nvmlDeviceGetFanSpeed)>("nvmlDeviceGetFanSpeed");
  decltype(&nvmlDeviceGetPerformanceState) pstate =
      lib.get<decltype(&nvmlDeviceGetPerformanceState)>("nvmlDeviceGetPerformanceState");
  decltype(&nvmlDeviceGetClockInfo) clock =
      lib.get<decltype(&nvmlDeviceGetClockInfo)>("nvmlDeviceGetClockInfo");
  decltype(&nvmlDeviceGetCurrentClocksEventReasons) reasons =
      lib.get<decltype(&nvmlDeviceGetCurrentClocksEventReasons)>("nvmlDeviceGetCurrentClocksEventReasons");
  decltype(&nvmlDeviceGetFieldValues) fields =
      lib.get<decltype(&nvmlDeviceGetFieldValues)>("nvmlDeviceGetFieldValues");
  decltype(&nvmlDeviceGetEccMode) ecc_mode = lib.get<decltype(&nvmlDeviceGetEccMode)>("nvmlDeviceGetEccMode");
  decltype(&nvmlDeviceGetTotalEccErrors) ecc =
      lib.get<decltype(&nvmlDeviceGetTotalEccErrors)>("nvmlDeviceGetTotalEccErrors");
  decltype(&nvmlDeviceGetRetiredPages) retired =
      lib.get<decltype(&nvmlDeviceGetRetiredPages)>("nvmlDeviceGetRetiredPages");
  decltype(&nvmlDeviceGetRetiredPagesPendingStatus) retired_pending =
      lib.get<decltype(&nvmlDeviceGetRetiredPagesPendingStatus)>("nvmlDeviceGetRetiredPagesPendingStatus");
  decltype(&nvmlDeviceGetRemappedRows) remapped =
      lib.get<decltype(&nvmlDeviceGetRemappedRows)>("nvmlDeviceGetRemappedRows");
  decltype(&nvmlDeviceGetCurrPcieLinkGeneration) gen =
      lib.get<decltype(&nvmlDeviceGetCurrPcieLinkGeneration)>("nvmlDeviceGetCurrPcieLinkGeneration");
  decltype(&nvmlDeviceGetCurrPcieLinkWidth) width =
      lib.get<decltype(&nvmlDeviceGetCurrPcieLinkWidth)>("nvmlDeviceGetCurrPcieLinkWidth");
  decltype(&nvmlDeviceGetPcieThroughput) pcie =
      lib.get<decltype(&nvmlDeviceGetPcieThroughput)>("nvmlDeviceGetPcieThroughput");
  decltype(&nvmlDeviceGetPcieReplayCounter) replay =
      lib.get<decltype(&nvmlDeviceGetPcieReplayCounter)>("nvmlDeviceGetPcieReplayCounter");
  decltype(&nvmlDeviceGetPersistenceMode) persistence =
      lib.get<decltype(&nvmlDeviceGetPersistenceMode)>("nvmlDeviceGetPersistenceMode");
  decltype(&nvmlDeviceGetDisplayActive) display =
      lib.get<decltype(&nvmlDeviceGetDisplayActive)>("nvmlDeviceGetDisplayActive");
  decltype(&nvmlDeviceGetComputeMode) compute_mode =
      lib.get<decltype(&nvmlDeviceGetComputeMode)>("nvmlDeviceGetComputeMode");
  decltype(&nvmlDeviceGetMigMode) mig = lib.get<decltype(&nvmlDeviceGetMigMode)>("nvmlDeviceGetMigMode");
  decltype(&nvmlGpmSampleAlloc) gpm_alloc = lib.get<decltype(&nvmlGpmSampleAlloc)>("nvmlGpmSampleAlloc");
  decltype(&nvmlGpmSampleFree) gpm_free = lib.get<decltype(&nvmlGpmSampleFree)>("nvmlGpmSampleFree");
  decltype(&nvmlGpmSampleGet) gpm_get = lib.get<decltype(&nvmlGpmSampleGet)>("nvmlGpmSampleGet");
  decltype(&nvmlGpmMetricsGet) gpm_metrics = lib.get<decltype(&nvmlGpmMetricsGet)>("nvmlGpmMetricsGet");
  decltype(&nvmlDeviceGetComputeRunningProcesses_v3) compute =
      lib.get<decltype(&nvmlDeviceGetComputeRunningProcesses_v3)>("nvmlDeviceGetComputeRunningProcesses_v3");
  decltype(&nvmlDeviceGetGraphicsRunningProcesses_v3) graphics =
      lib.get<decltype(&nvmlDeviceGetGraphicsRunningProcesses_v3)>(
          "nvmlDeviceGetGraphicsRunningProcesses_v3");
  decltype(&nvmlDeviceGetProcessUtilization) proc_util =
      lib.get<decltype(&nvmlDeviceGetProcessUtilization)>("nvmlDeviceGetProcessUtilization");
  decltype(&nvmlSystemGetProcessName) proc_name =
      lib.get<decltype(&nvmlSystemGetProcessName)>("nvmlSystemGetProcessName");
};

/// Per-device state of the direct loop (previous GPM sample, last-seen timestamps).
struct DirectDevice {
  nvmlDevice_t h = nullptr;
  nvmlGpmSample_t gpm[2] = {nullptr, nullptr};
  unsigned long long last_util = 0, last_power = 0, last_proc = 0;
};

/// The NVML calls of one backend tick for one device, without any of the backend's work.
void direct_tick(DirectApi& a, DirectDevice& d, bool pcie) {
  nvmlDevice_t h = d.h;
  unsigned u = 0, v = 0, w = 0, x = 0;
  unsigned long long ull = 0;
  nvmlMemory_v2_t m{};
  m.version = TRAINMON_NVML_STRUCT_VERSION(nvmlMemory_v2_t, 2);
  a.mem(h, &m);
  nvmlBAR1Memory_t b{};
  a.bar1(h, &b);
  nvmlUtilization_t ut{};
  a.util(h, &ut);
  a.enc(h, &u, &v);
  a.dec(h, &u, &v);
  a.jpg(h, &u, &v);
  a.ofa(h, &u, &v);
  std::array<nvmlSample_t, 128> smp{};
  for (auto [type, last] : {std::pair{1u, &d.last_util}, std::pair{0u, &d.last_power}}) {
    unsigned vt = 0, n = 0;
    a.samples(h, type, *last, &vt, &n, nullptr);
    n = static_cast<unsigned>(smp.size());
    if (a.samples(h, type, *last, &vt, &n, smp.data()) == NVML_SUCCESS && n > 0) *last = smp[n - 1].timeStamp;
  }
  a.temp(h, NVML_TEMPERATURE_GPU, &u);
  a.power(h, &u);
  a.limit(h, &u);
  a.enforced(h, &u);
  a.energy(h, &ull);
  a.fan(h, &u);
  a.pstate(h, &u);
  for (unsigned c = 0; c < 4; ++c) a.clock(h, c, &u);
  a.reasons(h, &ull);
  std::array<nvmlFieldValue_t, 7> fv{};
  const unsigned ids[] = {74, 75, 269, 270, 271, 82, 186};
  for (int i = 0; i < 7; ++i) fv[i].fieldId = ids[i];
  a.fields(h, 7, fv.data());
  a.ecc_mode(h, &u, &v);
  for (unsigned t = 0; t < 2; ++t)
    for (unsigned c = 0; c < 2; ++c) a.ecc(h, t, c, &ull);
  for (unsigned cause = 0; cause < 2; ++cause) {
    unsigned n = 0;
    a.retired(h, cause, &n, nullptr);
  }
  a.retired_pending(h, &u);
  a.remapped(h, &u, &v, &w, &x);
  a.gen(h, &u);
  a.width(h, &u);
  if (pcie) {
    a.pcie(h, NVML_PCIE_UTIL_RX_BYTES, &u);
    a.pcie(h, NVML_PCIE_UTIL_TX_BYTES, &u);
  }
  a.replay(h, &u);
  a.persistence(h, &u);
  a.display(h, &u);
  a.compute_mode(h, &u);
  a.mig(h, &u, &v);
  a.gpm_get(h, d.gpm[1]);
  static nvmlGpmMetricsGet_t mg{};
  mg.version = NVML_GPM_METRICS_GET_VERSION;
  mg.numMetrics = 8;
  mg.sample1 = d.gpm[0];
  mg.sample2 = d.gpm[1];
  const unsigned metrics[] = {2, 3, 5, 10, 20, 21, 60, 61};
  for (int i = 0; i < 8; ++i) mg.metrics[i].metricId = metrics[i];
  a.gpm_metrics(&mg);
  std::swap(d.gpm[0], d.gpm[1]);
  // processes: two-call for both lists, utilisation, names
  std::array<nvmlProcessInfo_535_t, 64> procs{};
  unsigned n = 0;
  a.compute(h, &n, nullptr);
  unsigned cap = 2 * n + 5;
  a.compute(h, &cap, reinterpret_cast<nvmlProcessInfo_v2_t*>(procs.data()));
  unsigned gn = 0;
  a.graphics(h, &gn, nullptr);
  std::array<nvmlProcessUtilizationSample_t, 64> pu{};
  unsigned pn = 0;
  a.proc_util(h, nullptr, &pn, d.last_proc);
  pn = static_cast<unsigned>(pu.size());
  if (a.proc_util(h, pu.data(), &pn, d.last_proc) == NVML_SUCCESS && pn > 0) d.last_proc = pu[0].timeStamp;
  const auto* p2 = reinterpret_cast<const nvmlProcessInfo_v2_t*>(procs.data());
  for (unsigned i = 0; i < cap && i < 24; ++i) {
    std::array<char, 256> name{};
    a.proc_name(p2[i].pid, name.data(), static_cast<unsigned>(name.size()));
  }
}

struct DirectSetup {
  DirectApi api;
  std::vector<DirectDevice> devices;
  DirectSetup() {
    set_env();
    api.init();
    unsigned count = 0;
    api.count(&count);
    devices.resize(count);
    for (unsigned i = 0; i < count; ++i) {
      api.handle_by_index(i, &devices[i].h);
      api.gpm_alloc(&devices[i].gpm[0]);
      api.gpm_alloc(&devices[i].gpm[1]);
      api.gpm_get(devices[i].h, devices[i].gpm[0]);
    }
  }
  ~DirectSetup() {
    for (auto& d : devices) {
      api.gpm_free(d.gpm[0]);
      api.gpm_free(d.gpm[1]);
    }
    api.shutdown();
  }
  void tick(bool pcie = true) {
    for (auto& d : devices) direct_tick(api, d, pcie);
  }
};

double process_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

void BM_BackendSample8Gpu64Proc(benchmark::State& state) {
  set_env();
  auto backend = trainmon::open_nvml_backend(bench_options());
  if (backend->device_count() != 8) {
    state.SkipWithError(("fake not loaded: " + backend->driver_info().error).c_str());
    return;
  }
  std::vector<trainmon::GpuSample> gpus;
  std::vector<trainmon::GpuProcessSample> procs;
  backend->sample(gpus, procs);  // static info is read on the first tick
  for (auto _ : state) {
    gpus.clear();
    procs.clear();
    backend->sample(gpus, procs);
    benchmark::DoNotOptimize(gpus.data());
  }
  state.counters["gpus"] = static_cast<double>(gpus.size());
  state.counters["processes"] = static_cast<double>(procs.size());
}
BENCHMARK(BM_BackendSample8Gpu64Proc)->MeasureProcessCPUTime()->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_FakeDirect8Gpu64Proc(benchmark::State& state) {
  DirectSetup d;
  if (d.devices.size() != 8) {
    state.SkipWithError("fake not loaded");
    return;
  }
  d.tick();
  for (auto _ : state) d.tick();
}
BENCHMARK(BM_FakeDirect8Gpu64Proc)->MeasureProcessCPUTime()->UseRealTime()->Unit(benchmark::kMicrosecond);

/// The summary line: process CPU time per tick of both, and the difference. `pcie` false leaves
/// out nvmlDeviceGetPcieThroughput in both (the fake sleeps 20 ms per call, as the driver blocks).
void print_summary(bool pcie, int ticks) {
  set_env();
  double backend_us = 0;
  {
    auto backend = trainmon::open_nvml_backend(bench_options(pcie));
    std::vector<trainmon::GpuSample> gpus;
    std::vector<trainmon::GpuProcessSample> procs;
    backend->sample(gpus, procs);
    const double t0 = process_cpu_us();
    for (int i = 0; i < ticks; ++i) {
      gpus.clear();
      procs.clear();
      backend->sample(gpus, procs);
    }
    backend_us = (process_cpu_us() - t0) / ticks;
    std::printf("backend: %zu GPUs, %zu processes per tick\n", gpus.size(), procs.size());
  }
  double fake_us = 0;
  {
    DirectSetup d;
    d.tick(pcie);
    const double t0 = process_cpu_us();
    for (int i = 0; i < ticks; ++i) d.tick(pcie);
    fake_us = (process_cpu_us() - t0) / ticks;
  }
  std::printf(
      "per tick (process CPU, PCIe throughput %s): backend sample() %.1f us, fake's own cost %.1f us, "
      "beyond the fake %.1f us (target < 200 us)\n",
      pcie ? "on" : "off", backend_us, fake_us, backend_us - fake_us);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  print_summary(false, 1000);
  print_summary(true, 50);  // the direct loop blocks 8 x 2 x 20 ms per tick here
  return 0;
}
