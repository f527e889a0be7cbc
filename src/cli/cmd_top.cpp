// SPDX-License-Identifier: Apache-2.0
// `trainmon top`: the live dashboard (nvitop / nvtop / htop in one screen). On a terminal that
// cannot be driven (TERM unset or dumb, or not a terminal at all) it prints the `status -i` view.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "cli/option_checks.h"
#include "cli/output.h"
#include "cli/parse_errors.h"
#include "trainmon/cluster/cluster_view.h"
#include "trainmon/core/i18n.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/export/query_fields.h"
#include "trainmon/export/status.h"
#include "trainmon/export/terminal.h"
#include "trainmon/store/db_path.h"
#include "trainmon/tui/app.h"

namespace trainmon::cli {
namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) {
  g_stop = true;
}

struct TopCliOptions {
  double interval_s = 1.0;
  bool no_color = false;
  bool ascii = false;
  bool no_diagnose = false;
  std::string db;
  int iterations = 0;
  std::string prometheus;     ///< base URL: the cluster from Prometheus instead of this machine
  std::string job;            ///< with --prometheus: only this job
  double stale_after_s = 30;  ///< with --prometheus: a node silent this long is marked stale
  double timeout_s = 2;       ///< with --prometheus: one request's limit (under top's 3 s quit wait)
  bool timeout_given = false;
};

SamplerOptions sampler_options(const GlobalOptions& global) {
  SamplerOptions so;
  so.backend.library_path = global.nvml_library;
  so.backend.collect_high_res_samples = false;
  so.backend.collect_pcie_throughput = true;
  so.backend.collect_gpm = false;
  so.backend.watch_events = true;  // Xid / ECC findings live (one zero-timeout poll per tick)
  so.host.proc_root = global.proc_root;
  so.host.sys_root = global.sys_root;
  if (!global.pod_logs_root.empty()) so.host.pod_logs_root = global.pod_logs_root;
  return so;
}

/// The cluster frame as `status` text: the header once (Prometheus, node and GPU counts, the time,
/// the nodes' driver version), then one line per GPU that starts with its job and node, and
/// "STALE 45s" for a stale node (ClusterFrame's group, as the TUI's rows), padded to one width.
std::string cluster_text(const cluster::ClusterFrame& f, const std::vector<std::size_t>& order,
                         const exp::StatusOptions& view) {
  const std::string text = exp::status_text(f.snapshot, order, view);
  std::vector<std::string> lines;
  for (std::size_t at = 0; at < text.size();) {
    const auto nl = text.find('\n', at);
    lines.push_back(text.substr(at, nl == std::string::npos ? std::string::npos : nl - at));
    at = nl == std::string::npos ? text.size() : nl + 1;
  }
  if (lines.size() != f.snapshot.gpus.size() + 1) return text;  // not one line per GPU: as it is
  std::size_t width = 0;
  for (const auto& g : f.snapshot.gpus) width = std::max(width, g.info ? g.info->group.size() : 0);
  std::string out = lines[0] + "\n";
  for (std::size_t i = 0; i < f.snapshot.gpus.size(); ++i) {
    const auto& g = f.snapshot.gpus[i];
    out += fmt::format("{:<{}}  {}\n", g.info ? g.info->group : std::string(), width, lines[i + 1]);
  }
  return out;
}

// --prometheus without a usable terminal: the cluster as `status` text, every interval.
int run_cluster_fallback(const TopCliOptions& o, const cluster::ClusterOptions& co,
                         const exp::TerminalInfo& term) {
  exp::StatusOptions view;
  view.show_power = true;
  view.utf8 = term.utf8 && !o.ascii;
  view.columns = 0;  // the job and node go in front of each line (cluster_text)
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  bool failed = false;         // the last frame could not be read whole (Prometheus unreachable, an error)
  bool job_not_found = false;  // the last frame: --job names no job Prometheus has
  for (int n = 0; !g_stop && (o.iterations <= 0 || n < o.iterations); ++n) {
    const auto tick = std::chrono::steady_clock::now();
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    const auto f = cluster::read_cluster(co, now);
    std::string frame = n > 0 ? "\n" : "";
    std::vector<std::size_t> order(f.snapshot.gpus.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    job_not_found = f.job_not_found;
    failed = !f.error.empty() && !f.job_not_found;
    if (!f.error.empty()) std::fprintf(stderr, "trainmon top: %s\n", text::terminal(f.error).c_str());
    if (f.snapshot.driver.loaded) {
      frame += cluster_text(f, order, view);
      for (const auto& run : f.runs)
        for (const auto& x : run.findings)
          frame += fmt::format("[{}] {} {}: {}\n", run.name, x.code, x.title, x.evidence);
      for (const auto& x : f.findings) frame += fmt::format("{} {}: {}\n", x.code, x.title, x.evidence);
    }
    // A reader that left (`top --prometheus URL | head -1`) ends the loop quietly, status 0; main
    // reports any other failure to write.
    if (const WriteResult w = write_out(stdout, frame); w != WriteResult::ok) return kExitOk;
    if (frame.empty() && reader_gone(STDOUT_FILENO)) return kExitOk;
    if (o.iterations > 0 && n + 1 >= o.iterations) break;
    while (!g_stop && std::chrono::steady_clock::now() - tick < std::chrono::duration<double>(o.interval_s))
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return job_not_found ? kExitUsage : failed ? kExitFailure : kExitOk;
}

// TERM unset or dumb, or not a terminal: the `status -i` text, appended every interval.
int run_fallback(const TopCliOptions& o, const GlobalOptions& global, const exp::TerminalInfo& term) {
  exp::StatusOptions view;
  view.show_power = view.show_pid = true;
  view.utf8 = term.utf8 && !o.ascii;
  view.columns = term.is_tty ? term.columns : 0;
  SamplerOptions so = sampler_options(global);
  so.backend.tick_wait = tick_wait_for(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(o.interval_s)),
      so.backend.device_timeout);
  so.backend.init_wait = so.backend.tick_wait;
  so.backend.stop_requested = [] { return g_stop.load(); };
  // Before the sampler: a signal while the driver starts (a hung nvmlInit) ends the wait for it.
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  Sampler sampler(so);
  for (int n = 0; !g_stop && (o.iterations <= 0 || n < o.iterations); ++n) {
    const auto tick = std::chrono::steady_clock::now();
    const Snapshot snap = sampler.sample();
    if (!snap.driver.loaded && n == 0)
      std::fprintf(
          stderr, "trainmon top: %s (host only)\n",
          snap.driver.error.empty() ? "NVML is not available" : text::terminal(snap.driver.error).c_str());
    std::vector<std::size_t> order(snap.gpus.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    // A reader that left (`top | head -1`) ends the loop quietly, status 0; main reports any other
    // failure to write.
    if (const WriteResult w = write_out(stdout, (n > 0 ? "\n" : "") + exp::status_text(snap, order, view));
        w != WriteResult::ok)
      return kExitOk;
    if (o.iterations > 0 && n + 1 >= o.iterations) break;
    while (!g_stop && std::chrono::steady_clock::now() - tick < std::chrono::duration<double>(o.interval_s))
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return kExitOk;
}

int run(const TopCliOptions& o, const GlobalOptions& global) {
  if (!(o.interval_s >= 0.1 && o.interval_s <= 10)) {
    std::fputs(i18n::tr("trainmon top: --interval must be between 0.1 and 10 seconds\n").data(), stderr);
    return kExitUsage;
  }
  std::optional<cluster::ClusterOptions> co;
  if ((!o.job.empty() || o.timeout_given) && o.prometheus.empty()) {
    std::fputs(i18n::tr("trainmon top: --job and --timeout need --prometheus URL\n").data(), stderr);
    return kExitUsage;
  }
  if (!o.prometheus.empty()) {
    auto url = cluster::normalize_base_url(o.prometheus);
    if (!url) {
      std::fprintf(stderr, "trainmon top: --prometheus '%s': %s\n", text::terminal(o.prometheus).c_str(),
                   said(url.error()).c_str());
      return kExitUsage;
    }
    co.emplace();
    co->endpoint.base_url = *url;
    co->endpoint.timeout_s = o.timeout_s;
    co->job = o.job;
    co->stale_after_s = o.stale_after_s;
  }
  const exp::TerminalInfo term = exp::probe_terminal(STDOUT_FILENO);
  if (!term.is_tty || term.dumb || !::isatty(STDIN_FILENO))
    return co ? run_cluster_fallback(o, *co, term) : run_fallback(o, global, term);
  tui::TopOptions t;
  t.cluster = co;
  t.sampler = sampler_options(global);
  t.interval_ms = static_cast<int>(o.interval_s * 1000 + 0.5);
  t.sampler.backend.tick_wait =
      tick_wait_for(std::chrono::milliseconds(t.interval_ms), t.sampler.backend.device_timeout);
  t.sampler.backend.init_wait = t.sampler.backend.tick_wait;
  t.utf8 = term.utf8 && !o.ascii;
  // A terminal that cannot draw the translation (no UTF-8 locale, --ascii) reads English rather
  // than rows of '?' (before run_top starts any thread: core/i18n.h).
  if (!t.utf8 && !i18n::language().empty()) i18n::init("en");
  t.color = exp::use_color(o.no_color ? exp::ColorMode::never : exp::ColorMode::automatic, term);
  t.diagnose = !o.no_diagnose;
  t.db_path = store::resolve_db_path(o.db);
  const int rc = tui::run_top(t);
  if (rc == tui::kTerminalUnusable)
    return co ? run_cluster_fallback(o, *co, term) : run_fallback(o, global, term);
  return rc == 0 ? kExitOk : kExitFailure;
}

Registrar reg{
    {"top", N_("live dashboard: GPUs, host, processes and findings in one screen (nvitop + htop)"),
     [](CLI::App& app, const GlobalOptions& global) -> Runner {
       auto o = std::make_shared<TopCliOptions>();
       app.add_option("-i,--interval", o->interval_s, tr("seconds between samples (0.1 to 10)"))
           ->capture_default_str();
       app.add_flag("--no-color", o->no_color, tr("no colours (also: NO_COLOR)"));
       app.add_flag("--ascii", o->ascii, tr("ASCII drawing even in a UTF-8 locale"));
       app.add_flag("--no-diagnose", o->no_diagnose, tr("do not run the live diagnosis"));
       app.add_option("--db", o->db, tr("run store to show the active run from (default: as `runs`)"));
       app.add_option("-n,--iterations", o->iterations,
                      tr("without a usable terminal: print this many status views, then exit"))
           ->check(sample_count());
       app.add_option("--prometheus", o->prometheus,
                      tr("the cluster from this Prometheus (base URL) instead of this machine"));
       app.add_option("--job", o->job, tr("with --prometheus: only this job's nodes and ranks"));
       app.add_option("--stale-after", o->stale_after_s,
                      tr("with --prometheus: mark a node stale after this many seconds without data"))
           ->check(CLI::Range(1.0, 86400.0))
           ->capture_default_str();
       auto* timeout = app.add_option("--timeout", o->timeout_s,
                                      tr("with --prometheus: seconds one request may take (over 3, a quit "
                                         "waits for the request in flight)"))
                           ->check(CLI::Range(0.1, 600.0))
                           ->capture_default_str();
       return [o, &global, timeout] {
         o->timeout_given = timeout->count() > 0;
         return run(*o, global);
       };
     },
     5}};

}  // namespace
}  // namespace trainmon::cli
