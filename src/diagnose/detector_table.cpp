// SPDX-License-Identifier: Apache-2.0
#include <array>

#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {

std::span<const DetectorInfo> detector_table() noexcept {
  static const std::array<DetectorInfo, 28> kTable{{
      {"D1", detect_fragmentation}, {"D2", detect_imbalance},        {"D3", detect_host_leak},
      {"D4", detect_dataloader},    {"D5", detect_memory_growth},    {"D6", detect_power_bound},
      {"D7", detect_wrong_device},  {"D8", detect_ddp_not_running},  {"D9", detect_ghost_processes},
      {"D10", detect_ecc},          {"D11", detect_utilization},     {"D12", detect_throttle},
      {"D13", detect_xid},          {"D14", detect_gpu_lost},        {"D15", detect_memory_retirement},
      {"D16", detect_pcie_link},    {"D17", detect_host_pressure},   {"D18", detect_io_bound},
      {"D19", detect_cpu_bound},    {"D20", detect_oom_killed},      {"D21", detect_memory_near_full},
      {"D22", detect_batch_size},   {"D23", detect_training_hang},   {"D24", detect_straggler},
      {"D25", detect_data_wait},    {"D26", detect_throughput_drop}, {"D27", detect_comm_bound},
      {"D28", detect_pauses},
  }};
  return kTable;
}

}  // namespace trainmon::diagnose
