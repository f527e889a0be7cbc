// SPDX-License-Identifier: Apache-2.0
// Less common entry points a real driver exports and monitoring tools probe: lookups by UUID or
// PCI bus id, minor number, board part number, display mode, fan by index, power state,
// TemperatureV.
#include <cctype>
#include <string>

#include "exports_util.h"

using namespace fake_nvml;

namespace {

std::string upper(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return s;
}

/// "0000:18:00.0" and "00000000:18:00.0" name the same device.
std::string canonical_bus_id(const std::string& id) {
  std::string s = upper(id);
  const auto colon = s.find(':');
  if (colon != std::string::npos && colon < 8 && s.find(':', colon + 1) != std::string::npos)
    s = std::string(8 - colon, '0') + s;
  return s;
}

int by_pci(const char* fn, const char* pciBusId, nvmlDevice_t* device) {
  Call c = enter(fn, nullptr, false);
  if (c.rc != NVML_SUCCESS) return c.rc;
  FAKE_NEED(pciBusId);
  FAKE_NEED(device);
  const std::string want = canonical_bus_id(pciBusId);
  for (unsigned i = 0; i < c.sc->devices.size(); ++i)
    if (canonical_bus_id(c.sc->devices[i].bus_id) == want) {
      *device = handle_of(i);
      return NVML_SUCCESS;
    }
  return NVML_ERROR_NOT_FOUND;
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  Call c = enter("nvmlDeviceGetHandleByUUID", nullptr, false);
  if (c.rc != NVML_SUCCESS) return c.rc;
  FAKE_NEED(uuid);
  FAKE_NEED(device);
  for (unsigned i = 0; i < c.sc->devices.size(); ++i) {
    const Device& d = c.sc->devices[i];
    if (d.uuid == uuid) {
      *device = handle_of(i);
      return NVML_SUCCESS;
    }
    for (unsigned m = 0; m < d.mig_devices.size() && m < kMaxMig; ++m)
      if (d.mig_enabled() && d.mig_devices[m].uuid == uuid) {
        *device = handle_of(i, static_cast<int>(m));
        return NVML_SUCCESS;
      }
  }
  return NVML_ERROR_NOT_FOUND;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char* pciBusId, nvmlDevice_t* device) {
  return by_pci("nvmlDeviceGetHandleByPciBusId", pciBusId, device);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId, nvmlDevice_t* device) {
  return by_pci("nvmlDeviceGetHandleByPciBusId_v2", pciBusId, device);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minorNumber) {
  FAKE_ENTER(device);
  FAKE_NEED(minorNumber);
  if (on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;
  *minorNumber = c.gpu;  // /dev/nvidia<minor>
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetBoardPartNumber(nvmlDevice_t device, char* partNumber,
                                                           unsigned int length) {
  FAKE_ENTER(device);
  if (on_mig_handle(c) || c.dev->board_part_number.empty()) return NVML_ERROR_NOT_SUPPORTED;
  return copy_string(c.dev->board_part_number, partNumber, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetDisplayMode(nvmlDevice_t device, unsigned int* display) {
  FAKE_ENTER(device);
  FAKE_NEED(display);
  if (!c.dev->display_mode) return NVML_ERROR_NOT_SUPPORTED;
  *display = *c.dev->display_mode;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetFanSpeed_v2(nvmlDevice_t device, unsigned int fan,
                                                       unsigned int* speed) {
  FAKE_ENTER(device);
  FAKE_NEED(speed);
  if (on_mig_handle(c) || c.dev->num_fans == 0) return NVML_ERROR_NOT_SUPPORTED;
  if (fan >= c.dev->num_fans) return NVML_ERROR_INVALID_ARGUMENT;
  return put_metric(c, "fan_speed", speed);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerState(nvmlDevice_t device, unsigned int* pState) {
  FAKE_ENTER(device);
  if (on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;
  return put_metric(c, "pstate", pState);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t device,
                                                        nvmlTemperature_v1_t* temperature) {
  FAKE_ENTER(device);
  FAKE_NEED(temperature);
  if (temperature->version != TRAINMON_NVML_STRUCT_VERSION(nvmlTemperature_v1_t, 1))
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (temperature->sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  if (on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;
  unsigned v = 0;
  const int rc = put_metric(c, "temperature_gpu", &v);
  if (rc == NVML_SUCCESS) temperature->temperature = static_cast<int>(v);
  return rc;
}
