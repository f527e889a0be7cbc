// SPDX-License-Identifier: Apache-2.0
// Entry points behind nvidia-smi's rarer --query-gpu fields: accounting, driver model, inforom,
// margin (T.Limit) temperature, encoder statistics, NVLink fabric and the supported clock table.
// Each answers NOT_SUPPORTED when the scenario does not give its key (docs/fake-nvml.md).
#include "exports_util.h"

using namespace fake_nvml;

namespace {

int driver_model(const Call& c, unsigned int* current, unsigned int* pending) {
  FAKE_NEED(current);
  FAKE_NEED(pending);
  if (on_mig_handle(c) || !c.dev->driver_model_current) return NVML_ERROR_NOT_SUPPORTED;
  *current = *c.dev->driver_model_current;
  *pending = c.dev->driver_model_pending.value_or(*current);
  return NVML_SUCCESS;
}

/// The two-call list protocol: count query with a null buffer, INSUFFICIENT_SIZE when too small.
int put_list(const std::vector<unsigned>& v, unsigned int* count, unsigned int* out) {
  FAKE_NEED(count);
  if (out == nullptr || *count < v.size()) {
    *count = static_cast<unsigned>(v.size());
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  std::copy(v.begin(), v.end(), out);
  *count = static_cast<unsigned>(v.size());
  return NVML_SUCCESS;
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetAccountingMode(nvmlDevice_t device, unsigned int* mode) {
  FAKE_ENTER(device);
  FAKE_NEED(mode);
  if (on_mig_handle(c) || !c.dev->accounting_mode) return NVML_ERROR_NOT_SUPPORTED;
  *mode = *c.dev->accounting_mode;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetAccountingBufferSize(nvmlDevice_t device,
                                                                unsigned int* bufferSize) {
  FAKE_ENTER(device);
  FAKE_NEED(bufferSize);
  if (on_mig_handle(c) || !c.dev->accounting_buffer_size) return NVML_ERROR_NOT_SUPPORTED;
  *bufferSize = *c.dev->accounting_buffer_size;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetDriverModel(nvmlDevice_t device, unsigned int* current,
                                                       unsigned int* pending) {
  FAKE_ENTER(device);
  return driver_model(c, current, pending);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetDriverModel_v2(nvmlDevice_t device, unsigned int* current,
                                                          unsigned int* pending) {
  FAKE_ENTER(device);
  return driver_model(c, current, pending);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetInforomImageVersion(nvmlDevice_t device, char* version,
                                                               unsigned int length) {
  FAKE_ENTER(device);
  if (on_mig_handle(c) || !c.dev->inforom_image) return NVML_ERROR_NOT_SUPPORTED;
  return copy_string(*c.dev->inforom_image, version, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetInforomVersion(nvmlDevice_t device, unsigned int object,
                                                          char* version, unsigned int length) {
  FAKE_ENTER(device);
  if (on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;
  const std::optional<std::string>* v = object == NVML_INFOROM_OEM     ? &c.dev->inforom_oem
                                        : object == NVML_INFOROM_ECC   ? &c.dev->inforom_ecc
                                        : object == NVML_INFOROM_POWER ? &c.dev->inforom_power
                                                                       : nullptr;
  if (v == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!*v) return NVML_ERROR_NOT_SUPPORTED;
  return copy_string(**v, version, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceValidateInforom(nvmlDevice_t device) {
  FAKE_ENTER(device);
  if (on_mig_handle(c) || !c.dev->inforom_valid) return NVML_ERROR_NOT_SUPPORTED;
  return *c.dev->inforom_valid ? NVML_SUCCESS : NVML_ERROR_CORRUPTED_INFOROM;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMarginTemperature(nvmlDevice_t device,
                                                             nvmlMarginTemperature_v1_t* marginTempInfo) {
  FAKE_ENTER(device);
  FAKE_NEED(marginTempInfo);
  if (marginTempInfo->version != TRAINMON_NVML_STRUCT_VERSION(nvmlMarginTemperature_v1_t, 1))
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  const auto v = c.metric("temperature_tlimit");
  if (on_mig_handle(c) || !v) return NVML_ERROR_NOT_SUPPORTED;
  // Signed: the margin is negative once the GPU is past its slowdown point.
  marginTempInfo->marginTemperature = std::isnan(*v) ? -1 : static_cast<int>(std::lround(*v));
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetEncoderStats(nvmlDevice_t device, unsigned int* sessionCount,
                                                        unsigned int* averageFps,
                                                        unsigned int* averageLatency) {
  FAKE_ENTER(device);
  FAKE_NEED(sessionCount);
  FAKE_NEED(averageFps);
  FAKE_NEED(averageLatency);
  if (on_mig_handle(c) || !c.metric("encoder_sessions")) return NVML_ERROR_NOT_SUPPORTED;
  put_metric(c, "encoder_sessions", sessionCount);
  put_metric_or(c, "encoder_fps", averageFps, 0);
  put_metric_or(c, "encoder_latency", averageLatency, 0);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t device,
                                                         nvmlGpuFabricInfo_t* gpuFabricInfo) {
  FAKE_ENTER(device);
  FAKE_NEED(gpuFabricInfo);
  if (on_mig_handle(c) || !c.dev->fabric) return NVML_ERROR_NOT_SUPPORTED;
  const Fabric& f = *c.dev->fabric;
  std::copy(f.cluster_uuid.begin(), f.cluster_uuid.end(), gpuFabricInfo->clusterUuid);
  gpuFabricInfo->status = f.status;
  gpuFabricInfo->cliqueId = f.clique_id;
  gpuFabricInfo->state = static_cast<nvmlGpuFabricState_t>(f.state);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device,
                                                          nvmlGpuFabricInfo_v2_t* gpuFabricInfo) {
  FAKE_ENTER(device);
  FAKE_NEED(gpuFabricInfo);
  if (gpuFabricInfo->version != TRAINMON_NVML_STRUCT_VERSION(nvmlGpuFabricInfo_v2_t, 2))
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (on_mig_handle(c) || !c.dev->fabric) return NVML_ERROR_NOT_SUPPORTED;
  const Fabric& f = *c.dev->fabric;
  std::copy(f.cluster_uuid.begin(), f.cluster_uuid.end(), gpuFabricInfo->clusterUuid);
  gpuFabricInfo->status = f.status;
  gpuFabricInfo->cliqueId = f.clique_id;
  gpuFabricInfo->state = static_cast<nvmlGpuFabricState_t>(f.state);
  gpuFabricInfo->healthMask = 0;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetSupportedMemoryClocks(nvmlDevice_t device, unsigned int* count,
                                                                 unsigned int* clocksMHz) {
  FAKE_ENTER(device);
  if (on_mig_handle(c) || c.dev->supported_clocks.empty()) return NVML_ERROR_NOT_SUPPORTED;
  std::vector<unsigned> mem;
  for (const auto& p : c.dev->supported_clocks) mem.push_back(p.memory);
  return put_list(mem, count, clocksMHz);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetSupportedGraphicsClocks(nvmlDevice_t device,
                                                                   unsigned int memoryClockMHz,
                                                                   unsigned int* count,
                                                                   unsigned int* clocksMHz) {
  FAKE_ENTER(device);
  if (on_mig_handle(c) || c.dev->supported_clocks.empty()) return NVML_ERROR_NOT_SUPPORTED;
  for (const auto& p : c.dev->supported_clocks)
    if (p.memory == memoryClockMHz) return put_list(p.graphics, count, clocksMHz);
  return NVML_ERROR_INVALID_ARGUMENT;  // not one of the supported memory clocks
}
