// SPDX-License-Identifier: Apache-2.0
// The detectors: one pure function per failure mode (docs/diagnosis.md has each signature,
// threshold and advice). Each reads only the series and the thresholds and returns its findings in
// time order; an empty result means "not seen" (also when the columns it needs are all N/A).
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "trainmon/diagnose/finding.h"
#include "trainmon/diagnose/series.h"
#include "trainmon/diagnose/thresholds.h"

namespace trainmon::diagnose {

std::vector<Finding> detect_fragmentation(const RunSeries&, const Thresholds&);      ///< D1
std::vector<Finding> detect_imbalance(const RunSeries&, const Thresholds&);          ///< D2
std::vector<Finding> detect_host_leak(const RunSeries&, const Thresholds&);          ///< D3
std::vector<Finding> detect_dataloader(const RunSeries&, const Thresholds&);         ///< D4
std::vector<Finding> detect_memory_growth(const RunSeries&, const Thresholds&);      ///< D5
std::vector<Finding> detect_power_bound(const RunSeries&, const Thresholds&);        ///< D6
std::vector<Finding> detect_wrong_device(const RunSeries&, const Thresholds&);       ///< D7
std::vector<Finding> detect_ddp_not_running(const RunSeries&, const Thresholds&);    ///< D8
std::vector<Finding> detect_ghost_processes(const RunSeries&, const Thresholds&);    ///< D9
std::vector<Finding> detect_ecc(const RunSeries&, const Thresholds&);                ///< D10
std::vector<Finding> detect_utilization(const RunSeries&, const Thresholds&);        ///< D11
std::vector<Finding> detect_throttle(const RunSeries&, const Thresholds&);           ///< D12
std::vector<Finding> detect_xid(const RunSeries&, const Thresholds&);                ///< D13
std::vector<Finding> detect_gpu_lost(const RunSeries&, const Thresholds&);           ///< D14
std::vector<Finding> detect_memory_retirement(const RunSeries&, const Thresholds&);  ///< D15
std::vector<Finding> detect_pcie_link(const RunSeries&, const Thresholds&);          ///< D16
std::vector<Finding> detect_host_pressure(const RunSeries&, const Thresholds&);      ///< D17
std::vector<Finding> detect_io_bound(const RunSeries&, const Thresholds&);           ///< D18
std::vector<Finding> detect_cpu_bound(const RunSeries&, const Thresholds&);          ///< D19
std::vector<Finding> detect_oom_killed(const RunSeries&, const Thresholds&);         ///< D20
std::vector<Finding> detect_memory_near_full(const RunSeries&, const Thresholds&);   ///< D21
std::vector<Finding> detect_batch_size(const RunSeries&, const Thresholds&);         ///< D22
std::vector<Finding> detect_training_hang(const RunSeries&, const Thresholds&);      ///< D23
std::vector<Finding> detect_straggler(const RunSeries&, const Thresholds&);          ///< D24
std::vector<Finding> detect_data_wait(const RunSeries&, const Thresholds&);          ///< D25
std::vector<Finding> detect_throughput_drop(const RunSeries&, const Thresholds&);    ///< D26
std::vector<Finding> detect_comm_bound(const RunSeries&, const Thresholds&);         ///< D27
std::vector<Finding> detect_pauses(const RunSeries&, const Thresholds&);             ///< D28

/// A detector entry: the code it reports and the function.
struct DetectorInfo {
  std::string_view code;
  std::vector<Finding> (*fn)(const RunSeries&, const Thresholds&);
};

/// Every detector in code order (the engine runs them all).
std::span<const DetectorInfo> detector_table() noexcept;

/// Meaning of an Xid code (NVIDIA "Xid Errors" catalog, docs.nvidia.com/deploy/xid-errors/):
/// a short description, the advice, and the severity trainmon gives it.
struct XidInfo {
  unsigned xid;
  std::string_view meaning;
  std::string_view advice;
  Severity severity;
};
/// The Xid table row for `xid`, or a generic row (xid 0) for codes not in the table.
const XidInfo& xid_info(unsigned xid) noexcept;
/// Every row of the Xid table, the generic row (xid 0) first.
std::span<const XidInfo> xid_table() noexcept;

}  // namespace trainmon::diagnose
