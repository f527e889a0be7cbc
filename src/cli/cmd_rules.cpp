// SPDX-License-Identifier: Apache-2.0
// `trainmon rules [--threshold name=value]... [--config FILE] [-o FILE]`: prints Prometheus recording
// and alerting rules (YAML) for the findings computable across nodes from what `serve` exports, with
// the local detectors' codes, severities, advice and thresholds (docs/cluster.md).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "cli/parse_errors.h"
#include "cli/threshold_options.h"
#include "trainmon/core/i18n.h"
#include "trainmon/core/private_files.h"
#include "trainmon/diagnose/prom_rules.h"
#include "trainmon/diagnose/thresholds.h"

namespace trainmon::cli {
namespace {

struct RulesOptions {
  std::string config;                   ///< TOML file with a [diagnose] table
  std::vector<std::string> thresholds;  ///< name=value
  std::string output;                   ///< file; empty or "-": stdout
};

int rules(const RulesOptions& o) {
  const auto loaded = thresholds_from_options("rules", o.config, o.thresholds);
  if (!loaded) return kExitUsage;
  const diagnose::Thresholds& th = *loaded;
  const std::string yaml = diagnose::prometheus_rules_yaml(diagnose::prometheus_rule_groups(th), th);
  if (o.output.empty() || o.output == "-") {
    if (write_out(stdout, yaml) == WriteResult::failed) {
      std::fputs(i18n::tr("trainmon rules: cannot write to stdout\n").data(), stderr);
      return kExitFailure;
    }
    return kExitOk;
  }
  // Replaced atomically (a reader such as Prometheus reloading never sees half of it), keeping its
  // mode; a device or FIFO is written into, a link of ours written through (core/private_files.h).
  if (auto w = files::write_output_file(o.output, yaml, files::default_file_mode()); !w) {
    std::fprintf(stderr, "trainmon rules: %s\n", said(w.error()).c_str());
    return kExitFailure;
  }
  return kExitOk;
}

const Registrar kRegistrar{CommandSpec{
    "rules", N_("Print Prometheus recording and alerting rules for cross-node findings"),
    [](CLI::App& app, const GlobalOptions&) -> Runner {
      auto o = std::make_shared<RulesOptions>();
      app.add_option("--threshold", o->thresholds, tr("Override a threshold: name=value (repeatable)"));
      app.add_option("--config", o->config, tr("TOML file with a [diagnose] table of thresholds"));
      app.add_option("-o,--output", o->output, tr("Output file (default: stdout)"));
      return [o] { return rules(*o); };
    },
    65}};

}  // namespace
}  // namespace trainmon::cli
