// SPDX-License-Identifier: Apache-2.0
// `trainmon dmon`: nvidia-smi dmon's per-device scrolling monitor (same columns), plus --json / --csv.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "trainmon/export/monitor_format.h"
#include "trainmon/export/query_fields.h"
#include "trainmon/sampler/sampler.h"

namespace trainmon::cli {
namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop = true; }

struct DmonCliOptions {
  std::string groups;
  unsigned delay_s = 1;
  long count = 0;
  std::string ids;
  std::string date_time;
  bool json = false;
  bool csv = false;
};

int run(const DmonCliOptions& o, const GlobalOptions& global) {
  auto groups = exp::parse_dmon_groups(o.groups);
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
  if (o.delay_s == 0) {
    std::fputs("trainmon dmon: -d must be at least 1 second\n", stderr);
    return kExitUsage;
  }
  SamplerOptions so;
  so.backend.library_path = global.nvml_library;
  so.backend.collect_processes = false;
  so.backend.collect_pcie_throughput = mo.groups.find('t') != std::string::npos;
  so.backend.collect_gpm = false;
  so.backend.watch_events = false;
  so.collect_host = false;
  Sampler sampler(so);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::optional<Snapshot> prev;
  long printed = 0;
  while (!g_stop && (o.count <= 0 || printed < o.count)) {
    const auto tick = std::chrono::steady_clock::now();
    Snapshot snap = sampler.sample();
    if (!snap.driver.loaded) {
      std::fprintf(stderr, "trainmon dmon: %s\n", snap.driver.error.c_str());
      return snap.driver.library_path.empty() ? kExitNoGpu : kExitNvmlError;
    }
    if (snap.gpus.empty()) {
      std::fputs("No devices were found\n", stderr);
      return kExitNoGpu;
    }
    auto order = exp::select_gpus(snap, o.ids);
    if (!order) {
      std::fprintf(stderr, "trainmon dmon: %s\n", order.error().c_str());
      return kExitUsage;
    }
    // nvidia-smi repeats the header every 20 lines' worth of samples on the text output.
    if (printed == 0 || (mo.format == exp::MonitorFormat::text && printed % 20 == 0))
      std::fputs(exp::dmon_header(mo).c_str(), stdout);
    std::fputs(exp::dmon_rows(mo, snap, prev ? &*prev : nullptr, *order).c_str(), stdout);
    std::fflush(stdout);
    prev = std::move(snap);
    ++printed;
    if (o.count > 0 && printed >= o.count) break;
    while (!g_stop && std::chrono::steady_clock::now() - tick < std::chrono::seconds(o.delay_s))
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return kExitOk;
}

Registrar reg{{"dmon", "per-device scrolling monitor (nvidia-smi dmon columns)",
               [](CLI::App& app, const GlobalOptions& global) -> Runner {
                 auto o = std::make_shared<DmonCliOptions>();
                 app.add_option("-s", o->groups, "metric groups p,u,c,v,m,e,t (default puc)");
                 app.add_option("-d", o->delay_s, "interval in seconds (default 1)");
                 app.add_option("-c", o->count, "stop after COUNT samples");
                 app.add_option("-i", o->ids, "GPUs: indexes, UUIDs or PCI bus ids, comma separated");
                 app.add_option("-o", o->date_time, "D: date column, T: time column");
                 app.add_flag("--json", o->json, "one JSON object per GPU per line");
                 app.add_flag("--csv", o->csv, "CSV with a header line");
                 return [o, &global] { return run(*o, global); };
               },
               30}};

}  // namespace
}  // namespace trainmon::cli
