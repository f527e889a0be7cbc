// SPDX-License-Identifier: Apache-2.0
// `trainmon status`: gpustat's job (one line per GPU, processes, --json), without Python's start-up.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "cli/option_checks.h"
#include "cli/output.h"
#include "trainmon/core/i18n.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/export/query_fields.h"
#include "trainmon/export/status.h"
#include "trainmon/export/terminal.h"
#include "trainmon/sampler/sampler.h"

namespace trainmon::cli {
namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) {
  g_stop = true;
}

struct StatusCliOptions {
  exp::StatusOptions view;
  bool json = false;
  bool no_color = false;
  bool force_color = false;
  bool no_header = false;
  double interval_s = 0;
  std::string ids;
  bool all_processes = false;
  bool show_all = false;
  // gpustat's options that take an optional value (argparse nargs='?'): one element, "" when the
  // option came without a value.
  std::vector<std::string> power, codec, interval;
  int gpuname_width = -1;  // -1: not given
};

/// gpustat's "-a": every column and process detail (cli.py: show_cmd, show_user, show_pid,
/// show_fan_speed, show_codec "enc,dec", show_power "draw,limit"); then the optional values.
void resolve_gpustat_options(StatusCliOptions& o) {
  if (o.show_all) {
    o.view.show_cmd = o.view.show_user = o.view.show_pid = o.view.show_fan = true;
    o.codec = {"enc,dec"};
    o.power = {"draw,limit"};
  }
  if (!o.power.empty()) {
    const std::string& p = o.power.front().empty() ? std::string("draw,limit") : o.power.front();
    o.view.show_power = true;
    o.view.power_draw_only = p.find("limit") == std::string::npos;
  }
  if (!o.codec.empty()) {
    const std::string& c = o.codec.front().empty() ? std::string("enc,dec") : o.codec.front();
    o.view.show_enc = c.find("enc") != std::string::npos;
    o.view.show_dec = c.find("dec") != std::string::npos;
  }
  if (!o.interval.empty()) o.interval_s = o.interval.front().empty() ? 1.0 : std::stod(o.interval.front());
  if (o.gpuname_width >= 0) o.view.gpuname_width = static_cast<std::size_t>(o.gpuname_width);
}

int run(StatusCliOptions o, const GlobalOptions& global) {
  resolve_gpustat_options(o);
  if (o.no_color && o.force_color) {
    std::fputs(i18n::tr("trainmon status: --no-color and --force-color exclude each other\n").data(), stderr);
    return kExitUsage;
  }
  const exp::TerminalInfo term = exp::probe_terminal(STDOUT_FILENO);
  const exp::ColorMode mode = o.force_color ? exp::ColorMode::always
                              : o.no_color  ? exp::ColorMode::never
                                            : exp::ColorMode::automatic;
  o.view.color = exp::use_color(mode, term);
  o.view.utf8 = term.utf8;
  o.view.columns = term.is_tty ? term.columns : 0;  // pipes and files are never cut
  o.view.show_header = !o.no_header;

  SamplerOptions so;
  so.backend.library_path = global.nvml_library;
  so.backend.collect_high_res_samples = false;
  so.backend.collect_pcie_throughput = o.json;
  so.backend.collect_gpm = false;
  so.backend.watch_events = false;
  so.host.proc_root = global.proc_root;
  so.host.sys_root = global.sys_root;
  if (!global.pod_logs_root.empty()) so.host.pod_logs_root = global.pod_logs_root;
  so.host.all_processes = o.all_processes;
  so.host.disks = so.host.nets = false;
  if (o.interval_s > 0)
    so.backend.tick_wait = tick_wait_for(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(o.interval_s)),
        so.backend.device_timeout);
  so.backend.init_wait = kGpuCommandInitWait;
  so.backend.first_tick_shared = true;  // one-shot: no thread per GPU at start (BackendOptions)
  so.backend.stop_requested = [] { return g_stop.load(); };
  // Before the sampler: a signal while the driver starts (a hung nvmlInit) ends the wait for it.
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  Sampler sampler(so);
  const bool redraw = o.interval_s > 0 && term.is_tty && !o.json;
  int rc = kExitOk;
  std::string reported_error;
  while (!g_stop) {
    const auto tick = std::chrono::steady_clock::now();
    Snapshot snap = sampler.sample();
    if ((o.json || o.view.show_full_cmd) && o.interval_s <= 0) {
      // Process CPU % needs two ticks (as gpustat's 0.1 s wait): sample again.
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      snap = sampler.sample();
    }
    std::string driver_error;
    if (!snap.driver.loaded) {
      driver_error = snap.driver.error.empty() ? "NVML is not available" : text::terminal(snap.driver.error);
      rc = snap.driver.library_path.empty() ? kExitNoGpu : kExitNvmlError;
    } else if (snap.gpus.empty()) {
      driver_error = "No devices were found";  // nvidia-smi's words
      rc = kExitNoGpu;
    }
    // No GPU at all: --id cannot match, and the reason is the driver (status 3 / 4), not the id.
    auto order = snap.gpus.empty() ? decltype(exp::select_gpus(snap, o.ids))(std::vector<std::size_t>{})
                                   : exp::select_gpus(snap, o.ids);
    if (!order) {
      std::fprintf(stderr, "trainmon status: %s\n", order.error().c_str());
      return kExitUsage;
    }
    const std::string text = o.json
                                 ? exp::status_json(snap, *order, o.all_processes, o.interval_s > 0 ? -1 : 4)
                                 : exp::status_text(snap, *order, o.view);
    // A reader that left (`status -i 1 | head`) ends the loop quietly; main reports other failures.
    if (write_out(stdout, redraw ? "\x1b[H\x1b[2J" + text : text) != WriteResult::ok) return rc;
    // The NVML error is said once on stderr (the header only shows the driver as N/A): once per
    // distinct message over the ticks of -i, or after every redraw, which clears the screen.
    if (!driver_error.empty() && (redraw || driver_error != reported_error))
      std::fprintf(stderr, "trainmon status: %s\n", driver_error.c_str());
    reported_error = driver_error;
    if (o.interval_s <= 0) break;
    while (!g_stop && std::chrono::steady_clock::now() - tick < std::chrono::duration<double>(o.interval_s))
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return rc;
}

Registrar reg{
    {"status", N_("one line per GPU with its processes (gpustat compatible, --json for scripts)"),
     [](CLI::App& app, const GlobalOptions& global) -> Runner {
       auto o = std::make_shared<StatusCliOptions>();
       app.add_flag("--json", o->json, tr("print JSON (a superset of gpustat --json)"));
       app.add_flag("-a,--show-all", o->show_all, tr("every column and process detail (-c -u -p -F -e -P)"));
       app.add_flag("-c,--show-cmd", o->view.show_cmd, tr("show each process's command"));
       app.add_flag("-f,--show-full-cmd", o->view.show_full_cmd,
                    tr("a line per process: pid, CPU %, host memory, full command line"));
       app.add_flag("-u,--show-user", o->view.show_user, tr("show the user even with --show-cmd"));
       app.add_flag("-p,--show-pid", o->view.show_pid, tr("show each process's pid"));
       app.add_option("-P,--show-power", o->power,
                      tr("power: draw, limit or draw,limit (the default without a value)"))
           ->expected(0, 1)
           ->check(one_of({"", "draw", "limit", "draw,limit", "limit,draw"}));
       app.add_flag("-F,--show-fan-speed,--show-fan", o->view.show_fan, tr("show fan speed"));
       app.add_option("-e,--show-codec", o->codec,
                      tr("encoder / decoder utilisation: enc, dec or enc,dec (the default)"))
           ->expected(0, 1)
           ->check(one_of({"", "enc", "dec", "enc,dec"}));
       app.add_flag("--no-processes", o->view.no_processes, tr("no process list"));
       app.add_flag("--no-color", o->no_color, tr("never colour (also: NO_COLOR)"));
       app.add_flag("--force-color,--color", o->force_color, tr("colour even on a pipe"));
       app.add_flag("--no-header", o->no_header, tr("no hostname / time / driver line"));
       app.add_option("-i,--interval,--watch", o->interval,
                      tr("redraw every SEC seconds (1 without a value) until Ctrl-C"))
           ->expected(0, 1)
           ->check(CLI::Validator(
               [check = loop_interval(kMaxLoopIntervalS, "seconds")](std::string& text) mutable {
                 return text.empty() ? std::string() : check(text);
               },
               "[SEC]", "optional loop_interval"));
       app.add_option("--id", o->ids, tr("GPUs: indexes, UUIDs or PCI bus ids, comma separated"));
       app.add_option("--gpuname-width", o->gpuname_width,
                      tr("name column width: names are cut to it from the left (0: no name column)"))
           ->check(CLI::Range(0, 1000));
       app.add_flag("--all-processes", o->all_processes, tr("include every host process in --json"));
       return [o, &global] { return run(*o, global); };
     },
     10}};

}  // namespace
}  // namespace trainmon::cli
