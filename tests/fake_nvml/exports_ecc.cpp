// SPDX-License-Identifier: Apache-2.0
// ECC mode and counters, retired pages, remapped rows.
#include "exports_util.h"

using namespace fake_nvml;

namespace {

const char* ecc_key(unsigned errorType, unsigned counterType) {
  if (errorType > NVML_MEMORY_ERROR_TYPE_UNCORRECTED || counterType > NVML_AGGREGATE_ECC) return nullptr;
  static const char* const kKeys[2][2] = {{"ecc_volatile_corrected", "ecc_aggregate_corrected"},
                                          {"ecc_volatile_uncorrected", "ecc_aggregate_uncorrected"}};
  return kKeys[errorType][counterType];
}

bool ecc_on(const Call& c) {
  return c.dev->ecc_current.value_or(0) == 1;
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, unsigned int* current,
                                                   unsigned int* pending) {
  FAKE_ENTER(device);
  FAKE_NEED(current);
  FAKE_NEED(pending);
  if (!c.dev->ecc_current) return NVML_ERROR_NOT_SUPPORTED;
  *current = *c.dev->ecc_current;
  *pending = c.dev->ecc_pending.value_or(*c.dev->ecc_current);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, unsigned int errorType,
                                                          unsigned int counterType,
                                                          unsigned long long* eccCounts) {
  FAKE_ENTER(device);
  FAKE_NEED(eccCounts);
  const char* key = ecc_key(errorType, counterType);
  if (key == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!ecc_on(c)) return NVML_ERROR_NOT_SUPPORTED;
  return put_metric_or(c, key, eccCounts, 0);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryErrorCounter(nvmlDevice_t device, unsigned int errorType,
                                                              unsigned int counterType,
                                                              unsigned int locationType,
                                                              unsigned long long* count) {
  FAKE_ENTER(device);
  FAKE_NEED(count);
  const char* key = ecc_key(errorType, counterType);
  if (key == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!ecc_on(c)) return NVML_ERROR_NOT_SUPPORTED;
  // All scripted errors are DRAM errors (location DRAM = 2, DEVICE_MEMORY = 2 on current headers).
  if (locationType != 2) {
    *count = 0;
    return NVML_SUCCESS;
  }
  return put_metric_or(c, key, count, 0);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, unsigned int cause,
                                                        unsigned int* pageCount,
                                                        unsigned long long* addresses) {
  FAKE_ENTER(device);
  FAKE_NEED(pageCount);
  if (cause > NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR) return NVML_ERROR_INVALID_ARGUMENT;
  if (!ecc_on(c)) return NVML_ERROR_NOT_SUPPORTED;
  const unsigned n =
      rounded<unsigned>(c.metric(cause == 0 ? "retired_pages_sbe" : "retired_pages_dbe").value_or(0));
  if (*pageCount == 0 && n > 0) {
    *pageCount = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (*pageCount < n) {
    *pageCount = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (unsigned i = 0; i < n && addresses != nullptr; ++i) addresses[i] = 0x1000ULL * (i + 1) + cause;
  *pageCount = n;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device,
                                                                     unsigned int* isPending) {
  FAKE_ENTER(device);
  if (!ecc_on(c)) return NVML_ERROR_NOT_SUPPORTED;
  return put_metric_or(c, "retired_pages_pending", isPending, 0);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corrRows,
                                                        unsigned int* uncRows, unsigned int* isPending,
                                                        unsigned int* failureOccurred) {
  FAKE_ENTER(device);
  FAKE_NEED(corrRows);
  FAKE_NEED(uncRows);
  FAKE_NEED(isPending);
  FAKE_NEED(failureOccurred);
  if (!ecc_on(c) || on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;
  put_metric_or(c, "remapped_rows_correctable", corrRows, 0);
  put_metric_or(c, "remapped_rows_uncorrectable", uncRows, 0);
  put_metric_or(c, "remapped_rows_pending", isPending, 0);
  put_metric_or(c, "remapped_rows_failure", failureOccurred, 0);
  return NVML_SUCCESS;
}
