// SPDX-License-Identifier: Apache-2.0
// `trainmon diagnose RUN [--json] [--threshold name=value]... [--config FILE]`: re-runs every
// detector on a recorded run and prints the findings (one line each, or a JSON array), what to fix
// first first: critical faults, then by what each costs (diagnose::rank_findings). A hang's stacks
// (stored when trainmon asked the ranks) come with it: the line each rank is stuck on.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "cli/parse_errors.h"
#include "cli/run_lookup.h"
#include "cli/threshold_options.h"
#include "trainmon/core/i18n.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/diagnose/engine.h"
#include "trainmon/diagnose/thresholds.h"
#include "trainmon/store/db_path.h"
#include "trainmon/store/load_run_series.h"
#include "trainmon/store/store.h"

namespace trainmon::cli {
namespace {

struct DiagnoseOptions {
  std::string db;
  std::string run = "last";
  bool json = false;
  std::string config;                   ///< TOML file with a [diagnose] table
  std::vector<std::string> thresholds;  ///< name=value
  std::string min_severity = "info";
};

int diagnose(const DiagnoseOptions& o) {
  const auto loaded = thresholds_from_options("diagnose", o.config, o.thresholds);
  if (!loaded) return kExitUsage;  // checked before the store is opened: a usage error first
  diagnose::Severity min = diagnose::Severity::info;
  if (!diagnose::parse_severity(o.min_severity, min)) {
    std::fputs(i18n::trf("trainmon diagnose: --min-severity: info, warning or critical\n").c_str(), stderr);
    return kExitUsage;
  }
  auto st = store::Store::open(store::resolve_db_path(o.db), store::OpenMode::read_only);
  if (!st) {
    std::fprintf(stderr, "trainmon diagnose: %s\n", said(st.error()).c_str());
    return kExitFailure;
  }
  auto id = st->resolve_run(o.run);
  if (!id) {
    std::fprintf(stderr, "trainmon diagnose: %s\n", said(id.error()).c_str());
    return run_lookup_exit(id.error());
  }
  // The run is judged with the thresholds it ran with (stored with it), under --config and
  // --threshold given here.
  diagnose::Thresholds th = *loaded;
  if (auto info = st->get_run(*id); info && !info->thresholds.empty()) {
    diagnose::Thresholds base;
    (void)diagnose::apply_threshold_changes(base, info->thresholds);
    if (auto again = thresholds_from_options("diagnose", o.config, o.thresholds, base)) th = *again;
    // Say which recorded values this pass used and which --config / --threshold replaced, from the
    // values finally in force (a config file's keys count as much as --threshold's).
    std::vector<std::string> used, replaced;
    for (const auto& [name, value] : info->thresholds) {
      const auto row = std::find_if(diagnose::threshold_table().begin(), diagnose::threshold_table().end(),
                                    [&](const diagnose::ThresholdInfo& t) { return t.name == name; });
      if (row == diagnose::threshold_table().end()) continue;  // a newer trainmon's: not applied
      const double now = th.*(row->field);
      if (now == value) {
        used.push_back(fmt::format("{}={}", name, value));
      } else {
        replaced.push_back(i18n::trf("{}={} (recorded {})", name, now, value));
      }
    }
    if (!used.empty()) {
      const std::string list = fmt::format("{}", fmt::join(used, " --threshold "));
      std::fputs(
          (used.size() == 1 ? i18n::trf("trainmon diagnose: run {0} was recorded with --threshold {1}: "
                                        "judged with it here too (--threshold NAME=VALUE overrides)\n",
                                        *id, list)
                            : i18n::trf("trainmon diagnose: run {0} was recorded with --threshold {1}: "
                                        "judged with them here too (--threshold NAME=VALUE overrides)\n",
                                        *id, list))
              .c_str(),
          stderr);
    }
    if (!replaced.empty())
      std::fputs(i18n::trf("trainmon diagnose: judged with {0} instead of what run {1} was recorded with\n",
                           fmt::format("{}", fmt::join(replaced, ", ")), *id)
                     .c_str(),
                 stderr);
  }
  auto series = store::load_run_series(*st, *id);
  if (!series) {
    std::fprintf(stderr, "trainmon diagnose: %s\n", said(series.error()).c_str());
    return kExitFailure;
  }
  auto findings = diagnose::DiagnosisEngine{}.run_all(*series, th);
  std::erase_if(findings, [min](const diagnose::Finding& f) { return f.severity < min; });
  const double span = series->t.empty() ? 0.0 : series->t.back() - series->t.front();
  diagnose::rank_findings(findings, span);
  if (o.json) {
    const nlohmann::json j = findings;
    std::puts(text::json_dump(j, 2).c_str());
  } else if (findings.empty()) {
    std::fputs(i18n::trf("run {}: nothing found\n", *id).c_str(), stdout);
  } else {
    for (const auto& f : findings) std::puts(diagnose::to_text(f).c_str());
  }
  // The run's own diagnosis, stored at its end (or so far, while it runs), used the thresholds it ran
  // with; this pass may override them. Say which stored findings it did not find again, so that
  // "nothing found" never contradicts the runs table.
  if (auto stored = st->findings(*id); stored) {
    std::vector<std::string> missing;
    for (const auto& f : *stored) {
      if (f.severity < min) continue;
      const bool again = std::any_of(findings.begin(), findings.end(),
                                     [&](const diagnose::Finding& g) { return g.code == f.code; });
      if (!again && std::find(missing.begin(), missing.end(), f.code) == missing.end())
        missing.push_back(f.code);
    }
    if (!missing.empty())
      std::fputs(
          (missing.size() == 1
               ? i18n::trf("trainmon diagnose: run {0} recorded {1} when it ran, with the thresholds it "
                           "ran with; these thresholds do not find it again (without --config or "
                           "--threshold, diagnose judges a run with its own; `trainmon show {0}` lists "
                           "them)\n",
                           *id, fmt::format("{}", fmt::join(missing, ", ")))
               : i18n::trf("trainmon diagnose: run {0} recorded {1} when it ran, with the thresholds it "
                           "ran with; these thresholds do not find them again (without --config or "
                           "--threshold, diagnose judges a run with its own; `trainmon show {0}` lists "
                           "them)\n",
                           *id, fmt::format("{}", fmt::join(missing, ", "))))
              .c_str(),
          stderr);
  }
  return kExitOk;
}

const Registrar kRegistrar{CommandSpec{
    "diagnose", N_("Name what went wrong in a recorded run, with evidence and advice"),
    [](CLI::App& app, const GlobalOptions&) -> Runner {
      auto o = std::make_shared<DiagnoseOptions>();
      app.add_option("RUN", o->run, tr("Run id, name, or 'last'"));
      app.add_option("--db", o->db,
                     tr("Run store (default: $TRAINMON_DB, then $XDG_STATE_HOME/trainmon/trainmon.db)"));
      app.add_flag("--json", o->json, tr("JSON array of findings"));
      app.add_option("--config", o->config, tr("TOML file with a [diagnose] table of thresholds"));
      app.add_option("--threshold", o->thresholds, tr("Override a threshold: name=value (repeatable)"));
      app.add_option("--min-severity", o->min_severity, tr("info, warning or critical"));
      return [o] { return diagnose(*o); };
    },
    60}};

}  // namespace
}  // namespace trainmon::cli
