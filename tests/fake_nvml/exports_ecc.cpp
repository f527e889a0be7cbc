// SPDX-License-Identifier: Apache-2.0
// ECC mode and counters, retired pages, remapped rows.
#include <string>

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
  // SRAM (7): the metric `<counter>_sram` (default 0); DRAM (2, DEVICE_MEMORY): `<counter>_dram`,
  // default the total minus SRAM (so a scenario that scripts only totals has DRAM errors); every
  // other location 0.
  const std::string k(key);
  if (locationType == NVML_MEMORY_LOCATION_SRAM) return put_metric_or(c, (k + "_sram").c_str(), count, 0);
  if (locationType != NVML_MEMORY_LOCATION_DRAM) {
    *count = 0;
    return NVML_SUCCESS;
  }
  if (c.metric((k + "_dram").c_str())) return put_metric_or(c, (k + "_dram").c_str(), count, 0);
  const double total = c.metric(key).value_or(0), sram = c.metric((k + "_sram").c_str()).value_or(0);
  *count = rounded<unsigned long long>(total > sram ? total - sram : 0);
  return NVML_SUCCESS;
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

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetSramEccErrorStatus(nvmlDevice_t device,
                                                              nvmlEccSramErrorStatus_v1_t* status) {
  FAKE_ENTER(device);
  FAKE_NEED(status);
  if (status->version != TRAINMON_NVML_STRUCT_VERSION(nvmlEccSramErrorStatus_v1_t, 1))
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  // Hopper (architecture 9) and later, with ECC on (as the H100 / H200 captures; Turing has no split).
  if (c.dev->architecture < 9 || !ecc_on(c) || on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;
  // `sram_parity` / `sram_secded` of each uncorrected counter (default: every SRAM uncorrected
  // error a parity one, none SEC-DED), the aggregate buckets `ecc_aggregate_uncorrected_sram_l2`,
  // `_sm`, `_pcie`, `_mcu`, `_other` (default 0) and `sram_threshold_exceeded` (0/1, default 0).
  const auto get = [&](const std::string& key, double fallback) {
    return rounded<unsigned long long>(c.metric(key.c_str()).value_or(fallback));
  };
  for (const char* counter : {"ecc_volatile_uncorrected", "ecc_aggregate_uncorrected"}) {
    const std::string k(counter);
    const unsigned long long parity = get(k + "_sram_parity", c.metric((k + "_sram").c_str()).value_or(0));
    const unsigned long long secded = get(k + "_sram_secded", 0);
    const bool vol = k == "ecc_volatile_uncorrected";
    (vol ? status->volatileUncParity : status->aggregateUncParity) = parity;
    (vol ? status->volatileUncSecDed : status->aggregateUncSecDed) = secded;
  }
  status->volatileCor = get("ecc_volatile_corrected_sram", 0);
  status->aggregateCor = get("ecc_aggregate_corrected_sram", 0);
  status->aggregateUncBucketL2 = get("ecc_aggregate_uncorrected_sram_l2", 0);
  status->aggregateUncBucketSm = get("ecc_aggregate_uncorrected_sram_sm", 0);
  status->aggregateUncBucketPcie = get("ecc_aggregate_uncorrected_sram_pcie", 0);
  status->aggregateUncBucketMcu = get("ecc_aggregate_uncorrected_sram_mcu", 0);
  status->aggregateUncBucketOther = get("ecc_aggregate_uncorrected_sram_other", 0);
  status->bThresholdExceeded = get("sram_threshold_exceeded", 0) != 0 ? 1u : 0u;
  return NVML_SUCCESS;
}
