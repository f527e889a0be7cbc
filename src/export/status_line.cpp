// SPDX-License-Identifier: Apache-2.0
// gpustat-style text: "[0] NVIDIA H200      | 52°C, 100 % | 32362 / 143771 MB | root(2566M) ..."
// Layout follows gpustat (MIT) print_to(); colours are ours: by level, never on pipes.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "trainmon/core/units.h"
#include "trainmon/export/attribution.h"
#include "trainmon/export/processes_unknown.h"
#include "trainmon/export/status.h"

namespace trainmon::exp {

namespace {

constexpr const char* kReset = "\x1b[0m";
constexpr const char* kCyan = "\x1b[36m";
constexpr const char* kBlue = "\x1b[34m";
constexpr const char* kGreen = "\x1b[32m";
constexpr const char* kBoldGreen = "\x1b[1;32m";
constexpr const char* kYellow = "\x1b[33m";
constexpr const char* kBoldYellow = "\x1b[1;33m";
constexpr const char* kBoldRed = "\x1b[1;31m";
constexpr const char* kMagenta = "\x1b[35m";
constexpr const char* kGray = "\x1b[90m";
constexpr const char* kBoldWhite = "\x1b[1;37m";

struct Painter {
  bool on;
  std::string operator()(std::string_view color, std::string_view text) const {
    if (!on) return std::string(text);
    return fmt::format("{}{}{}", color, text, kReset);
  }
};

template <class T>
std::string or_unknown(const Reading<T>& r, int width) {
  return r.ok() ? fmt::format("{:>{}}", *r, width) : fmt::format("{:>{}}", "??", width);
}

std::string name_cell(std::string_view name, std::size_t width) {
  const std::size_t w = display_width(name);
  if (w > width) return truncate_display(name, width);
  return std::string(name) + std::string(width - w, ' ');
}

/// gpustat 1.1's util.shorten_left: a name wider than `width` keeps its last width - 1 columns after
/// a "…" ("…orce RTX 2080 SUPER"), so that the model number stays visible; never splits a character.
std::string shorten_left(std::string_view name, std::size_t width, bool utf8) {
  if (width == 0) return {};
  if (display_width(name) <= width) return std::string(name);
  const std::string_view mark = utf8 ? "\u2026" : "~";
  std::size_t at = 0;
  while (at < name.size() && display_width(name.substr(at)) > width - 1) {
    ++at;
    while (at < name.size() && (static_cast<unsigned char>(name[at]) & 0xC0) == 0x80) ++at;  // continuation
  }
  return std::string(mark) + std::string(name.substr(at));
}

/// gpustat's util.bytes2human: bytes halved by 1024 while above 9999 ("117MB", "2GB").
std::string bytes2human(std::uint64_t bytes) {
  static constexpr const char* kSuffixes[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  std::size_t suffix = 0;
  while (bytes > 9999 && suffix + 1 < std::size(kSuffixes)) {
    bytes >>= 10;
    ++suffix;
  }
  return fmt::format("{}{}", bytes, kSuffixes[suffix]);
}

/// The GPU's processes in the driver's order (compute list, then graphics), as gpustat lists them;
/// the snapshot keeps them by pid.
std::vector<const GpuProcessSample*> processes_of(const Snapshot& snap, unsigned gpu_index) {
  std::vector<const GpuProcessSample*> out;
  for (const auto& p : snap.gpu_processes)
    if (p.gpu_index == gpu_index) out.push_back(&p);
  std::stable_sort(out.begin(), out.end(),
                   [](const auto* a, const auto* b) { return a->list_position < b->list_position; });
  return out;
}

/// `index_digits`: the widest index shown, so that "[9]" and "[10]" start their names in one column.
std::string gpu_line(const Snapshot& snap, const GpuSample& g, const StatusOptions& opt,
                     std::size_t name_width, std::size_t index_digits) {
  const Painter paint{opt.color};
  const std::string raw_name = g.info && g.info->name.ok() ? *g.info->name : std::string("??");
  const std::string index = fmt::format("{}", g.index);
  std::string line = paint(kCyan, "[" + index + "]") +
                     std::string(1 + (index_digits > index.size() ? index_digits - index.size() : 0), ' ');
  if (name_width > 0) {  // --gpuname-width 0: no name column, as gpustat
    // Cut from the left as gpustat does when --gpuname-width asks for it; a narrow terminal alone cuts
    // the end (name_cell), as every view does.
    const std::string name = terminal_text(raw_name, opt.utf8);
    line += paint(kBlue, name_cell(opt.gpuname_width ? shorten_left(name, name_width, opt.utf8) : name,
                                   name_width)) +
            " |";
  }
  if (!g.responsive.ok() && g.responsive.status != ReadStatus::not_collected) {
    // A lost or hung GPU: say so instead of printing stale or zero numbers.
    line += " " + paint(kBoldRed, fmt::format("GPU {}", read_status_name(g.responsive.status))) + " |";
    return line;
  }
  const auto& temp = g.temperature_gpu_c;
  const char* tcol = !temp.ok()                             ? kGray
                     : temp_level(*temp) == TempLevel::cool ? kGreen
                     : temp_level(*temp) == TempLevel::warm ? kYellow
                                                            : kBoldRed;
  line += paint(tcol, or_unknown(temp, 3) + std::string(degree_sign(opt.utf8)) + "C") + ", ";
  if (opt.show_fan) line += paint(kCyan, or_unknown(g.fan_speed_pct, 3) + " %") + ", ";
  const auto& util = g.utilization_gpu_pct;
  line += paint(util.ok() && *util >= 30 ? kBoldGreen : kGreen, or_unknown(util, 3) + " %");
  if (opt.show_enc || opt.show_dec) {
    std::vector<std::string> parts;
    if (opt.show_enc) parts.push_back("E: " + paint(kGreen, or_unknown(g.utilization_encoder_pct, 3) + " %"));
    if (opt.show_dec) parts.push_back("D: " + paint(kGreen, or_unknown(g.utilization_decoder_pct, 3) + " %"));
    line += " (" + fmt::format("{}", fmt::join(parts, "  ")) + ")";
  }
  if (opt.show_power) {
    auto w = [](const Reading<unsigned>& r) {
      return r.ok() ? fmt::format("{:>3}", *r / 1000) : std::string(" ??");
    };
    // gpustat 1.1: "-P draw" prints the draw alone, without a unit; any "limit" adds " / limit W".
    line += ",  " + paint(kMagenta, w(g.power_draw_mw));
    if (!opt.power_draw_only) line += " / " + paint(kMagenta, w(g.enforced_power_limit_mw)) + " W";
  }
  const auto& total_r =
      g.memory_total_bytes.ok() || !g.info ? g.memory_total_bytes : g.info->memory_total_bytes;
  std::string used =
      g.memory_used_bytes.ok() ? fmt::format("{:>5}", bytes_to_mib(*g.memory_used_bytes)) : "   ??";
  std::string total = total_r.ok() ? fmt::format("{:>5}", bytes_to_mib(*total_r)) : "   ??";
  const bool nearly_full = g.memory_used_bytes.ok() && total_r.ok() && *total_r > 0 &&
                           static_cast<double>(*g.memory_used_bytes) / static_cast<double>(*total_r) >= 0.9;
  line += " | " + paint(nearly_full ? kBoldRed : kBoldYellow, used) + " / " + paint(kYellow, total) + " MB";
  if (opt.no_processes) return line;
  line += " |";

  for (const GpuProcessSample* pp : processes_of(snap, g.index)) {
    const GpuProcessSample& p = *pp;
    const ProcessSample* hp = host_process_of(snap, p);  // never another namespace's same number
    std::string r;
    if (!opt.show_cmd || opt.show_user)
      r += paint(kGray, terminal_text(hp && !hp->user.empty() ? hp->user : std::string("--"), opt.utf8));
    if (opt.show_cmd) {
      if (!r.empty()) r += ':';
      std::string cmd;
      if (hp && !hp->cmdline.empty()) {
        cmd = std::string(path_basename(hp->cmdline.substr(0, hp->cmdline.find(' '))));
      } else if (hp && !hp->comm.empty()) {
        cmd = hp->comm;
      } else if (p.process_name.ok()) {
        cmd = std::string(path_basename(*p.process_name));
      } else {
        cmd = "--";
      }
      r += paint(kCyan, terminal_text(cmd, opt.utf8));
    }
    if (opt.show_pid) r += fmt::format("/{}", p.pid);
    // The process's job ("[slurm:4242]", "[pod:ns/name]"): only for a process that has one, so a
    // machine without Slurm, Kubernetes or containers prints what gpustat prints.
    if (hp) {
      if (const std::string job = shown_job(hp->attribution, snap.host.own_container_id); !job.empty())
        r += paint(kMagenta, "[" + terminal_text(job, opt.utf8) + "]");
    }
    r += "(" +
         paint(kYellow,
               p.used_memory_bytes.ok() ? fmt::format("{}M", bytes_to_mib(*p.used_memory_bytes)) : "?M") +
         ")";
    line += " " + r;
  }
  // A failed list is not an empty one: the memory above is held by processes nobody could name.
  if (const std::string unknown = processes_unknown_text(g.process_count); !unknown.empty())
    line += " " + paint(kBoldRed, terminal_text(unknown, opt.utf8));
  return line;
}

/// -f / --show-full-cmd: one line per process under its GPU's line, as gpustat's full_process_info():
/// " ├─ {pid:>6} ({cpu:4.0f}%, {host memory:>6}): {command line}", the last one with "└─".
std::vector<std::string> full_cmd_lines(const Snapshot& snap, const GpuSample& g, const StatusOptions& opt) {
  std::vector<std::string> out;
  if (opt.no_processes || !opt.show_full_cmd) return out;
  if (!g.responsive.ok() && g.responsive.status != ReadStatus::not_collected) return out;
  const Painter paint{opt.color};
  for (const GpuProcessSample* pp : processes_of(snap, g.index)) {
    const GpuProcessSample& p = *pp;
    const ProcessSample* hp = host_process_of(snap, p);
    const std::string cpu =
        hp && hp->cpu_pct.ok() ? fmt::format("{:4.0f}", *hp->cpu_pct) : std::string("  --");
    const std::string mem = bytes2human(hp && hp->rss_bytes.ok() ? *hp->rss_bytes : 0);
    std::string cmd = hp && !hp->cmdline.empty() ? hp->cmdline
                      : hp && !hp->comm.empty()  ? hp->comm
                      : p.process_name.ok()      ? *p.process_name
                                                 : std::string("?");
    cmd = terminal_text(cmd, opt.utf8);
    // The program's basename stands out (gpustat's prettify_commandline).
    const std::size_t end = std::min(cmd.find(' '), cmd.size());
    const std::size_t slash = cmd.rfind('/', end == 0 ? 0 : end - 1);
    const std::size_t base = slash == std::string::npos || slash >= end ? 0 : slash + 1;
    const std::string shown = paint(kGray, cmd.substr(0, base)) + paint(kCyan, cmd.substr(base, end - base)) +
                              paint(kGray, cmd.substr(end));
    std::string job = hp ? shown_job(hp->attribution, snap.host.own_container_id, true) : std::string();
    if (!job.empty()) job = paint(kMagenta, "[" + terminal_text(job, opt.utf8) + "]") + " ";
    out.push_back(fmt::format(" {} {:>6} ({}%, {}): {}{}", opt.utf8 ? "\u251c\u2500" : "|-", p.pid,
                              paint(kGreen, cpu), paint(kYellow, fmt::format("{:>6}", mem)), job, shown));
  }
  if (!out.empty() && opt.utf8) {
    std::string& last = out.back();
    last.replace(last.find("\u251c"), std::string_view("\u251c").size(), "\u2514");
  } else if (!out.empty()) {
    out.back().replace(out.back().find("|-"), 2, "`-");
  }
  return out;
}

}  // namespace

TempLevel temp_level(unsigned celsius) noexcept {
  if (celsius < 50) return TempLevel::cool;
  if (celsius < 80) return TempLevel::warm;
  return TempLevel::hot;
}

std::string status_text(const Snapshot& snap, std::span<const std::size_t> order, const StatusOptions& opt) {
  // gpustat 1.1: the longest name unless --gpuname-width says otherwise (then names are cut to it).
  std::size_t name_width = 0;
  if (opt.gpuname_width) {
    name_width = *opt.gpuname_width;
  } else {
    for (std::size_t pos : order) {
      const auto& g = snap.gpus.at(pos);
      name_width = std::max(name_width, display_width(terminal_text(
                                            g.info && g.info->name.ok() ? *g.info->name : "??", opt.utf8)));
    }
  }
  std::size_t index_digits = 1;
  for (std::size_t pos : order)
    index_digits = std::max(index_digits, fmt::format("{}", snap.gpus.at(pos).index).size());
  std::vector<std::string> lines;
  auto build = [&](std::size_t width) {
    lines.clear();
    for (std::size_t pos : order)
      lines.push_back(gpu_line(snap, snap.gpus.at(pos), opt, width, index_digits));
  };
  build(name_width);
  if (opt.columns > 0 && name_width > 4) {
    // Narrow terminal: give up name columns first (down to 4), then cut each line; never wrap.
    std::size_t widest_overflow = 0;
    for (const auto& l : lines) {
      const std::size_t w = display_width(l);
      if (w > opt.columns) widest_overflow = std::max(widest_overflow, w - opt.columns);
    }
    if (widest_overflow > 0)
      build(std::max<std::size_t>(4, name_width > widest_overflow ? name_width - widest_overflow : 4));
  }
  std::string out;
  const Painter paint{opt.color};
  if (opt.show_header) {
    const std::string host = snap.host.hostname.empty() ? std::string("localhost") : snap.host.hostname;
    std::string ts = nvidia_smi_timestamp(snap.time_unix_ns);  // YYYY/MM/DD HH:MM:SS.mmm
    ts = ts.substr(0, 4) + "-" + ts.substr(5, 2) + "-" + ts.substr(8, 2) + " " + ts.substr(11, 8);
    std::string header =
        paint(kBoldWhite, fmt::format("{:<{}}", terminal_text(host, opt.utf8),
                                      (name_width == 0 ? 16 : name_width) + 2 + index_digits)) +
        "  " + ts + "  " +
        paint(kGray, snap.driver.driver_version.ok() ? terminal_text(*snap.driver.driver_version, opt.utf8)
                                                     : std::string("N/A"));
    // No NVML: the driver shows as N/A; the callers say why on stderr, once (not twice on a terminal).
    lines.insert(lines.begin(), header);
  }
  std::size_t gpu_at = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    auto emit = [&](std::string l) {
      if (opt.columns > 0 && display_width(l) > opt.columns) l = truncate_display(l, opt.columns);
      out += l + '\n';
    };
    emit(lines[i]);
    if (opt.show_header && i == 0) continue;
    if (gpu_at < order.size())
      for (auto& l : full_cmd_lines(snap, snap.gpus.at(order[gpu_at++]), opt)) emit(std::move(l));
  }
  return out;
}

}  // namespace trainmon::exp
