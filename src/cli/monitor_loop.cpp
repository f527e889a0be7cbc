// SPDX-License-Identifier: Apache-2.0
#include "cli/monitor_loop.h"

#include <unistd.h>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "cli/exit_codes.h"
#include "cli/option_checks.h"
#include "cli/output.h"
#include "trainmon/core/i18n.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/export/query_fields.h"

namespace trainmon::cli {
namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) {
  g_stop = true;
}

struct MonitorCliOptions {
  std::string groups;
  unsigned delay_s = 1;
  long count = 0;
  std::string ids;
  std::string date_time;
  bool json = false;
  bool csv = false;
  std::string smi_format;  ///< nvidia-smi's --format csv[,nounit][,noheader]
  std::string file;        ///< -f FILE
};

int run(const MonitorSpec& spec, const MonitorCliOptions& o, const GlobalOptions& global) {
  const char* name = spec.name.c_str();
  auto groups = spec.parse_groups(o.groups);
  if (!groups) {
    std::fprintf(stderr, "%s\n", groups.error().c_str());
    return kExitUsage;
  }
  exp::MonitorOptions mo;
  mo.groups = *groups;
  mo.format = o.json ? exp::MonitorFormat::json : o.csv ? exp::MonitorFormat::csv : exp::MonitorFormat::text;
  auto withdt = exp::parse_date_time(o.date_time, mo);
  if (!withdt) {
    std::fprintf(stderr, "%s\n", withdt.error().c_str());
    return kExitUsage;
  }
  mo = *withdt;
  if (!o.smi_format.empty()) {
    if (o.json || o.csv) {
      std::fputs(i18n::trf("trainmon {}: --format excludes --json and --csv\n", name).c_str(), stderr);
      return kExitUsage;
    }
    auto f = exp::parse_monitor_format(o.smi_format, mo);
    if (!f) {
      std::fprintf(stderr, "trainmon %s: %s\n", name, f.error().c_str());
      return kExitUsage;
    }
    mo = *f;
  }
  if (o.delay_s == 0) {
    std::fputs(i18n::trf("trainmon {}: -d must be at least 1 second\n", name).c_str(), stderr);
    return kExitUsage;
  }
  SamplerOptions so;
  so.backend.library_path = global.nvml_library;
  so.backend.collect_gpm = false;
  so.backend.watch_events = false;
  so.collect_host = false;
  // Roots for a command whose configure() turns the host on (pmon --json: attribution).
  so.host.proc_root = global.proc_root;
  so.host.sys_root = global.sys_root;
  if (!global.pod_logs_root.empty()) so.host.pod_logs_root = global.pod_logs_root;
  spec.configure(so, mo);
  so.backend.tick_wait = tick_wait_for(std::chrono::seconds(o.delay_s), so.backend.device_timeout);
  so.backend.init_wait = kGpuCommandInitWait;
  so.backend.stop_requested = [] { return g_stop.load(); };
  FILE* out = stdout;
  if (!o.file.empty()) {
    out = std::fopen(o.file.c_str(), "w");
    if (!out) {
      std::fputs(
          i18n::trf("trainmon {}: cannot open {} for writing: {}\n", name, o.file, std::strerror(errno))
              .c_str(),
          stderr);
      return kExitFailure;
    }
  }
  struct Closer {
    FILE* f;
    ~Closer() {
      if (f != stdout) std::fclose(f);
    }
  } closer{out};
  // Before the sampler: a signal while the driver starts (a hung nvmlInit) ends the wait for it.
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  Sampler sampler(so);
  std::map<std::string, bool> warned;  // spec.warnings lines said while they last
  std::optional<Snapshot> prev;
  long printed = 0;
  long rows_since_header = 0;
  while (!g_stop && (o.count <= 0 || printed < o.count)) {
    const auto tick = std::chrono::steady_clock::now();
    Snapshot snap = sampler.sample();
    if (!snap.driver.loaded) {
      std::fprintf(stderr, "trainmon %s: %s\n", name, text::terminal(snap.driver.error).c_str());
      return snap.driver.library_path.empty() ? kExitNoGpu : kExitNvmlError;
    }
    if (snap.gpus.empty()) {
      std::fputs("No devices were found\n", stderr);
      return kExitNoGpu;
    }
    auto order = exp::select_gpus(snap, o.ids);
    if (!order) {
      std::fprintf(stderr, "trainmon %s: %s\n", name, order.error().c_str());
      return kExitUsage;
    }
    const std::string rows = spec.rows(mo, snap, prev ? &*prev : nullptr, *order);
    const bool text_view = mo.format == exp::MonitorFormat::text;
    std::string text;
    if (text_view && spec.header_every_rows > 0) {
      // pmon: the header again after every header_every_rows rows, inside a sample if need be.
      std::size_t at = 0;
      while (at < rows.size()) {
        const std::size_t nl = std::min(rows.find('\n', at), rows.size() - 1);
        const bool first = printed == 0 && at == 0;
        if (first || rows_since_header >= spec.header_every_rows) {
          text += spec.header(mo);
          rows_since_header = 0;
        }
        text.append(rows, at, nl + 1 - at);
        ++rows_since_header;
        at = nl + 1;
      }
    } else {
      if (printed == 0 ||
          (text_view && spec.header_every_samples > 0 && printed % spec.header_every_samples == 0))
        text = spec.header(mo);
      text += rows;
    }
    // `trainmon dmon | head -1`: the reader left, we stop quietly (main reports other failures).
    const WriteResult written = write_out(out, text);
    if (written == WriteResult::failed && out != stdout) {  // -f FILE: a full disk is an error
      std::fputs(i18n::trf("trainmon {}: cannot write {}: {}\n", name, o.file, std::strerror(errno)).c_str(),
                 stderr);
      return kExitFailure;
    }
    if (written != WriteResult::ok) return kExitOk;
    // A tick may print nothing (pmon --json on idle GPUs): notice a reader that left all the same.
    if (out == stdout && text.empty() && reader_gone(STDOUT_FILENO)) return kExitOk;
    if (spec.warnings) {
      std::map<std::string, bool> now;
      for (auto& line : spec.warnings(snap, *order)) {
        if (!warned.contains(line)) std::fprintf(stderr, "trainmon %s: %s\n", name, line.c_str());
        now[std::move(line)] = true;
      }
      warned = std::move(now);
    }
    prev = std::move(snap);
    ++printed;
    if (o.count > 0 && printed >= o.count) break;
    while (!g_stop && std::chrono::steady_clock::now() - tick < std::chrono::seconds(o.delay_s))
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return kExitOk;
}

}  // namespace

Runner setup_monitor(CLI::App& app, const GlobalOptions& global, MonitorSpec spec) {
  auto o = std::make_shared<MonitorCliOptions>();
  app.add_option("-s", o->groups, tr(spec.groups_help));
  app.add_option("-d", o->delay_s, tr("interval in whole seconds (default 1)"))
      ->check(loop_interval(kMaxLoopIntervalS, "seconds"));
  app.add_option("-c", o->count, tr("stop after COUNT samples (at least 1; default: until Ctrl-C)"))
      ->check(sample_count());
  app.add_option("-i", o->ids, tr("GPUs: indexes, UUIDs or PCI bus ids, comma separated"));
  app.add_option("-o", o->date_time, tr("D: date column, T: time column"));
  auto* json = app.add_flag("--json", o->json, tr(spec.json_help));
  app.add_flag("--csv", o->csv, tr("CSV with a header line"))->excludes(json);  // one format: status 2
  app.add_option("--format", o->smi_format, tr("nvidia-smi's output format: csv[,nounit][,noheader]"));
  app.add_option("-f,--filename", o->file, tr("write to FILE instead of stdout"));
  auto s = std::make_shared<MonitorSpec>(std::move(spec));
  return [s, o, &global] { return run(*s, *o, global); };
}

}  // namespace trainmon::cli
