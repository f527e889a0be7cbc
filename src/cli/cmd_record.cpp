// SPDX-License-Identifier: Apache-2.0
// `trainmon record`: record the whole machine (every GPU, the host, the processes on GPUs and their
// trees) until SIGINT / SIGTERM / SIGHUP, then close the run cleanly. For shared servers, under
// systemd (docs/trainmon-record.service). --retention deletes old runs and samples; samples older
// than --downsample-after are kept as one mean/min/max row per chunk (about one per minute at 1 s).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "trainmon/alerts/alert_observer.h"
#include "trainmon/diagnose/thresholds.h"
#include "trainmon/recorder/duration.h"
#include "trainmon/recorder/labels.h"
#include "trainmon/recorder/record_loop.h"
#include "trainmon/runner/launcher.h"
#include "trainmon/store/db_path.h"

namespace trainmon::cli {
namespace {

struct RecordOptions {
  std::string name = "record";
  std::string interval = "1";
  std::string db;
  std::vector<std::string> labels;
  std::string retention;
  std::string downsample_after = "1d";
  std::string print_every = "0";
  std::string duration;  // stop after this long (tests, benchmarks)
  std::vector<std::string> thresholds;
  bool quiet = false;
  alerts::AlertSetup alerts;  // --alerts FILE, --alerts-spool DIR (docs/alerts.md)
};

int record(const RecordOptions& o, const GlobalOptions& global) {
  auto interval = recorder::parse_duration_ns(o.interval);
  auto print_every = recorder::parse_duration_ns(o.print_every);
  if (!interval || *interval < 100'000'000 || !print_every) {
    std::fprintf(stderr, "trainmon record: --interval must be at least 0.1 s, --print-every a duration\n");
    return kExitUsage;
  }
  recorder::RecordLoopOptions lo;
  lo.name = o.name;
  lo.interval_ns = *interval;
  lo.print_every_ns = *print_every;
  lo.quiet = o.quiet;
  if (!o.retention.empty()) {
    auto r = recorder::parse_duration_ns(o.retention);
    auto d = recorder::parse_duration_ns(o.downsample_after);
    if (!r || !d) {
      std::fprintf(stderr, "trainmon record: --retention / --downsample-after want 30d, 12h, 90m ...\n");
      return kExitUsage;
    }
    lo.retention.delete_after_ns = *r;
    lo.retention.downsample_after_ns = *d;
  }
  if (!o.duration.empty()) {
    lo.stop_after_ns = recorder::parse_duration_ns(o.duration);
    if (!lo.stop_after_ns) {
      std::fprintf(stderr, "trainmon record: bad --duration '%s'\n", o.duration.c_str());
      return kExitUsage;
    }
  }
  for (const auto& l : o.labels) {
    auto kv = recorder::parse_label(l);
    if (!kv) {
      std::fprintf(stderr, "trainmon record: --label wants KEY=VALUE (got '%s')\n", l.c_str());
      return kExitUsage;
    }
    lo.labels.push_back(*kv);
  }
  for (const auto& kv : o.thresholds) {
    if (auto r = diagnose::set_threshold(lo.thresholds, kv); !r) {
      std::fprintf(stderr, "trainmon record: --threshold %s\n", r.error().c_str());
      return kExitUsage;
    }
  }
  lo.db_path = store::resolve_db_path(o.db);
  lo.nvml_library = global.nvml_library;
  lo.proc_root = global.proc_root;
  lo.sys_root = global.sys_root;
  runner::prepare_signals();
  alerts::AlertSetup alert_setup = o.alerts;
  alert_setup.tool = "record";
  alert_setup.quiet = o.quiet;
  auto alert_observer = alerts::make_alert_observer(alert_setup);
  if (!alert_observer) {
    std::fprintf(stderr, "trainmon record: %s\n", alert_observer.error().message.c_str());
    return kExitUsage;
  }
  std::vector<recorder::TickObserver*> observers;
  if (*alert_observer) observers.push_back(alert_observer->get());
  return recorder::run_record_loop(lo, observers) == 0 ? kExitOk : kExitFailure;
}

const Registrar kRegistrar{CommandSpec{
    "record", "Record the whole machine until stopped (a foreground daemon for shared servers)",
    [](CLI::App& app, const GlobalOptions& global) -> Runner {
      auto o = std::make_shared<RecordOptions>();
      app.add_option("--name", o->name, "Run name")->capture_default_str();
      app.add_option("--interval", o->interval, "Sampling interval: seconds (0.5) or 500ms")
          ->capture_default_str();
      app.add_option("--db", o->db,
                     "Run store (default: $TRAINMON_DB, then $XDG_STATE_HOME/trainmon/trainmon.db)");
      app.add_option("--label", o->labels, "KEY=VALUE label (repeatable)");
      app.add_option("--retention", o->retention,
                     "Delete runs and samples older than this (30d, 12h); default: keep");
      app.add_option("--downsample-after", o->downsample_after,
                     "With --retention: keep older samples as mean/min/max per minute")
          ->capture_default_str();
      app.add_option("--print-every", o->print_every, "Seconds between resource lines; 0: none")
          ->capture_default_str();
      app.add_option("--duration", o->duration, "Stop after this long (default: until SIGINT/SIGTERM)");
      app.add_option("--threshold", o->thresholds, "Override a diagnosis threshold: name=value (repeatable)");
      app.add_flag("-q,--quiet", o->quiet, "Print only errors");
      alerts::add_alert_options(app, o->alerts);
      return [o, &global] { return record(*o, global); };
    },
    31}};

}  // namespace
}  // namespace trainmon::cli
