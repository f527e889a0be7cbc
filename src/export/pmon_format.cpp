// SPDX-License-Identifier: Apache-2.0
// pmon layout measured on nvidia-smi 590 output (captures, published `pmon -s um` output): the lead
// columns of monitor_common.h, "%11s" pid, "%6s" type, "%7s" per metric, then four spaces and the
// command cut and padded to 15 columns. The header lines use a 12-wide pid and 7-wide type column
// (nvidia-smi's own misalignment, kept byte for byte).
//
// `-` rules, read from every pmon row of the captures (drivers 590, 595, 610; Linux and Windows): a
// utilisation column prints `-` for an engine that had no sample in the interval and the number for
// one that had, 0 included (L40S 595.80 "0 0 13 - - -", RTX 4080 595.71 kwin_wayland "- - - 0 - -");
// the driver marks an engine without a sample with NVML's all-ones value, a process without any
// sample is not in its list (docs/fake-nvml.md). fb prints the number, 0 included; an idle GPU gets
// one row of `-`. JSON gives null for no sample.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "export/monitor_common.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/core/units.h"
#include "trainmon/export/attribution.h"
#include "trainmon/export/monitor_format.h"
#include "trainmon/export/processes_unknown.h"

namespace trainmon::exp {

namespace {

struct PmonReader {
  std::function<MonitorValue(const GpuProcessSample&)> value;
  bool utilisation = false;  ///< an engine's % (no sample: `-`)
};
using PmonColumn = MonitorColumn<PmonReader>;

const std::vector<PmonColumn>& pmon_columns() {
  static const std::vector<PmonColumn> cols = {
      {'u', "sm", "%", {[](const GpuProcessSample& p) { return reading_value(p.sm_util_pct); }, true}},
      {'u', "mem", "%", {[](const GpuProcessSample& p) { return reading_value(p.mem_util_pct); }, true}},
      {'u', "enc", "%", {[](const GpuProcessSample& p) { return reading_value(p.enc_util_pct); }, true}},
      {'u', "dec", "%", {[](const GpuProcessSample& p) { return reading_value(p.dec_util_pct); }, true}},
      // Per-process JPEG / OFA (nvmlDeviceGetProcessesUtilizationInfo) are not read by the backend yet.
      {'u', "jpg", "%", {[](const GpuProcessSample&) -> MonitorValue { return std::nullopt; }, true}},
      {'u', "ofa", "%", {[](const GpuProcessSample&) -> MonitorValue { return std::nullopt; }, true}},
      {'m',
       "fb",
       "MB",
       {[](const GpuProcessSample& p) -> MonitorValue {
          return p.used_memory_bytes.ok() ? MonitorValue(bytes_to_mib(*p.used_memory_bytes)) : std::nullopt;
        },
        false}},
      // Confidential-computing protected memory: not read by the backend yet.
      {'m', "ccpm", "MB", {[](const GpuProcessSample&) -> MonitorValue { return std::nullopt; }, false}},
  };
  return cols;
}

/// The text view's cell: `-` for no value (no process, no sample), else the number.
std::string text_cell(const PmonColumn& c, const GpuProcessSample* p) {
  return monitor_cell(p ? c.read.value(*p) : std::nullopt);
}

/// pmon's type column: C (compute), G (graphics), C+G (both lists), M (MPS).
std::string type_text(const GpuProcessSample& p) {
  if (p.compute_and_graphics) return "C+G";
  if (p.type == 'C' || p.type == 'G' || p.type == 'M') return std::string(1, p.type);
  return "-";
}

/// The command column: the basename of the process name, cut to 15 columns as nvidia-smi does.
std::string command_of(const GpuProcessSample& p) {
  if (!p.process_name.ok() || p.process_name->empty()) return "-";
  return truncate_display(terminal_text(path_basename(*p.process_name)), 15);
}

}  // namespace

std::expected<std::string, std::string> parse_pmon_groups(std::string_view s) {
  if (s.empty()) return std::string("u");
  if (auto bad = first_bad_group(s, "um"))
    return std::unexpected(fmt::format("Invalid metric group '{}' for -s (use u, m or um).", *bad));
  return std::string(s);
}

std::string pmon_header(const MonitorOptions& opt) {
  const auto cols = select_columns(pmon_columns(), opt.groups);
  if (opt.format == MonitorFormat::json) return {};
  if (opt.format == MonitorFormat::smi_csv)
    return monitor_smi_csv_header(opt, cols, ", pid, type", ", #, C/G", ", command", ", name");
  if (opt.format == MonitorFormat::csv) {
    std::string out = monitor_csv_time_header(opt) + "gpu, pid, type";
    for (const auto* c : cols) fmt::format_to(std::back_inserter(out), ", {} [{}]", c->name, c->unit);
    return out + ", command\n";
  }
  auto [names, units] = monitor_header_leads(opt);
  names += fmt::format("{:>12}{:>7}", "pid", "type");
  units += fmt::format("{:>12}{:>7}", "#", "C/G");
  append_column_headers(cols, names, units);
  return names + "    command \n" + units + "    name \n";
}

std::string pmon_rows(const MonitorOptions& opt, const Snapshot& cur, std::span<const std::size_t> order) {
  const auto cols = select_columns(pmon_columns(), opt.groups);
  std::string out;
  for (std::size_t pos : order) {
    const GpuSample& g = cur.gpus.at(pos);
    std::vector<const GpuProcessSample*> procs;
    for (const auto& p : cur.gpu_processes)
      if (p.gpu_index == g.index) procs.push_back(&p);
    std::stable_sort(procs.begin(), procs.end(), [](auto* a, auto* b) { return a->pid < b->pid; });
    // Lists that failed: a row of '?' (never the idle GPU's row of '-'); the reason on stderr
    // (pmon_warnings) and in the JSON row.
    const std::string unknown = processes_unknown_reason(g.process_count);
    if (!unknown.empty()) {
      if (opt.format == MonitorFormat::json) {
        nlohmann::ordered_json row;
        row["time"] = monitor_json_time(cur.time_unix_ns);
        row["gpu"] = g.index;
        row["processes_unknown"] = unknown;
        out += row.dump() + '\n';
      } else if (opt.format == MonitorFormat::csv) {
        out += monitor_csv_time_cells(opt, cur.time_unix_ns) + fmt::format("{}, ?, ?", g.index);
        for (std::size_t i = 0; i < cols.size(); ++i) out += ", ?";
        out += ", processes unknown\n";
      } else {
        out += monitor_row_lead(opt, cur.time_unix_ns, g.index);
        append_cell(out, "?", 11);
        append_cell(out, "?", 6);
        for (std::size_t i = 0; i < cols.size(); ++i) append_cell(out, "?", 7);
        out += "    unknown        \n";
      }
    } else if (procs.empty()) {
      procs.push_back(nullptr);  // one line of '-' for an idle GPU
    }
    for (const GpuProcessSample* p : procs) {
      if (opt.format == MonitorFormat::json) {
        if (!p) continue;  // JSON lists processes only
        nlohmann::ordered_json row;
        row["time"] = monitor_json_time(cur.time_unix_ns);
        row["gpu"] = g.index;
        row["pid"] = p->pid;
        row["type"] = type_text(*p);
        for (const auto* c : cols) {
          const MonitorValue v = c->read.value(*p);
          row[std::string(c->name)] = v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
        }
        row["command"] = command_of(*p);
        // Slurm job, pod, container, rank of the local process the join matched (docs/cli.md).
        if (const ProcessSample* hp = host_process_of(cur, *p)) {
          if (auto a = attribution_json(hp->attribution); !a.empty()) row["attribution"] = std::move(a);
        }
        out += text::json_dump(row) + '\n';
        continue;
      }
      const std::string pid = p ? fmt::format("{}", p->pid) : "-";
      const std::string type = p ? type_text(*p) : "-";
      const std::string command = p ? command_of(*p) : "-";
      if (opt.format == MonitorFormat::smi_csv) {
        out += monitor_smi_csv_lead(opt, cur.time_unix_ns, g.index) + fmt::format(", {}, {}", pid, type);
        for (const auto* c : cols) out += ", " + monitor_cell(p ? c->read.value(*p) : std::nullopt);
        out += ", " + command + '\n';
        continue;
      }
      if (opt.format == MonitorFormat::csv) {
        out += monitor_csv_time_cells(opt, cur.time_unix_ns) + fmt::format("{}, {}, {}", g.index, pid, type);
        for (const auto* c : cols) out += ", " + monitor_cell(p ? c->read.value(*p) : std::nullopt);
        out += ", " + text::csv_smi(command) + '\n';
        continue;
      }
      out += monitor_row_lead(opt, cur.time_unix_ns, g.index);
      append_cell(out, pid, 11);
      append_cell(out, type, 6);
      for (const auto* c : cols) append_cell(out, text_cell(*c, p), 7);
      const std::size_t w = display_width(command);
      out += "    " + command + std::string(w < 15 ? 15 - w : 0, ' ') + '\n';
    }
  }
  return out;
}

std::vector<std::string> pmon_warnings(const Snapshot& cur, std::span<const std::size_t> order) {
  std::vector<std::string> out;
  for (std::size_t pos : order) {
    const GpuSample& g = cur.gpus.at(pos);
    if (std::string why = processes_unknown_text(g.process_count); !why.empty())
      out.push_back(fmt::format("GPU {}: {}", g.index, why));
  }
  return out;
}

}  // namespace trainmon::exp
