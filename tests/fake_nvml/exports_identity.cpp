// SPDX-License-Identifier: Apache-2.0
// Device enumeration and static identity: count, handles, name, UUID, serial, PCI, capabilities.
#include <cstdio>

#include "exports_util.h"

using namespace fake_nvml;

namespace {

int get_count(const char* fn, unsigned int* deviceCount) {
  Call c = enter(fn, nullptr, false);
  if (c.rc != NVML_SUCCESS) return c.rc;
  FAKE_NEED(deviceCount);
  *deviceCount = static_cast<unsigned>(c.sc->devices.size());
  return NVML_SUCCESS;
}

int get_handle(const char* fn, unsigned int index, nvmlDevice_t* device) {
  Call c = enter(fn, nullptr, false);
  if (c.rc != NVML_SUCCESS) return c.rc;
  FAKE_NEED(device);
  if (index >= c.sc->devices.size()) return NVML_ERROR_INVALID_ARGUMENT;
  // Injection rules naming a gpu apply to handle lookups of that gpu too.
  Call dc = enter(fn, handle_of(index), true);
  if (dc.rc != NVML_SUCCESS && dc.rc != NVML_ERROR_NOT_SUPPORTED) return dc.rc;
  *device = handle_of(index);
  return NVML_SUCCESS;
}

int pci_info(const Call& c, nvmlPciInfo_t* pci) {
  FAKE_NEED(pci);
  if (on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;
  const Device& d = *c.dev;
  *pci = nvmlPciInfo_t{};
  std::snprintf(pci->busId, sizeof pci->busId, "%s", d.bus_id.c_str());
  // Legacy id: "DDDD:BB:DD.F" (4-digit domain).
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.0", d.pci_domain & 0xFFFFu,
                d.pci_bus, d.pci_device);
  pci->domain = d.pci_domain;
  pci->bus = d.pci_bus;
  pci->device = d.pci_device;
  pci->pciDeviceId = d.pci_device_id;
  pci->pciSubSystemId = d.pci_subsystem_id;
  return NVML_SUCCESS;
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int* deviceCount) {
  return get_count("nvmlDeviceGetCount", deviceCount);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) {
  return get_count("nvmlDeviceGetCount_v2", deviceCount);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return get_handle("nvmlDeviceGetHandleByIndex", index, device);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  return get_handle("nvmlDeviceGetHandleByIndex_v2", index, device);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  FAKE_ENTER(device);
  FAKE_NEED(index);
  if (on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;
  *index = c.gpu;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  FAKE_ENTER(device);
  return copy_string(c.mig ? c.mig->name : c.dev->name, name, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  FAKE_ENTER(device);
  return copy_string(c.mig ? c.mig->uuid : c.dev->uuid, uuid, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char* serial, unsigned int length) {
  FAKE_ENTER(device);
  if (on_mig_handle(c) || c.dev->serial.empty()) return NVML_ERROR_NOT_SUPPORTED;
  return copy_string(c.dev->serial, serial, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t device, char* version,
                                                        unsigned int length) {
  FAKE_ENTER(device);
  if (on_mig_handle(c) || c.dev->vbios.empty()) return NVML_ERROR_NOT_SUPPORTED;
  return copy_string(c.dev->vbios, version, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  FAKE_ENTER(device);
  return pci_info(c, pci);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  FAKE_ENTER(device);
  return pci_info(c, pci);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  FAKE_ENTER(device);
  return pci_info(c, pci);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major,
                                                                 int* minor) {
  FAKE_ENTER(device);
  FAKE_NEED(major);
  FAKE_NEED(minor);
  if (c.dev->cc_major == 0) return NVML_ERROR_NOT_SUPPORTED;
  *major = c.dev->cc_major;
  *minor = c.dev->cc_minor;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, unsigned int* type) {
  FAKE_ENTER(device);
  FAKE_NEED(type);
  *type = c.dev->brand;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, unsigned int* arch) {
  FAKE_ENTER(device);
  FAKE_NEED(arch);
  *arch = c.dev->architecture;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device,
                                                                  unsigned int* currLinkGen) {
  FAKE_ENTER(device);
  if (on_mig_handle(c) || c.dev->pcie_gen_max == 0) return NVML_ERROR_NOT_SUPPORTED;
  return put_metric_or(c, "pcie_gen_current", currLinkGen, c.dev->pcie_gen_current);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device,
                                                             unsigned int* currLinkWidth) {
  FAKE_ENTER(device);
  if (on_mig_handle(c) || c.dev->pcie_width_max == 0) return NVML_ERROR_NOT_SUPPORTED;
  return put_metric_or(c, "pcie_width_current", currLinkWidth, c.dev->pcie_width_current);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device,
                                                                 unsigned int* maxLinkGen) {
  FAKE_ENTER(device);
  FAKE_NEED(maxLinkGen);
  if (on_mig_handle(c) || c.dev->pcie_gen_max == 0) return NVML_ERROR_NOT_SUPPORTED;
  *maxLinkGen = c.dev->pcie_gen_max;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuMaxPcieLinkGeneration(nvmlDevice_t device,
                                                                    unsigned int* maxLinkGenDevice) {
  FAKE_ENTER(device);
  FAKE_NEED(maxLinkGenDevice);
  if (on_mig_handle(c) || c.dev->pcie_gen_gpu_max == 0) return NVML_ERROR_NOT_SUPPORTED;
  *maxLinkGenDevice = c.dev->pcie_gen_gpu_max;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int* maxLinkWidth) {
  FAKE_ENTER(device);
  FAKE_NEED(maxLinkWidth);
  if (on_mig_handle(c) || c.dev->pcie_width_max == 0) return NVML_ERROR_NOT_SUPPORTED;
  *maxLinkWidth = c.dev->pcie_width_max;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, unsigned int* mode) {
  FAKE_ENTER(device);
  FAKE_NEED(mode);
  if (!c.dev->persistence_mode) return NVML_ERROR_NOT_SUPPORTED;
  *mode = *c.dev->persistence_mode;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, unsigned int* mode) {
  FAKE_ENTER(device);
  FAKE_NEED(mode);
  if (!c.dev->compute_mode) return NVML_ERROR_NOT_SUPPORTED;
  *mode = *c.dev->compute_mode;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetDisplayActive(nvmlDevice_t device, unsigned int* isActive) {
  FAKE_ENTER(device);
  FAKE_NEED(isActive);
  if (!c.dev->display_active) return NVML_ERROR_NOT_SUPPORTED;
  *isActive = *c.dev->display_active;
  return NVML_SUCCESS;
}
