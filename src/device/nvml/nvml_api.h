// SPDX-License-Identifier: Apache-2.0
// Our own declarations of the NVML types and entry points trainmon uses, written from NVIDIA's
// public NVML reference (nvml.h as mirrored in NVIDIA/go-nvml and NVIDIA/DCGM; see
// ../shared/NVML-NOTES.md §6). No NVIDIA header is needed to build.
//
// The entry points are *declared* here so that (a) the backend can take `decltype(&fn)` for its
// dlsym table without ever linking against the driver, and (b) the fake driver in tests/fake_nvml
// defines them with exactly these signatures (a mismatch is a compile error there).
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

typedef int nvmlReturn_t;  // enum in nvml.h; values below
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;
typedef struct nvmlGpmSample_st* nvmlGpmSample_t;

// ---- return codes (nvmlReturn_t) ---------------------------------------------------------------
enum : int {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
  NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_DEPRECATED = 26,
  NVML_ERROR_NOT_READY = 27,
  NVML_ERROR_GPU_NOT_FOUND = 28,
  NVML_ERROR_INVALID_STATE = 29,
  NVML_ERROR_RESET_TYPE_NOT_SUPPORTED = 30,
  NVML_ERROR_UNKNOWN = 999,
};

// ---- enums ---------------------------------------------------------------------------------------
enum : unsigned { NVML_TEMPERATURE_GPU = 0 };
enum : unsigned {
  NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0,
  NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1,
  NVML_TEMPERATURE_THRESHOLD_MEM_MAX = 2,
  NVML_TEMPERATURE_THRESHOLD_GPU_MAX = 3,
};
enum : unsigned { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_CLOCK_VIDEO = 3 };
enum : unsigned { NVML_PCIE_UTIL_TX_BYTES = 0, NVML_PCIE_UTIL_RX_BYTES = 1 };
enum : unsigned { NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1 };
enum : unsigned { NVML_VOLATILE_ECC = 0, NVML_AGGREGATE_ECC = 1 };
// nvmlMemoryLocation_t (nvmlDeviceGetMemoryErrorCounter); DRAM = DEVICE_MEMORY on older headers
enum : unsigned { NVML_MEMORY_LOCATION_DRAM = 2, NVML_MEMORY_LOCATION_SRAM = 7 };
enum : unsigned {
  NVML_TOTAL_POWER_SAMPLES = 0,
  NVML_GPU_UTILIZATION_SAMPLES = 1,
  NVML_MEMORY_UTILIZATION_SAMPLES = 2,
};
enum : unsigned {
  NVML_VALUE_TYPE_DOUBLE = 0,
  NVML_VALUE_TYPE_UNSIGNED_INT = 1,
  NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
  NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
  NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
  NVML_VALUE_TYPE_SIGNED_INT = 5,
  NVML_VALUE_TYPE_UNSIGNED_SHORT = 6,
};
enum : unsigned {
  NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
  NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1
};
enum : unsigned { NVML_PSTATE_UNKNOWN = 32 };

// event types (bitmask)
constexpr unsigned long long nvmlEventTypeSingleBitEccError = 0x1ULL;
constexpr unsigned long long nvmlEventTypeDoubleBitEccError = 0x2ULL;
constexpr unsigned long long nvmlEventTypePState = 0x4ULL;
constexpr unsigned long long nvmlEventTypeXidCriticalError = 0x8ULL;
constexpr unsigned long long nvmlEventTypeClock = 0x10ULL;

// field ids (nvmlDeviceGetFieldValues)
enum : unsigned {
  NVML_FI_DEV_ECC_CURRENT = 1,
  NVML_FI_DEV_ECC_PENDING = 2,
  NVML_FI_DEV_PERF_POLICY_POWER = 74,
  NVML_FI_DEV_PERF_POLICY_THERMAL = 75,
  NVML_FI_DEV_PERF_POLICY_SYNC_BOOST = 76,
  NVML_FI_DEV_MEMORY_TEMP = 82,
  NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION = 83,
  NVML_FI_DEV_NVLINK_LINK_COUNT = 91,
  NVML_FI_DEV_PCIE_REPLAY_COUNTER = 94,
  // Cumulative NVLink data (payload) in KiB; scopeId = the link, or UINT_MAX for the sum over all
  // links (nvml.h, "NVLink throughput counters field values").
  NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX = 138,
  NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX = 139,
  NVML_FI_DEV_POWER_AVERAGE = 185,
  NVML_FI_DEV_POWER_INSTANT = 186,
  // Cumulative PCIe bytes since driver load (R545+); nvml.h: "Value can be wrapped"; width not documented.
  NVML_FI_DEV_PCIE_COUNT_TX_BYTES = 197,
  NVML_FI_DEV_PCIE_COUNT_RX_BYTES = 198,
  NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN = 269,
  NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN = 270,
  NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN = 271,
};

// GPM metric ids (nvmlGpmMetricId_t)
enum : unsigned {
  NVML_GPM_METRIC_GRAPHICS_UTIL = 1,
  NVML_GPM_METRIC_SM_UTIL = 2,
  NVML_GPM_METRIC_SM_OCCUPANCY = 3,
  NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5,
  NVML_GPM_METRIC_DRAM_BW_UTIL = 10,
  NVML_GPM_METRIC_PCIE_TX_PER_SEC = 20,
  NVML_GPM_METRIC_PCIE_RX_PER_SEC = 21,
  NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC = 60,
  NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC = 61,
};

// ---- buffer sizes ------------------------------------------------------------------------------
enum : unsigned {
  NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96,
  NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96,
  NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80,
  NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE = 80,
  NVML_DEVICE_SERIAL_BUFFER_SIZE = 30,
  NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE = 32,
  NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32,
  NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16,
};

constexpr unsigned long long NVML_VALUE_NOT_AVAILABLE_ULL = ~0ULL;  // usedGpuMemory under WDDM

#define TRAINMON_NVML_STRUCT_VERSION(type, ver) (unsigned)(sizeof(type) | ((ver) << 24U))

// ---- structs (LP64 layouts; offsets asserted below) ----------------------------------------------
typedef struct {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;  // v1: used includes reserved

typedef struct {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_v2_t;

typedef struct {
  unsigned long long bar1Total, bar1Free, bar1Used;
} nvmlBAR1Memory_t;

typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t;  // = nvmlProcessInfo_t of current headers (used by the _v3 functions)

/// The 32-byte layout that drivers 535.43–535.86 returned from the _v3 functions (NVML-NOTES §6.6).
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
  unsigned long long usedGpuCcProtectedMemory;
} nvmlProcessInfo_535_t;

typedef struct {
  unsigned int pid;
  unsigned long long timeStamp;  // µs since epoch
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

typedef union {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  long long sllVal;
  unsigned short usVal;
} nvmlValue_t;

typedef struct {
  unsigned long long timeStamp;
  nvmlValue_t sampleValue;
} nvmlSample_t;

typedef struct {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;
  long long latencyUsec;
  unsigned int valueType;  // nvmlValueType_t
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
} nvmlFieldValue_t;

typedef struct {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;

typedef struct {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlEventData_t;

typedef struct {
  unsigned long long referenceTime;
  unsigned long long violationTime;
} nvmlViolationTime_t;

typedef struct {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
} nvmlGpmMetric_t;

enum : unsigned { NVML_GPM_METRICS_GET_VERSION = 1, NVML_GPM_METRIC_MAX = 210 };

typedef struct {
  unsigned int version;
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;

typedef struct {
  unsigned int version;
  unsigned int isSupportedDevice;
} nvmlGpmSupport_t;
enum : unsigned { NVML_GPM_SUPPORT_VERSION = 1 };

// ---- entry points ------------------------------------------------------------------------------
nvmlReturn_t nvmlInit(void);
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlInitWithFlags(unsigned int flags);
nvmlReturn_t nvmlShutdown(void);
const char* nvmlErrorString(nvmlReturn_t result);

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length);
nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length);
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* cudaDriverVersion);
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* cudaDriverVersion);
nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char* name, unsigned int length);

nvmlReturn_t nvmlDeviceGetCount(unsigned int* deviceCount);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount);
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device);
nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length);
nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char* serial, unsigned int length);
nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t device, char* version, unsigned int length);
nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t* pci);
nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t* pci);
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci);
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor);
nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, unsigned int* type);
nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, unsigned int* arch);
nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int* currLinkGen);
nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int* currLinkWidth);
nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int* maxLinkGen);
nvmlReturn_t nvmlDeviceGetGpuMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int* maxLinkGenDevice);
nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int* maxLinkWidth);
nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, unsigned int counter, unsigned int* value);
nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned int* value);

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory);
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory);
nvmlReturn_t nvmlDeviceGetBAR1MemoryInfo(nvmlDevice_t device, nvmlBAR1Memory_t* bar1Memory);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization);
nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t device, unsigned int* utilization,
                                             unsigned int* samplingPeriodUs);
nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t device, unsigned int* utilization,
                                             unsigned int* samplingPeriodUs);
nvmlReturn_t nvmlDeviceGetJpgUtilization(nvmlDevice_t device, unsigned int* utilization,
                                         unsigned int* samplingPeriodUs);
nvmlReturn_t nvmlDeviceGetOfaUtilization(nvmlDevice_t device, unsigned int* utilization,
                                         unsigned int* samplingPeriodUs);
nvmlReturn_t nvmlDeviceGetSamples(nvmlDevice_t device, unsigned int type,
                                  unsigned long long lastSeenTimeStamp, unsigned int* sampleValType,
                                  unsigned int* sampleCount, nvmlSample_t* samples);

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, unsigned int sensorType, unsigned int* temp);
nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device, unsigned int thresholdType,
                                               unsigned int* temp);
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power);
nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int* limit);
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* limit);
nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device, unsigned int* defaultLimit);
nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device, unsigned int* minLimit,
                                                          unsigned int* maxLimit);
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long* energy);
nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned int* speed);
nvmlReturn_t nvmlDeviceGetNumFans(nvmlDevice_t device, unsigned int* numFans);
nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t device, unsigned int* pState);

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, unsigned int type, unsigned int* clock);
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, unsigned int type, unsigned int* clock);
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                    unsigned long long* clocksEventReasons);
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                       unsigned long long* clocksThrottleReasons);
nvmlReturn_t nvmlDeviceGetSupportedClocksEventReasons(nvmlDevice_t device,
                                                      unsigned long long* supportedClocksEventReasons);
nvmlReturn_t nvmlDeviceGetSupportedClocksThrottleReasons(nvmlDevice_t device,
                                                         unsigned long long* supportedClocksThrottleReasons);
nvmlReturn_t nvmlDeviceGetViolationStatus(nvmlDevice_t device, unsigned int perfPolicyType,
                                          nvmlViolationTime_t* violTime);
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount, nvmlFieldValue_t* values);

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, unsigned int* current, unsigned int* pending);
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, unsigned int errorType,
                                         unsigned int counterType, unsigned long long* eccCounts);
nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, unsigned int cause, unsigned int* pageCount,
                                       unsigned long long* addresses);
nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, unsigned int* isPending);
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corrRows, unsigned int* uncRows,
                                       unsigned int* isPending, unsigned int* failureOccurred);

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, unsigned int* mode);
nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, unsigned int* mode);
nvmlReturn_t nvmlDeviceGetDisplayActive(nvmlDevice_t device, unsigned int* isActive);
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* currentMode, unsigned int* pendingMode);
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count);
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                 nvmlDevice_t* migDevice);
nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id);
nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id);

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                  nvmlProcessInfo_v1_t* infos);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_v2_t* infos);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_v2_t* infos);
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                   nvmlProcessInfo_v1_t* infos);
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                      nvmlProcessInfo_v2_t* infos);
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                      nvmlProcessInfo_v2_t* infos);
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t* utilization,
                                             unsigned int* processSamplesCount,
                                             unsigned long long lastSeenTimeStamp);

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set);
nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long* eventTypes);
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set);
nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeoutms);
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeoutms);
nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set);

nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t* gpmSupport);
nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* gpmSample);
nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample);
nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample);
nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* metricsGet);

// ---- added for the fake driver (tests/fake_nvml): more entry points a real driver exports -------
/// nvmlTemperature_v1_t (NVML 12.8+, nvmlDeviceGetTemperatureV); version = nvmlTemperature_v1.
typedef struct {
  unsigned int version;
  unsigned int sensorType;  // nvmlTemperatureSensors_t
  int temperature;          // °C
} nvmlTemperature_v1_t;

/// nvmlProcessDetail_v1_t: the 32-byte layout incl. CC-protected memory (NVML 12.2+).
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
  unsigned long long usedGpuCcProtectedMemory;
} nvmlProcessDetail_v1_t;

/// nvmlProcessDetailList_v1_t (nvmlDeviceGetRunningProcessDetailList); version = 0x01000018.
typedef struct {
  unsigned int version;
  unsigned int mode;  // nvmlProcessMode_t: 0 compute, 1 graphics, 2 MPS
  unsigned int numProcArrayEntries;
  nvmlProcessDetail_v1_t* procArray;
} nvmlProcessDetailList_v1_t;

/// nvmlProcessUtilizationInfo_v1_t (NVML 12.4+): adds jpg/ofa to the per-process sample.
typedef struct {
  unsigned long long timeStamp;  // µs since epoch
  unsigned int pid;
  unsigned int smUtil, memUtil, encUtil, decUtil, jpgUtil, ofaUtil;
} nvmlProcessUtilizationInfo_v1_t;

/// nvmlProcessesUtilizationInfo_v1_t (nvmlDeviceGetProcessesUtilizationInfo); version = 0x01000018.
typedef struct {
  unsigned int version;
  unsigned int processSamplesCount;
  unsigned long long lastSeenTimeStamp;
  nvmlProcessUtilizationInfo_v1_t* procUtilArray;
} nvmlProcessesUtilizationInfo_v1_t;

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device);
nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char* pciBusId, nvmlDevice_t* device);
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId, nvmlDevice_t* device);
nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minorNumber);
nvmlReturn_t nvmlDeviceGetBoardPartNumber(nvmlDevice_t device, char* partNumber, unsigned int length);
nvmlReturn_t nvmlDeviceGetDisplayMode(nvmlDevice_t device, unsigned int* display);
nvmlReturn_t nvmlDeviceGetPcieSpeed(nvmlDevice_t device, unsigned int* pcieSpeed);
nvmlReturn_t nvmlDeviceGetFanSpeed_v2(nvmlDevice_t device, unsigned int fan, unsigned int* speed);
nvmlReturn_t nvmlDeviceGetPowerState(nvmlDevice_t device, unsigned int* pState);
nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t device, nvmlTemperature_v1_t* temperature);
nvmlReturn_t nvmlDeviceGetClock(nvmlDevice_t device, unsigned int clockType, unsigned int clockId,
                                unsigned int* clockMHz);
nvmlReturn_t nvmlDeviceGetMemoryErrorCounter(nvmlDevice_t device, unsigned int errorType,
                                             unsigned int counterType, unsigned int locationType,
                                             unsigned long long* count);
nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int* isMigDevice);
nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice, nvmlDevice_t* device);
nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_v1_t* infos);
nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                        nvmlProcessInfo_v2_t* infos);
nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                        nvmlProcessInfo_v2_t* infos);
nvmlReturn_t nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t device, nvmlProcessDetailList_v1_t* plist);
nvmlReturn_t nvmlDeviceGetProcessesUtilizationInfo(nvmlDevice_t device,
                                                   nvmlProcessesUtilizationInfo_v1_t* procesesUtilInfo);
nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpuInstanceId, nvmlGpmSample_t gpmSample);

// ---- nvidia-smi --query-gpu fields (docs/cli.md "What stays [N/A]"), from nvml.h as mirrored in
// NVIDIA/go-nvml: inforom, accounting, driver model, margin temperature, encoder stats, fabric,
// supported clocks -------------------------------------------------------------------------------
enum : unsigned { NVML_INFOROM_OEM = 0, NVML_INFOROM_ECC = 1, NVML_INFOROM_POWER = 2 };
enum : unsigned { NVML_DRIVER_WDDM = 0, NVML_DRIVER_WDM = 1, NVML_DRIVER_MCDM = 2 };
enum : unsigned { NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE = 16 };
enum : unsigned {
  NVML_GPU_FABRIC_STATE_NOT_SUPPORTED = 0,
  NVML_GPU_FABRIC_STATE_NOT_STARTED = 1,
  NVML_GPU_FABRIC_STATE_IN_PROGRESS = 2,
  NVML_GPU_FABRIC_STATE_COMPLETED = 3,
};
enum : unsigned { NVML_GPU_FABRIC_UUID_LEN = 16 };

/// nvmlMarginTemperature_v1_t (nvmlDeviceGetMarginTemperature, NVML 12.6+): °C left before the GPU
/// slows down (nvidia-smi's "GPU Current T.Limit Temp"); version = nvmlMarginTemperature_v1.
typedef struct {
  unsigned int version;
  int marginTemperature;
} nvmlMarginTemperature_v1_t;

/// nvmlEccSramErrorStatus_v1_t (nvmlDeviceGetSramEccErrorStatus, NVML 12.4+, Hopper and later): the
/// SRAM uncorrectable errors split into parity and SEC-DED, their aggregate count by unit, and
/// whether the SRAM error threshold for a GPU replacement is exceeded; version =
/// nvmlEccSramErrorStatus_v1. nvidia-smi's `ecc.errors.uncorrected.*.sram.*` and the -q rows
/// "SRAM Uncorrectable Parity" / "SRAM Uncorrectable SEC-DED" / "SRAM Threshold Exceeded".
typedef struct {
  unsigned int version;
  unsigned long long aggregateUncParity;
  unsigned long long aggregateUncSecDed;
  unsigned long long aggregateCor;
  unsigned long long volatileUncParity;
  unsigned long long volatileUncSecDed;
  unsigned long long volatileCor;
  unsigned long long aggregateUncBucketL2;
  unsigned long long aggregateUncBucketSm;
  unsigned long long aggregateUncBucketPcie;
  unsigned long long aggregateUncBucketMcu;
  unsigned long long aggregateUncBucketOther;
  unsigned int bThresholdExceeded;
} nvmlEccSramErrorStatus_v1_t;

typedef unsigned char nvmlGpuFabricState_t;
/// nvmlGpuFabricInfo_t (nvmlDeviceGetGpuFabricInfo, NVML 12.0): NVLink fabric registration.
typedef struct {
  unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN];
  nvmlReturn_t status;  // meaningful once state is COMPLETED
  unsigned int cliqueId;
  nvmlGpuFabricState_t state;
} nvmlGpuFabricInfo_t;
/// nvmlGpuFabricInfo_v2_t (nvmlDeviceGetGpuFabricInfoV, NVML 12.3+): adds version and healthMask.
typedef struct {
  unsigned int version;
  unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN];
  nvmlReturn_t status;
  unsigned int cliqueId;
  nvmlGpuFabricState_t state;
  unsigned int healthMask;
} nvmlGpuFabricInfo_v2_t;

nvmlReturn_t nvmlDeviceGetAccountingMode(nvmlDevice_t device, unsigned int* mode);
nvmlReturn_t nvmlDeviceGetAccountingBufferSize(nvmlDevice_t device, unsigned int* bufferSize);
nvmlReturn_t nvmlDeviceGetDriverModel(nvmlDevice_t device, unsigned int* current, unsigned int* pending);
nvmlReturn_t nvmlDeviceGetDriverModel_v2(nvmlDevice_t device, unsigned int* current, unsigned int* pending);
nvmlReturn_t nvmlDeviceGetInforomImageVersion(nvmlDevice_t device, char* version, unsigned int length);
nvmlReturn_t nvmlDeviceGetInforomVersion(nvmlDevice_t device, unsigned int object, char* version,
                                         unsigned int length);
nvmlReturn_t nvmlDeviceValidateInforom(nvmlDevice_t device);
nvmlReturn_t nvmlDeviceGetMarginTemperature(nvmlDevice_t device, nvmlMarginTemperature_v1_t* marginTempInfo);
nvmlReturn_t nvmlDeviceGetSramEccErrorStatus(nvmlDevice_t device, nvmlEccSramErrorStatus_v1_t* status);
nvmlReturn_t nvmlDeviceGetEncoderStats(nvmlDevice_t device, unsigned int* sessionCount,
                                       unsigned int* averageFps, unsigned int* averageLatency);
nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t device, nvmlGpuFabricInfo_t* gpuFabricInfo);
nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, nvmlGpuFabricInfo_v2_t* gpuFabricInfo);
nvmlReturn_t nvmlDeviceGetSupportedMemoryClocks(nvmlDevice_t device, unsigned int* count,
                                                unsigned int* clocksMHz);
nvmlReturn_t nvmlDeviceGetSupportedGraphicsClocks(nvmlDevice_t device, unsigned int memoryClockMHz,
                                                  unsigned int* count, unsigned int* clocksMHz);

}  // extern "C"

// ---- layout checks (NVML-NOTES §6.3, LP64) -----------------------------------------------------
static_assert(sizeof(nvmlUtilization_t) == 8);
static_assert(sizeof(nvmlMemory_t) == 24);
static_assert(sizeof(nvmlMemory_v2_t) == 40 && offsetof(nvmlMemory_v2_t, total) == 8 &&
              offsetof(nvmlMemory_v2_t, reserved) == 16 && offsetof(nvmlMemory_v2_t, free) == 24 &&
              offsetof(nvmlMemory_v2_t, used) == 32);
static_assert(TRAINMON_NVML_STRUCT_VERSION(nvmlMemory_v2_t, 2) == 0x02000028u);
static_assert(sizeof(nvmlBAR1Memory_t) == 24);
static_assert(sizeof(nvmlProcessInfo_v1_t) == 16 && offsetof(nvmlProcessInfo_v1_t, usedGpuMemory) == 8);
static_assert(sizeof(nvmlProcessInfo_v2_t) == 24 && offsetof(nvmlProcessInfo_v2_t, gpuInstanceId) == 16 &&
              offsetof(nvmlProcessInfo_v2_t, computeInstanceId) == 20);
static_assert(sizeof(nvmlProcessInfo_535_t) == 32 &&
              offsetof(nvmlProcessInfo_535_t, usedGpuCcProtectedMemory) == 24);
static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32 &&
              offsetof(nvmlProcessUtilizationSample_t, timeStamp) == 8 &&
              offsetof(nvmlProcessUtilizationSample_t, smUtil) == 16 &&
              offsetof(nvmlProcessUtilizationSample_t, decUtil) == 28);
static_assert(sizeof(nvmlValue_t) == 8);
static_assert(sizeof(nvmlSample_t) == 16);
static_assert(sizeof(nvmlFieldValue_t) == 40 && offsetof(nvmlFieldValue_t, timestamp) == 8 &&
              offsetof(nvmlFieldValue_t, valueType) == 24 && offsetof(nvmlFieldValue_t, nvmlReturn) == 28 &&
              offsetof(nvmlFieldValue_t, value) == 32);
static_assert(sizeof(nvmlPciInfo_t) == 68 && offsetof(nvmlPciInfo_t, domain) == 16 &&
              offsetof(nvmlPciInfo_t, pciSubSystemId) == 32 && offsetof(nvmlPciInfo_t, busId) == 36);
static_assert(sizeof(nvmlEventData_t) == 32 && offsetof(nvmlEventData_t, eventType) == 8 &&
              offsetof(nvmlEventData_t, eventData) == 16 && offsetof(nvmlEventData_t, gpuInstanceId) == 24);
static_assert(sizeof(nvmlViolationTime_t) == 16);
static_assert(sizeof(nvmlTemperature_v1_t) == 12 &&
              TRAINMON_NVML_STRUCT_VERSION(nvmlTemperature_v1_t, 1) == 0x0100000Cu);
static_assert(sizeof(nvmlProcessDetail_v1_t) == 32);
static_assert(sizeof(nvmlProcessDetailList_v1_t) == 24 &&
              offsetof(nvmlProcessDetailList_v1_t, procArray) == 16 &&
              TRAINMON_NVML_STRUCT_VERSION(nvmlProcessDetailList_v1_t, 1) == 0x01000018u);
static_assert(sizeof(nvmlProcessUtilizationInfo_v1_t) == 40 &&
              offsetof(nvmlProcessUtilizationInfo_v1_t, ofaUtil) == 32);
static_assert(sizeof(nvmlProcessesUtilizationInfo_v1_t) == 24 &&
              offsetof(nvmlProcessesUtilizationInfo_v1_t, procUtilArray) == 16);
static_assert(sizeof(nvmlMarginTemperature_v1_t) == 8 &&
              TRAINMON_NVML_STRUCT_VERSION(nvmlMarginTemperature_v1_t, 1) == 0x01000008u);
static_assert(sizeof(nvmlEccSramErrorStatus_v1_t) == 104 &&
              offsetof(nvmlEccSramErrorStatus_v1_t, aggregateUncParity) == 8 &&
              offsetof(nvmlEccSramErrorStatus_v1_t, bThresholdExceeded) == 96 &&
              TRAINMON_NVML_STRUCT_VERSION(nvmlEccSramErrorStatus_v1_t, 1) == 0x01000068u);
static_assert(sizeof(nvmlGpuFabricInfo_t) == 28 && offsetof(nvmlGpuFabricInfo_t, state) == 24);
static_assert(sizeof(nvmlGpuFabricInfo_v2_t) == 36 && offsetof(nvmlGpuFabricInfo_v2_t, healthMask) == 32 &&
              TRAINMON_NVML_STRUCT_VERSION(nvmlGpuFabricInfo_v2_t, 2) == 0x02000024u);
