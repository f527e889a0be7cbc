// SPDX-License-Identifier: Apache-2.0
// `trainmon query`: nvidia-smi's --query-gpu / --query-compute-apps / --query-supported-clocks
// (byte-compatible CSV), -L and -q.
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "cli/option_checks.h"
#include "cli/output.h"
#include "trainmon/core/i18n.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/export/nvidia_smi_views.h"
#include "trainmon/export/processes_unknown.h"
#include "trainmon/export/query_fields.h"
#include "trainmon/sampler/sampler.h"

namespace trainmon::cli {
namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) {
  g_stop = true;
}

struct QueryOptions {
  std::string query_gpu;
  std::string query_apps;
  std::string query_clocks;  ///< --query-supported-clocks
  bool list_gpus = false;    ///< -L
  bool query_text = false;   ///< -q
  std::string display;       ///< -d TYPE[,TYPE...] with -q
  std::string format = "csv";
  std::string ids;
  double loop_s = 0;
  long loop_ms = 0;
  std::string file;
  bool help_gpu = false;
  bool help_apps = false;
  bool help_clocks = false;
};

int run(const QueryOptions& o, const GlobalOptions& global) {
  if (o.help_gpu) {
    std::fputs(exp::help_query_gpu().c_str(), stdout);
    return kExitOk;
  }
  if (o.help_apps) {
    std::fputs(exp::help_query_compute_apps().c_str(), stdout);
    return kExitOk;
  }
  if (o.help_clocks) {
    std::fputs(exp::help_query_supported_clocks().c_str(), stdout);
    return kExitOk;
  }
  const int modes =
      !o.query_gpu.empty() + !o.query_apps.empty() + !o.query_clocks.empty() + o.list_gpus + o.query_text;
  if (modes != 1) {
    std::fputs(
        "trainmon query: give exactly one of --query-gpu=FIELDS, --query-compute-apps=FIELDS, "
        "--query-supported-clocks=FIELDS, -L or -q\n",
        stderr);
    return kExitUsage;
  }
  auto fmt = exp::parse_csv_format(o.format);
  if (!fmt) {
    std::fprintf(stderr, "%s\n", fmt.error().c_str());
    return kExitUsage;
  }
  // Unknown fields: nvidia-smi's exact message on stdout, then a blank line, exit status 2.
  exp::GpuQuery gq;
  exp::AppQuery aq;
  if (!o.query_gpu.empty()) {
    auto q = exp::parse_gpu_query(o.query_gpu);
    if (!q) {
      std::printf("%s\n\n", q.error().c_str());
      return kExitUsage;
    }
    gq = *q;
  } else if (!o.query_apps.empty()) {
    auto q = exp::parse_app_query(o.query_apps);
    if (!q) {
      std::printf("%s\n\n", q.error().c_str());
      return kExitUsage;
    }
    aq = *q;
  }
  unsigned display = exp::kQueryDisplayAll;
  if (!o.display.empty()) {
    auto d = exp::parse_query_display(o.display);
    if (!o.query_text || !d) {
      std::fprintf(stderr, "trainmon query: %s\n",
                   !o.query_text ? i18n::tr("-d/--display selects sections of -q: give -q with it").data()
                                 : text::terminal(d.error()).c_str());
      return kExitUsage;
    }
    display = *d;
  }
  std::vector<const exp::ClockField*> cq;
  if (!o.query_clocks.empty()) {
    auto q = exp::parse_clock_query(o.query_clocks);
    if (!q) {
      std::printf("%s\n\n", q.error().c_str());
      return kExitUsage;
    }
    cq = *q;
  }
  FILE* out = stdout;
  if (!o.file.empty()) {
    out = std::fopen(o.file.c_str(), "w");
    if (!out) {
      std::fputs(i18n::trf("trainmon query: cannot open {} for writing\n", o.file).c_str(), stderr);
      return kExitFailure;
    }
  }
  SamplerOptions so;
  so.backend.library_path = global.nvml_library;
  so.backend.collect_processes = !o.query_apps.empty() || o.query_text;
  so.backend.collect_pcie_throughput = o.query_text && display == exp::kQueryDisplayAll;  // -q's PCI rows
  so.backend.collect_extended = !o.query_gpu.empty() || o.query_text;
  so.backend.collect_supported_clocks =
      !o.query_clocks.empty() ||
      (o.query_text && display != exp::kQueryDisplayAll && (display & exp::kQdSupportedClocks) != 0);
  so.backend.collect_gpm = false;
  so.backend.watch_events = false;
  so.host.proc_root = global.proc_root;
  so.host.sys_root = global.sys_root;
  if (!global.pod_logs_root.empty()) so.host.pod_logs_root = global.pod_logs_root;
  so.host.disks = so.host.nets = false;
  so.collect_host = false;
  const std::chrono::milliseconds period =
      o.loop_ms > 0 ? std::chrono::milliseconds(o.loop_ms)
                    : std::chrono::milliseconds(static_cast<long>(o.loop_s * 1000.0));
  if (period.count() > 0) so.backend.tick_wait = tick_wait_for(period, so.backend.device_timeout);
  so.backend.init_wait = kGpuCommandInitWait;
  so.backend.first_tick_shared = true;  // one-shot: no thread per GPU at start (BackendOptions)
  so.backend.stop_requested = [] { return g_stop.load(); };
  // Before the sampler: a signal while the driver starts (a hung nvmlInit) ends the wait for it.
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  Sampler sampler(so);
  bool first = true;
  int rc = kExitOk;
  std::map<unsigned, std::string> reported_unknown;  // per GPU: said once while it stays the same
  while (!g_stop) {
    const auto tick = std::chrono::steady_clock::now();
    const Snapshot snap = sampler.sample();
    if (!snap.driver.loaded) {
      std::fprintf(
          stderr, "trainmon query: %s\n",
          snap.driver.error.empty() ? "NVML is not available" : text::terminal(snap.driver.error).c_str());
      rc = snap.driver.library_path.empty() ? kExitNoGpu : kExitNvmlError;
      break;
    }
    if (snap.gpus.empty()) {
      std::fputs("No devices were found\n", stdout);
      rc = kExitNoGpu;
      break;
    }
    auto order = exp::select_gpus(snap, o.ids);
    if (!order) {
      std::fprintf(stderr, "trainmon query: %s\n", order.error().c_str());
      rc = kExitUsage;
      break;
    }
    const std::string text = o.list_gpus    ? exp::list_gpus_text(snap, *order)
                             : o.query_text ? exp::query_text(snap, *order, display)
                             : !o.query_clocks.empty()
                                 ? exp::csv_query_supported_clocks(cq, *fmt, snap, *order, first)
                             : o.query_gpu.empty() ? exp::csv_query_apps(aq, *fmt, snap, *order, first)
                                                   : exp::csv_query_gpu(gq, *fmt, snap, *order, first);
    if (const WriteResult w = write_out(out, text); w != WriteResult::ok) {
      // A reader that left (`query -l 1 | head -2`) is no failure; a full disk under -f is.
      if (w == WriteResult::failed && out != stdout) {
        std::fputs(i18n::trf("trainmon query: cannot write {}: {}\n", o.file, std::strerror(errno)).c_str(),
                   stderr);
        rc = kExitFailure;
      }
      break;
    }
    if (!o.query_apps.empty()) {
      // The CSV row of a GPU whose process lists failed says only "[N/A]"-style words: why, here.
      for (std::size_t pos : *order) {
        const auto& g = snap.gpus[pos];
        std::string why = exp::processes_unknown_text(g.process_count);
        if (why.empty() || why == reported_unknown[g.index]) continue;
        std::fprintf(stderr, "trainmon query: GPU %u: %s\n", g.index, why.c_str());
        reported_unknown[g.index] = std::move(why);
      }
    }
    first = false;
    if (period.count() <= 0) break;
    while (!g_stop && std::chrono::steady_clock::now() - tick < period)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (out != stdout) std::fclose(out);
  return rc;
}

Registrar reg{
    {"query", N_("nvidia-smi compatible --query-gpu / --query-compute-apps CSV"),
     [](CLI::App& app, const GlobalOptions& global) -> Runner {
       auto o = std::make_shared<QueryOptions>();
       app.add_option("--query-gpu", o->query_gpu, tr("comma list of GPU fields (see --help-query-gpu)"));
       app.add_option("--query-compute-apps", o->query_apps, tr("comma list of compute process fields"));
       app.add_option("--query-supported-clocks", o->query_clocks,
                      tr("comma list of clock fields: timestamp, gpu_name, gpu_bus_id, gpu_serial, gpu_uuid, "
                         "memory (mem), graphics (gr)"));
       app.add_flag("-L,--list-gpus", o->list_gpus,
                    tr("list the GPUs and their MIG devices, as nvidia-smi -L"));
       app.add_flag("-q,--query", o->query_text, tr("the nvidia-smi -q text for the values trainmon reads"));
       app.add_option(
           "-d,--display", o->display,
           tr("with -q: only these sections, comma separated (MEMORY, UTILIZATION, ECC, TEMPERATURE, "
              "POWER, CLOCK, COMPUTE, PIDS, PERFORMANCE, SUPPORTED_CLOCKS, PAGE_RETIREMENT, ACCOUNTING, "
              "ENCODER_STATS, ROW_REMAPPER, ... as nvidia-smi -d)"));
       app.add_option("--format", o->format, tr("csv[,noheader][,nounits]"))->capture_default_str();
       app.add_option("-i,--id", o->ids, tr("GPUs: indexes, UUIDs or PCI bus ids, comma separated"));
       app.add_option("-l,--loop", o->loop_s, tr("repeat every SEC seconds until Ctrl-C"))
           ->check(loop_interval(kMaxLoopIntervalS, "seconds"));
       app.add_option("--lms,--loop-ms", o->loop_ms, tr("repeat every MS milliseconds until Ctrl-C"))
           ->check(loop_interval(kMaxLoopIntervalS * 1000, "milliseconds"));
       app.add_option("-f,--filename", o->file, tr("write to FILE instead of stdout"));
       app.add_flag("--help-query-gpu", o->help_gpu, tr("list the --query-gpu fields"));
       app.add_flag("--help-query-compute-apps", o->help_apps, tr("list the --query-compute-apps fields"));
       app.add_flag("--help-query-supported-clocks", o->help_clocks,
                    tr("list the --query-supported-clocks fields"));
       return [o, &global] { return run(*o, global); };
     },
     20}};

}  // namespace
}  // namespace trainmon::cli
