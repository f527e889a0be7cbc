// SPDX-License-Identifier: Apache-2.0
// CUDA_VISIBLE_DEVICES entries → NVML indices (cuda_devices.h).
#include "trainmon/diagnose/cuda_devices.h"

#include <algorithm>
#include <charconv>

namespace trainmon::diagnose {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

/// CUDA accepts a unique prefix of a UUID ("GPU-8f3"), with or without the "GPU-" / "MIG-" prefix.
bool uuid_matches(std::string_view entry, std::string_view uuid) {
  if (entry.empty() || uuid.empty()) return false;
  auto bare = [](std::string_view u) {
    if (u.starts_with("GPU-") || u.starts_with("MIG-")) u.remove_prefix(4);
    return u;
  };
  const auto e = bare(entry), u = bare(uuid);
  return !e.empty() && u.starts_with(e) &&
         (entry.starts_with("MIG-") == uuid.starts_with("MIG-") ||
          !(entry.starts_with("GPU-") || entry.starts_with("MIG-")));
}

std::optional<unsigned> integer(std::string_view s) {
  unsigned v = 0;
  s = trim(s);
  if (s.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::vector<NvmlGpuRef> nvml_gpu_refs(const Snapshot& snap) {
  std::vector<NvmlGpuRef> out;
  out.reserve(snap.gpus.size());
  for (const auto& g : snap.gpus) {
    NvmlGpuRef r;
    r.index = g.index;
    if (g.info && g.info->uuid.ok()) r.uuid = *g.info->uuid;
    for (const auto& m : g.mig_devices)
      if (m.uuid.ok()) r.mig_uuids.push_back(*m.uuid);
    for (const auto& p : snap.gpu_processes)
      if (p.gpu_index == g.index && joined_to_host(p.host))
        r.procs.emplace_back(p.pid, p.used_memory_bytes.value_or(0));
    out.push_back(std::move(r));
  }
  return out;
}

bool cuda_pci_bus_id_order(std::string_view cuda_device_order) noexcept {
  return trim(cuda_device_order) == "PCI_BUS_ID";
}

std::vector<std::string_view> cuda_visible_entries(std::string_view value) {
  std::vector<std::string_view> entries;
  if (trim(value).empty()) return entries;
  std::string_view rest = value;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    entries.push_back(trim(rest.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return entries;
}

std::optional<unsigned> nvml_index_of_uuid(std::string_view uuid, std::span<const NvmlGpuRef> gpus) {
  std::optional<unsigned> found;
  for (const auto& g : gpus) {
    bool hit = uuid_matches(uuid, g.uuid);
    for (const auto& m : g.mig_uuids) hit = hit || uuid_matches(uuid, m);
    if (!hit) continue;
    if (found && *found != g.index) return std::nullopt;  // an ambiguous prefix: CUDA refuses it too
    found = g.index;
  }
  return found;
}

std::optional<unsigned> nvml_index_of_cuda_entry(std::string_view entry, bool pci_bus_id_order,
                                                 std::span<const NvmlGpuRef> gpus) {
  if (const auto n = integer(entry)) {
    if (!pci_bus_id_order) return std::nullopt;  // fastest first: an order NVML does not know
    for (const auto& g : gpus)
      if (g.index == *n) return g.index;
    return std::nullopt;
  }
  return nvml_index_of_uuid(entry, gpus);
}

std::optional<std::vector<unsigned>> nvml_indices_of_cuda_visible_devices(std::string_view value,
                                                                          bool pci_bus_id_order,
                                                                          std::span<const NvmlGpuRef> gpus) {
  const auto entries = cuda_visible_entries(value);
  if (entries.empty()) return std::nullopt;
  std::vector<unsigned> out;
  std::vector<unsigned> integers;
  bool all_integers = true;
  for (const auto e : entries) {
    if (const auto n = integer(e)) {
      integers.push_back(*n);
    } else {
      all_integers = false;
    }
    if (const auto i = nvml_index_of_cuda_entry(e, pci_bus_id_order, gpus)) out.push_back(*i);
  }
  if (out.size() != entries.size()) {
    // Integers in the default order: only the full set {0..n-1}, each once, is the same set in any order.
    if (!all_integers || integers.size() != gpus.size() || gpus.empty()) return std::nullopt;
    std::vector<unsigned> indices;
    for (const auto& g : gpus) indices.push_back(g.index);
    std::sort(integers.begin(), integers.end());
    std::sort(indices.begin(), indices.end());
    std::vector<unsigned> ordinals(gpus.size());
    for (std::size_t i = 0; i < ordinals.size(); ++i) ordinals[i] = static_cast<unsigned>(i);
    if (integers != ordinals) return std::nullopt;
    out = std::move(indices);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace trainmon::diagnose
