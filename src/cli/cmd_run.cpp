// SPDX-License-Identifier: Apache-2.0
// `trainmon run [options] -- COMMAND [ARGS...]`: start the command as `time` would, watch its
// process tree, its GPUs and the host, record everything, print a resource line every
// --print-every seconds and a summary at the end; exit with the command's status. A trainmon
// failure (store, sampler, exception) only degrades monitoring: the command runs on untouched.
// This file parses and checks the options and wires them up; the monitoring is recorder::run_job
// (recorder/job_run.h), which drives the one monitoring loop (recorder/monitor_loop.h).
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "cli/parse_errors.h"
#include "cli/run_lookup.h"
#include "cli/threshold_options.h"
#include "trainmon/alerts/alert_observer.h"
#include "trainmon/core/i18n.h"
#include "trainmon/diagnose/tick_observer.h"
#include "trainmon/recorder/duration.h"
#include "trainmon/recorder/job_run.h"
#include "trainmon/recorder/labels.h"
#include "trainmon/recorder/recording.h"
#include "trainmon/report/report_file.h"
#include "trainmon/runner/launcher.h"
#include "trainmon/store/db_path.h"
#include "trainmon/store/store.h"

namespace trainmon::cli {
namespace {

struct RunOptions {
  std::string name;
  std::string interval = "1";
  std::string db;
  std::vector<std::string> labels;
  bool quiet = false;
  std::string print_every = "30";
  std::string kill_after = "30";        ///< grace between the stop signal and SIGKILL (runner::kDefaultGrace)
  std::vector<std::string> thresholds;  ///< diagnosis threshold overrides, name=value
  std::string report;                   ///< HTML report file (default: beside the store, docs/report.md)
  bool no_report = false;
  bool no_instrument = false;  ///< no start-up hook for Python (docs/python.md "Zero code changes")
  std::vector<std::string> command;
  alerts::AlertSetup alerts;  ///< --alerts FILE, --alerts-spool DIR (docs/alerts.md)
};

int run_command(const RunOptions& o, const GlobalOptions& global) {
  auto interval = recorder::parse_duration_ns(o.interval);
  auto print_every = recorder::parse_duration_ns(o.print_every);
  if (!interval || *interval < 100'000'000) {
    std::fputs(i18n::trf("trainmon run: --interval must be at least 0.1 s, as {} (got '{}')\n",
                         recorder::duration_syntax(), o.interval)
                   .c_str(),
               stderr);
    return kExitUsage;
  }
  if (!print_every) {
    std::fputs(i18n::trf("trainmon run: --print-every wants {} (got '{}')\n", recorder::duration_syntax(),
                         o.print_every)
                   .c_str(),
               stderr);
    return kExitUsage;
  }
  const auto kill_after = recorder::parse_duration_ns(o.kill_after);
  if (!kill_after) {
    std::fputs(i18n::trf("trainmon run: --kill-after wants {} (got '{}')\n", recorder::duration_syntax(),
                         o.kill_after)
                   .c_str(),
               stderr);
    return kExitUsage;
  }
  std::vector<std::pair<std::string, std::string>> given;
  for (const auto& l : o.labels) {
    auto kv = recorder::parse_label(l);
    if (!kv) {
      std::fputs(i18n::trf("trainmon run: --label wants KEY=VALUE (got '{}')\n", l).c_str(), stderr);
      return kExitUsage;
    }
    given.push_back(*kv);
  }
  const auto given_th = thresholds_from_options("run", "", o.thresholds);  // prints why
  if (!given_th) return kExitUsage;

  // Before any thread exists: every thread inherits the blocked signals.
  runner::prepare_signals();
  alerts::AlertSetup alert_setup = o.alerts;
  alert_setup.tool = "run";
  alert_setup.quiet = o.quiet;
  alert_setup.findings_printed = true;  // live findings are printed by the run
  auto alert_observer = alerts::make_alert_observer(alert_setup);
  if (!alert_observer) {
    std::fprintf(stderr, "trainmon run: %s\n", said(alert_observer.error()).c_str());
    return kExitUsage;
  }
  if (auto why = reserved_run_name(o.name); why && !o.name.empty()) {
    std::fputs(i18n::trf("trainmon run: --name {}; choose another name\n", *why).c_str(), stderr);
    return kExitUsage;
  }

  // ---- the monitored job (recorder/job_run.h) ----
  recorder::JobRunOptions jo;
  jo.name = o.name.empty() ? recorder::default_run_name(o.command) : o.name;
  if (reserved_run_name(jo.name))
    jo.name = "run-" + jo.name;  // `trainmon run -- ./last`: still reachable by name
  jo.command = o.command;
  jo.interval_ns = *interval;
  jo.print_every_ns = *print_every;
  jo.kill_after_ns = *kill_after;
  jo.db_path = store::resolve_db_path(o.db);
  jo.labels = std::move(given);
  jo.thresholds = *given_th;
  jo.quiet = o.quiet;
  jo.no_instrument = o.no_instrument;
  jo.nvml_library = global.nvml_library;
  jo.proc_root = global.proc_root;
  jo.sys_root = global.sys_root;
  jo.pod_logs_root = global.pod_logs_root;
  jo.said = [](const Error& e) { return said(e); };
  // ---- the HTML report (docs/report.md): a failure is one message, never the exit status ----
  jo.write_report = [&o, db_path = jo.db_path](std::int64_t run_id) -> std::string {
    if (!o.no_report && run_id) {
      const std::string path = o.report.empty() ? report::default_report_path(db_path, run_id) : o.report;
      auto st = store::Store::open(db_path, store::OpenMode::read_only);
      auto r =
          st ? report::write_report_file(*st, run_id, path) : Expected<void>(std::unexpected(st.error()));
      if (r) return path;
      std::fprintf(stderr, "trainmon: no report: %s\n", said(r.error()).c_str());
    } else if (!o.no_report && !o.report.empty()) {
      std::fputs(i18n::tr("trainmon: no report: the run was not recorded\n").data(), stderr);
    }
    return {};
  };
  std::vector<diagnose::TickObserver*> observers;
  if (*alert_observer) observers.push_back(alert_observer->get());
  return recorder::run_job(jo, observers);
}

const Registrar kRegistrar{CommandSpec{
    "run", N_("Run a training command and watch, record and summarise it (trainmon run -- python train.py)"),
    [](CLI::App& app, const GlobalOptions& global) -> Runner {
      auto o = std::make_shared<RunOptions>();
      app.add_option("--name", o->name, tr("Run name (default: the script or program name)"));
      app.add_option("--interval", o->interval,
                     tr("Sampling interval: seconds (0.5) or 500ms; at least 0.1 s"))
          ->capture_default_str();
      app.add_option("--db", o->db,
                     tr("Run store (default: $TRAINMON_DB, then $XDG_STATE_HOME/trainmon/trainmon.db)"));
      app.add_option("--label", o->labels, tr("KEY=VALUE label for the run (repeatable)"))
          ->allow_extra_args(false);  // one value per --label, so `--label a=b -- cmd` keeps its `--`
      app.add_flag("-q,--quiet", o->quiet, tr("No resource lines and no summary"));
      app.add_option("--kill-after", o->kill_after,
                     tr("Grace period after a stop signal (or after the command ended leaving processes "
                        "behind) before what is left of the job gets SIGKILL; 0: at once"))
          ->capture_default_str();
      app.add_option("--print-every", o->print_every, tr("Seconds between resource lines on stderr; 0: none"))
          ->capture_default_str();
      app.add_option("--threshold", o->thresholds,
                     tr("Override a diagnosis threshold: name=value (repeatable)"))
          ->allow_extra_args(false);
      app.add_option("--report", o->report,
                     tr("HTML report file (default: <store dir>/reports/<db name>-run-<id>.html)"));
      app.add_flag("--no-report", o->no_report, tr("Write no HTML report at the end"));
      app.add_flag("--no-instrument", o->no_instrument,
                   tr("Do not time PyTorch by itself (no start-up hook on the child's PYTHONPATH; "
                      "explicit trainmon callbacks still report)"));
      alerts::add_alert_options(app, o->alerts);
      app.add_option("command", o->command, tr("The command to run, after --"))->required();
      app.prefix_command(false);
      return [o, &global] { return run_command(*o, global); };
    },
    30}};

}  // namespace
}  // namespace trainmon::cli
