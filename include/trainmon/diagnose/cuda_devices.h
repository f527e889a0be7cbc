// SPDX-License-Identifier: Apache-2.0
// Which NVML GPU a CUDA device name means: CUDA_VISIBLE_DEVICES entries as CUDA reads them, mapped to
// NVML indices only on evidence. NVML numbers GPUs in PCI bus order; CUDA numbers them fastest first
// unless CUDA_DEVICE_ORDER=PCI_BUS_ID (CUDA C Programming Guide, "CUDA Environment Variables"), so an
// integer names an NVML index only in PCI bus order. A UUID ("GPU-...", "MIG-...", or a unique
// prefix, with or without the "GPU-" / "MIG-" part, as CUDA accepts it) names one GPU in any order.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainmon/core/snapshot.h"

namespace trainmon::diagnose {

/// What the mapping needs to know about one NVML GPU.
struct NvmlGpuRef {
  unsigned index = 0;                  ///< NVML index (NVML enumerates in PCI bus order)
  std::string uuid;                    ///< "GPU-..." (empty when unknown)
  std::vector<std::string> mig_uuids;  ///< its MIG devices' UUIDs ("MIG-...")
  /// Processes NVML lists on it now: pid and the GPU memory it holds (bytes; 0 when not known).
  std::vector<std::pair<std::uint32_t, std::uint64_t>> procs;
};

/// The GPUs of a snapshot as the mapping sees them: index, UUID, MIG UUIDs, and as `procs` (with their
/// memory) only the GPU processes the join matched to a local process (joined_to_host): a number
/// NVML gives for a process of another PID namespace is no local rank's pid
/// (sampler/gpu_process_join.h).
std::vector<NvmlGpuRef> nvml_gpu_refs(const Snapshot& snap);

/// Whether a CUDA_DEVICE_ORDER value is "PCI_BUS_ID" (blanks around it ignored): CUDA then numbers
/// devices as NVML does. Anything else, and unset, is CUDA's default FASTEST_FIRST.
bool cuda_pci_bus_id_order(std::string_view cuda_device_order) noexcept;

/// The entries of a CUDA_VISIBLE_DEVICES value: split at commas, blanks trimmed (views into
/// `value`). Empty for an empty or blank value.
std::vector<std::string_view> cuda_visible_entries(std::string_view value);

/// The NVML index of the GPU whose UUID, or one of whose MIG devices' UUIDs, `uuid` names (a unique
/// prefix is enough, as for CUDA); nullopt when none or several match.
std::optional<unsigned> nvml_index_of_uuid(std::string_view uuid, std::span<const NvmlGpuRef> gpus);

/// The NVML index one CUDA_VISIBLE_DEVICES entry names: a UUID or unique prefix by the GPUs' and
/// their MIG devices' UUIDs (a MIG device gives its GPU); an integer only when `pci_bus_id_order`
/// (cuda_pci_bus_id_order), then the GPU with that NVML index. nullopt when the entry names no GPU
/// of `gpus`, is ambiguous, or is an integer in CUDA's default order: never a guess.
std::optional<unsigned> nvml_index_of_cuda_entry(std::string_view entry, bool pci_bus_id_order,
                                                 std::span<const NvmlGpuRef> gpus);

/// The set of NVML indices a whole CUDA_VISIBLE_DEVICES value names, sorted and unique, or nullopt
/// when it cannot be told: an entry that does not map (nvml_index_of_cuda_entry), or an empty list.
/// Integers in CUDA's default order still give a set when they name every GPU of `gpus` once
/// ({0..n-1}: no ordering changes which GPUs those are), as on a one-GPU machine.
std::optional<std::vector<unsigned>> nvml_indices_of_cuda_visible_devices(std::string_view value,
                                                                          bool pci_bus_id_order,
                                                                          std::span<const NvmlGpuRef> gpus);

}  // namespace trainmon::diagnose
