// SPDX-License-Identifier: Apache-2.0
#include "cli/record_options.h"

#include "cli/threshold_options.h"

#include <cstdio>

#include "cli/run_lookup.h"
#include "trainmon/core/i18n.h"
#include "trainmon/diagnose/thresholds.h"
#include "trainmon/recorder/duration.h"
#include "trainmon/recorder/labels.h"
#include "trainmon/store/db_path.h"

namespace trainmon::cli {

void add_record_options(CLI::App& app, RecordCliOptions& o) {
  app.add_option("--name", o.name, tr("Run name"))->capture_default_str();
  app.add_option("--interval", o.interval, tr("Sampling interval: seconds (0.5) or 500ms"))
      ->capture_default_str();
  app.add_option("--db", o.db,
                 tr("Run store (default: $TRAINMON_DB, then $XDG_STATE_HOME/trainmon/trainmon.db)"));
  app.add_option("--label", o.labels, tr("KEY=VALUE label (repeatable)"));
  app.add_option("--retention", o.retention,
                 tr("Delete runs and samples older than this (30d, 12h); default: keep"));
  app.add_option("--downsample-after", o.downsample_after,
                 tr("With --retention: keep older samples as mean/min/max per minute"))
      ->capture_default_str();
  app.add_option("--duration", o.duration, tr("Stop after this long (default: until SIGINT/SIGTERM)"));
  app.add_option("--threshold", o.thresholds, tr("Override a diagnosis threshold: name=value (repeatable)"));
  app.add_flag("-q,--quiet", o.quiet, tr("Print only errors"));
  alerts::add_alert_options(app, o.alerts);
}

std::optional<recorder::RecordLoopOptions> record_loop_options(const RecordCliOptions& o,
                                                               const GlobalOptions& global,
                                                               std::string_view tool) {
  const std::string t(tool);
  auto bad = [&t](const std::string& what) {
    std::fprintf(stderr, "trainmon %s: %s\n", t.c_str(), what.c_str());
    return std::nullopt;
  };
  recorder::RecordLoopOptions lo;
  lo.tool = t;
  lo.kind = "record";
  if (auto why = reserved_run_name(o.name)) return bad(i18n::trf("--name {}; choose another name", *why));
  lo.name = o.name;
  lo.quiet = o.quiet;
  auto interval = recorder::parse_duration_ns(o.interval);
  if (!interval || *interval < 100'000'000)
    return bad(i18n::trf("--interval must be at least 0.1 s, as {} (got '{}')", recorder::duration_syntax(),
                         o.interval));
  lo.interval_ns = *interval;
  // --downsample-after is checked without --retention too: a typo is said, not ignored.
  const auto downsample = recorder::parse_duration_ns(o.downsample_after);
  const auto retention =
      o.retention.empty() ? std::optional<std::int64_t>(0) : recorder::parse_duration_ns(o.retention);
  if (!retention || !downsample)
    return bad(i18n::trf("--retention / --downsample-after want {}", recorder::duration_syntax()));
  if (!o.retention.empty()) {
    lo.retention.delete_after_ns = *retention;
    lo.retention.downsample_after_ns = *downsample;
  }
  if (!o.duration.empty()) {
    lo.stop_after_ns = recorder::parse_duration_ns(o.duration);
    if (!lo.stop_after_ns)
      return bad(i18n::trf("--duration wants {} (got '{}')", recorder::duration_syntax(), o.duration));
  }
  for (const auto& l : o.labels) {
    auto kv = recorder::parse_label(l);
    if (!kv) return bad(i18n::trf("--label wants KEY=VALUE (got '{}')", l));
    lo.labels.push_back(*kv);
  }
  auto th = thresholds_from_options(t, "", o.thresholds);  // prints why
  if (!th) return std::nullopt;
  lo.thresholds = *th;
  lo.db_path = store::resolve_db_path(o.db);
  lo.nvml_library = global.nvml_library;
  lo.proc_root = global.proc_root;
  lo.sys_root = global.sys_root;
  lo.pod_logs_root = global.pod_logs_root;
  return lo;
}

std::optional<std::unique_ptr<diagnose::TickObserver>> alert_observer(const RecordCliOptions& o,
                                                                      std::string_view tool) {
  alerts::AlertSetup setup = o.alerts;
  setup.tool = std::string(tool);
  setup.quiet = o.quiet;
  auto obs = alerts::make_alert_observer(setup);
  if (!obs) {
    std::fprintf(stderr, "trainmon %s: %s\n", setup.tool.c_str(), obs.error().message.c_str());
    return std::nullopt;
  }
  return std::move(*obs);
}

}  // namespace trainmon::cli
