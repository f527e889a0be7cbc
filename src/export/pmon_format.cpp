// SPDX-License-Identifier: Apache-2.0
// pmon layout measured on nvidia-smi 590 output (captures): "%5u" gpu, "%11s" pid, "%6s" type,
// "%7s" per metric, then four spaces and the command left-aligned in 15 columns. The header lines
// use a 12-wide pid and 7-wide type column (nvidia-smi's own misalignment, kept byte for byte).
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "export/monitor_common.h"
#include "trainmon/export/monitor_format.h"
#include "trainmon/export/units.h"

namespace trainmon::exp {

namespace {

using Value = std::optional<std::uint64_t>;

struct PmonColumn {
  char group;
  std::string_view name;
  std::string_view unit;
  std::function<Value(const GpuProcessSample&)> read;
};

template <class T>
Value opt(const Reading<T>& r) {
  return r.ok() ? Value(static_cast<std::uint64_t>(*r)) : std::nullopt;
}

const std::vector<PmonColumn>& pmon_columns() {
  static const std::vector<PmonColumn> cols = {
      {'m', "fb", "MB",
       [](const GpuProcessSample& p) -> Value {
         return p.used_memory_bytes.ok() ? Value(bytes_to_mib(*p.used_memory_bytes)) : std::nullopt;
       }},
      {'m', "ccpm", "MB", [](const GpuProcessSample&) -> Value { return std::nullopt; }},
      {'u', "sm", "%", [](const GpuProcessSample& p) { return opt(p.sm_util_pct); }},
      {'u', "mem", "%", [](const GpuProcessSample& p) { return opt(p.mem_util_pct); }},
      {'u', "enc", "%", [](const GpuProcessSample& p) { return opt(p.enc_util_pct); }},
      {'u', "dec", "%", [](const GpuProcessSample& p) { return opt(p.dec_util_pct); }},
      {'u', "jpg", "%", [](const GpuProcessSample&) -> Value { return std::nullopt; }},
      {'u', "ofa", "%", [](const GpuProcessSample&) -> Value { return std::nullopt; }},
  };
  return cols;
}

std::vector<const PmonColumn*> selected(const std::string& groups) {
  std::vector<const PmonColumn*> out;
  for (const auto& c : pmon_columns())
    if (groups.find(c.group) != std::string::npos) out.push_back(&c);
  return out;
}

std::string type_text(char t) {
  if (t == 'C' || t == 'G' || t == 'M') return std::string(1, t);
  return "-";
}

std::string command_of(const GpuProcessSample& p) {
  return p.process_name.ok() && !p.process_name->empty() ? std::string(path_basename(*p.process_name)) : "-";
}

}  // namespace

std::expected<std::string, std::string> parse_pmon_groups(std::string_view s) {
  if (s.empty()) return std::string("u");
  for (char c : s)
    if (c != 'u' && c != 'm')
      return std::unexpected(fmt::format("Invalid metric group '{}' for -s (use u, m or um).", c));
  return std::string(s);
}

std::string pmon_header(const MonitorOptions& opt) {
  const auto cols = selected(opt.groups);
  if (opt.format == MonitorFormat::json) return {};
  if (opt.format == MonitorFormat::csv) {
    std::string out;
    if (opt.date) out += "date, ";
    if (opt.time) out += "time, ";
    out += "gpu, pid, type";
    for (const auto* c : cols) fmt::format_to(std::back_inserter(out), ", {} [{}]", c->name, c->unit);
    return out + ", command\n";
  }
  std::string names = monitor_index_header(opt, false) + fmt::format("{:>12}{:>7}", "pid", "type");
  std::string units = monitor_index_header(opt, true) + fmt::format("{:>12}{:>7}", "#", "C/G");
  for (const auto* c : cols) {
    fmt::format_to(std::back_inserter(names), "{:>7}", c->name);
    fmt::format_to(std::back_inserter(units), "{:>7}", c->unit);
  }
  return names + "    command \n" + units + "    name \n";
}

std::string pmon_rows(const MonitorOptions& opt, const Snapshot& cur, std::span<const std::size_t> order) {
  const auto cols = selected(opt.groups);
  std::string out;
  const std::string ts = nvidia_smi_timestamp(cur.time_unix_ns);
  for (std::size_t pos : order) {
    const GpuSample& g = cur.gpus.at(pos);
    std::vector<const GpuProcessSample*> procs;
    for (const auto& p : cur.gpu_processes)
      if (p.gpu_index == g.index) procs.push_back(&p);
    std::stable_sort(procs.begin(), procs.end(), [](auto* a, auto* b) { return a->pid < b->pid; });
    if (procs.empty()) procs.push_back(nullptr);  // one line of '-' for an idle GPU
    for (const GpuProcessSample* p : procs) {
      if (opt.format == MonitorFormat::json) {
        if (!p) continue;  // JSON lists processes only
        nlohmann::ordered_json row;
        row["time"] = iso_local_time(cur.time_unix_ns);
        row["gpu"] = g.index;
        row["pid"] = p->pid;
        row["type"] = type_text(p->type);
        for (const auto* c : cols) {
          const Value v = c->read(*p);
          row[std::string(c->name)] = v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
        }
        row["command"] = command_of(*p);
        out += row.dump() + '\n';
        continue;
      }
      if (opt.format == MonitorFormat::csv) {
        if (opt.date) out += ts.substr(0, 10) + ", ";
        if (opt.time) out += ts.substr(11, 8) + ", ";
        out += fmt::format("{}, {}, {}", g.index, p ? fmt::format("{}", p->pid) : "-",
                           p ? type_text(p->type) : "-");
        for (const auto* c : cols) {
          const Value v = p ? c->read(*p) : std::nullopt;
          out += ", ";
          out += v ? fmt::format("{}", *v) : "-";
        }
        out += ", " + (p ? command_of(*p) : std::string("-")) + '\n';
        continue;
      }
      out += monitor_time_prefix(opt, cur.time_unix_ns);
      fmt::format_to(std::back_inserter(out), "{:>5}{:>11}{:>6}", g.index,
                     p ? fmt::format("{}", p->pid) : "-", p ? type_text(p->type) : "-");
      for (const auto* c : cols) {
        const Value v = p ? c->read(*p) : std::nullopt;
        fmt::format_to(std::back_inserter(out), "{:>7}", v ? fmt::format("{}", *v) : std::string("-"));
      }
      fmt::format_to(std::back_inserter(out), "    {:<15}\n", p ? command_of(*p) : std::string("-"));
    }
  }
  return out;
}

}  // namespace trainmon::exp
