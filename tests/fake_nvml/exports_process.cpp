// SPDX-License-Identifier: Apache-2.0
// Running-process lists (two-call protocol, v1 / v2 / 535 layouts) and the process detail list.
#include <cstring>
#include <string_view>

#include "exports_util.h"

using namespace fake_nvml;

namespace {

enum class Kind { kCompute, kGraphics, kMps };
enum class Layout { kV1, kV2, k535 };

struct Row {
  unsigned pid;
  unsigned long long used;
  unsigned gi, ci;
};

constexpr unsigned kGrowthPidBase = 4100000;
constexpr unsigned long long kGrowthBytes = 256ULL << 20;

/// The processes visible through this handle at the call time; `grow` applies process_list_growth.
std::vector<Row> rows_of(const Call& c, Kind kind, bool grow) {
  std::vector<Row> out;
  for (const auto& p : c.sc->processes) {
    if (p.gpu != c.gpu || !p.alive(c.t)) continue;
    const bool listed = kind == Kind::kCompute ? p.compute : kind == Kind::kGraphics ? p.graphics : p.mps;
    if (!listed) continue;
    if (c.mig != nullptr && (p.gi_id != c.mig->gi_id || p.ci_id != c.mig->ci_id)) continue;
    // `null` memory: NVML_VALUE_NOT_AVAILABLE, as the driver answers under WDDM.
    out.push_back(Row{p.pid, driver_value<unsigned long long>(p.used_memory.at(c.t)), p.gi_id, p.ci_id});
  }
  if (kind != Kind::kCompute || c.mig != nullptr) return out;
  auto [lock, rt] = runtime_of(c.gpu);
  if (grow && rt->growth_done < c.dev->process_growth_times) ++rt->growth_done;
  const unsigned extra = rt->growth_done * c.dev->process_growth_extra;
  for (unsigned i = 0; i < extra; ++i)
    out.push_back(Row{kGrowthPidBase + i, kGrowthBytes, 0xFFFFFFFFu, 0xFFFFFFFFu});
  return out;
}

int list(const Call& c, Kind kind, Layout layout, unsigned int* infoCount, void* infos) {
  FAKE_NEED(infoCount);
  if (*infoCount == 0) {  // count query: infos may be NULL
    const auto rows = rows_of(c, kind, false);
    *infoCount = static_cast<unsigned>(rows.size());
    return rows.empty() ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
  }
  const auto rows = rows_of(c, kind, true);
  if (kind == Kind::kCompute && c.mig == nullptr && c.dev->process_list_never_settles) {
    // Processes come and go faster than the caller can ask: the list has always just outgrown the
    // buffer (a count larger than the one given, and larger than the last).
    *infoCount = *infoCount * 2 + static_cast<unsigned>(rows.size()) + 1;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (*infoCount < rows.size()) {
    *infoCount = static_cast<unsigned>(rows.size());
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  FAKE_NEED(infos);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    switch (layout) {
      case Layout::kV1:
        static_cast<nvmlProcessInfo_v1_t*>(infos)[i] = nvmlProcessInfo_v1_t{r.pid, r.used};
        break;
      case Layout::kV2:
        static_cast<nvmlProcessInfo_v2_t*>(infos)[i] = nvmlProcessInfo_v2_t{r.pid, r.used, r.gi, r.ci};
        break;
      case Layout::k535:
        static_cast<nvmlProcessInfo_535_t*>(infos)[i] = nvmlProcessInfo_535_t{r.pid, r.used, r.gi, r.ci, 0};
        break;
    }
  }
  *infoCount = static_cast<unsigned>(rows.size());
  return NVML_SUCCESS;
}

/// The _v3 functions of the broken 535.43–535.86 drivers wrote 32-byte entries (NVML-NOTES §6.6).
Layout v3_layout() {
  return std::string_view(variant()) == "r535_43" ? Layout::k535 : Layout::kV2;
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
                                                                   unsigned int* infoCount,
                                                                   nvmlProcessInfo_v1_t* infos) {
  FAKE_ENTER(device);
  return list(c, Kind::kCompute, Layout::kV1, infoCount, infos);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
                                                                      unsigned int* infoCount,
                                                                      nvmlProcessInfo_v2_t* infos) {
  FAKE_ENTER(device);
  return list(c, Kind::kCompute, Layout::kV2, infoCount, infos);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                      unsigned int* infoCount,
                                                                      nvmlProcessInfo_v2_t* infos) {
  FAKE_ENTER(device);
  return list(c, Kind::kCompute, v3_layout(), infoCount, infos);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device,
                                                                    unsigned int* infoCount,
                                                                    nvmlProcessInfo_v1_t* infos) {
  FAKE_ENTER(device);
  return list(c, Kind::kGraphics, Layout::kV1, infoCount, infos);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device,
                                                                       unsigned int* infoCount,
                                                                       nvmlProcessInfo_v2_t* infos) {
  FAKE_ENTER(device);
  return list(c, Kind::kGraphics, Layout::kV2, infoCount, infos);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device,
                                                                       unsigned int* infoCount,
                                                                       nvmlProcessInfo_v2_t* infos) {
  FAKE_ENTER(device);
  return list(c, Kind::kGraphics, v3_layout(), infoCount, infos);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses(nvmlDevice_t device,
                                                                      unsigned int* infoCount,
                                                                      nvmlProcessInfo_v1_t* infos) {
  FAKE_ENTER(device);
  return list(c, Kind::kMps, Layout::kV1, infoCount, infos);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v2(nvmlDevice_t device,
                                                                         unsigned int* infoCount,
                                                                         nvmlProcessInfo_v2_t* infos) {
  FAKE_ENTER(device);
  return list(c, Kind::kMps, Layout::kV2, infoCount, infos);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                         unsigned int* infoCount,
                                                                         nvmlProcessInfo_v2_t* infos) {
  FAKE_ENTER(device);
  return list(c, Kind::kMps, v3_layout(), infoCount, infos);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t device,
                                                                    nvmlProcessDetailList_v1_t* plist) {
  FAKE_ENTER(device);
  FAKE_NEED(plist);
  if (plist->version != TRAINMON_NVML_STRUCT_VERSION(nvmlProcessDetailList_v1_t, 1))
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (plist->mode > 2) return NVML_ERROR_INVALID_ARGUMENT;
  const Kind kind = plist->mode == 0 ? Kind::kCompute : plist->mode == 1 ? Kind::kGraphics : Kind::kMps;
  unsigned count = plist->procArray == nullptr ? 0 : plist->numProcArrayEntries;
  const int rc = list(c, kind, Layout::k535, &count, plist->procArray);
  plist->numProcArrayEntries = count;
  return rc;
}
