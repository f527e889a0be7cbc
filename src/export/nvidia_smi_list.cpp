// SPDX-License-Identifier: Apache-2.0
// `nvidia-smi -L` and `--query-supported-clocks`, from a Snapshot.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "export/static_info.h"
#include "trainmon/core/units.h"
#include "trainmon/export/nvidia_smi_views.h"

namespace trainmon::exp {

namespace {

template <class T>
std::string text_or_na(const Reading<T>& r) {
  if (!r.ok()) return std::string(nvidia_smi_na_text(r.status));
  if constexpr (std::is_same_v<T, std::string>) {
    return *r;
  } else {
    return fmt::format("{}", *r);
  }
}

/// "NVIDIA H100 80GB HBM3 MIG 3g.40gb" → "3g.40gb".
std::string mig_profile(const MigDeviceSample& m) {
  if (!m.name.ok()) return "[N/A]";
  const auto at = m.name->rfind("MIG ");
  return at == std::string::npos ? *m.name : m.name->substr(at + 4);
}

// Descriptions of the first five as nvidia-smi's --help-query-compute-apps words them (the captures);
// memory and graphics in our words (no capture holds --help-query-supported-clocks).
constexpr ClockField kClockFields[] = {
    {"timestamp", "", "", "The timestamp of when the query was made in format \"YYYY/MM/DD HH:MM:SS.msec\"."},
    {"gpu_name", "", "",
     "The official product name of the GPU. This is an alphanumeric string. For all products."},
    {"gpu_bus_id", "", "", "PCI bus id as \"domain:bus:device.function\", in hex."},
    {"gpu_serial", "", "",
     "This number matches the serial number physically printed on each board. It is a globally unique "
     "immutable alphanumeric value."},
    {"gpu_uuid", "", "",
     "This value is the globally unique immutable alphanumeric identifier of the GPU. It does not "
     "correspond to any physical label on the board."},
    {"memory", "mem", "MHz", "A memory clock the GPU supports (nvmlDeviceGetSupportedMemoryClocks)."},
    {"graphics", "gr", "MHz",
     "A graphics clock the GPU supports at that memory clock (nvmlDeviceGetSupportedGraphicsClocks)."},
};

}  // namespace

std::string list_gpus_text(const Snapshot& snap, std::span<const std::size_t> order) {
  std::string out;
  for (std::size_t pos : order) {
    const GpuSample& g = snap.gpus.at(pos);
    const auto& info = info_of(g);
    fmt::format_to(std::back_inserter(out), "GPU {}: {} (UUID: {})\n", g.index, text_or_na(info.name),
                   text_or_na(info.uuid));
    for (const auto& m : g.mig_devices)
      fmt::format_to(std::back_inserter(out), "  MIG {:<11} Device {:>2}: (UUID: {})\n", mig_profile(m),
                     m.index, text_or_na(m.uuid));
  }
  return out;
}

std::span<const ClockField> clock_fields() {
  return kClockFields;
}

std::string help_query_supported_clocks() {
  std::string out =
      "List of valid properties to query for the switch \"--query-supported-clocks\":\n\n"
      "Section about supported clocks properties\n"
      "List of memory and graphics clock pairs the device supports.\n\n";
  for (const ClockField& f : kClockFields) {
    out += '"';
    out += f.name;
    out += '"';
    if (!f.alias.empty()) fmt::format_to(std::back_inserter(out), " or \"{}\"", f.alias);
    fmt::format_to(std::back_inserter(out), "\n{}\n\n", f.description);
  }
  return out;
}

std::expected<std::vector<const ClockField*>, std::string> parse_clock_query(std::string_view list) {
  std::vector<const ClockField*> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    std::string_view name = list.substr(start, comma - start);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    const auto it = std::find_if(std::begin(kClockFields), std::end(kClockFields), [&](const ClockField& f) {
      return f.name == name || (!f.alias.empty() && f.alias == name);
    });
    if (it == std::end(kClockFields))
      return std::unexpected(fmt::format("Field \"{}\" is not a valid field to query.", name));
    out.push_back(&*it);
    start = comma + 1;
  }
  return out;
}

std::string csv_query_supported_clocks(const std::vector<const ClockField*>& fields, const CsvOptions& opt,
                                       const Snapshot& snap, std::span<const std::size_t> order,
                                       bool with_header) {
  std::string out;
  if (with_header && opt.header) {
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (i) out += ", ";
      out += fields[i]->name;
      if (opt.units && !fields[i]->unit.empty())
        fmt::format_to(std::back_inserter(out), " [{}]", fields[i]->unit);
    }
    out += '\n';
  }
  const std::string ts = nvidia_smi_timestamp(snap.time_unix_ns);
  for (std::size_t pos : order) {
    const GpuSample& g = snap.gpus.at(pos);
    const auto& info = info_of(g);
    auto row = [&](std::optional<unsigned> mem, std::optional<unsigned> gr, std::string_view na) {
      for (std::size_t i = 0; i < fields.size(); ++i) {
        if (i) out += ", ";
        const std::string_view name = fields[i]->name;
        std::optional<unsigned> mhz = name == "memory" ? mem : name == "graphics" ? gr : std::nullopt;
        if (name == "timestamp") {
          out += ts;
        } else if (name == "gpu_name") {
          out += text_or_na(info.name);
        } else if (name == "gpu_bus_id") {
          out += text_or_na(info.pci_bus_id);
        } else if (name == "gpu_serial") {
          out += text_or_na(info.serial);
        } else if (name == "gpu_uuid") {
          out += text_or_na(info.uuid);
        } else if (mhz) {
          out += fmt::format("{}", *mhz);
          if (opt.units) out += " MHz";
        } else {
          out += na;
        }
      }
      out += '\n';
    };
    if (!info.supported_clocks.ok()) {
      row(std::nullopt, std::nullopt, nvidia_smi_na_text(info.supported_clocks.status));
      continue;
    }
    for (const SupportedClocks& c : *info.supported_clocks)
      for (unsigned gr : c.graphics_mhz) row(c.memory_mhz, gr, "[N/A]");
  }
  return out;
}

}  // namespace trainmon::exp
