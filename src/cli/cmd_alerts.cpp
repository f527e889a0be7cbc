// SPDX-License-Identifier: Apache-2.0
// `trainmon alerts check FILE`: validate a rules file; `trainmon alerts test [FILE]`: send a test
// alert through every configured sink; `trainmon alerts flush [FILE]`: deliver what is spooled;
// `trainmon alerts metrics`: the metric names rules can use (docs/alerts.md).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "cli/option_checks.h"
#include "cli/parse_errors.h"
#include "trainmon/alerts/delivery.h"
#include "trainmon/alerts/rules.h"
#include "trainmon/alerts/sinks.h"
#include "trainmon/alerts/spool.h"

namespace trainmon::cli {
namespace {

struct AlertsOptions {
  std::string file;
  std::string spool;
  double wait_s = 30;
};

std::string hostname() {
  char buf[256] = {};
  return ::gethostname(buf, sizeof buf - 1) == 0 ? buf : "localhost";
}

Expected<alerts::RuleSet> load(const std::string& file, bool require_file) {
  std::string path = file;
  if (path.empty()) {
    std::error_code ec;
    if (std::filesystem::exists(alerts::default_rules_path(), ec)) path = alerts::default_rules_path();
  }
  if (path.empty()) {
    if (require_file)
      return std::unexpected(
          Error{ErrorDomain::usage, 0, "ENOENT",
                fmt::format("no rules file given and {} does not exist", alerts::default_rules_path())});
    return alerts::default_rule_set();
  }
  return alerts::load_rules(path);
}

std::string spool_of(const AlertsOptions& o, const alerts::RuleSet& rs) {
  return !o.spool.empty()                 ? o.spool
         : !rs.delivery.spool_dir.empty() ? rs.delivery.spool_dir
                                          : alerts::default_spool_dir();
}

int check(const AlertsOptions& o) {
  auto rs = load(o.file, true);
  if (!rs) {
    std::fprintf(stderr, "trainmon alerts check: %s\n", said(rs.error()).c_str());
    return kExitUsage;
  }
  std::printf("%s: %zu rule(s), %zu sink(s): OK\n", rs->path.c_str(), rs->rules.size(), rs->sinks.size());
  for (const auto& r : rs->rules) {
    std::string what =
        r.finding.empty()
            ? fmt::format("{} {} {}", r.metric, alerts::op_name(r.condition.op), r.condition.threshold)
            : fmt::format("finding {} (severity >= {})", r.finding, diagnose::severity_name(r.min_severity));
    std::string sinks;
    for (const auto& s : r.sinks) sinks += (sinks.empty() ? "" : ",") + s;
    std::printf("  rule %-20s %s for %gs cooldown %gs -> %s%s\n", r.name.c_str(), what.c_str(), r.for_s,
                r.cooldown_s, sinks.c_str(),
                r.line ? fmt::format(" (line {})", r.line).c_str() : " (built in)");
  }
  for (const auto& [name, s] : rs->sinks)
    std::printf("  sink %-20s %s%s\n", name.c_str(), std::string(alerts::sink_type_name(s.type)).c_str(),
                s.url.empty() ? "" : (" " + s.url).c_str());
  return kExitOk;
}

int test(const AlertsOptions& o) {
  auto rs = load(o.file, false);
  if (!rs) {
    std::fprintf(stderr, "trainmon alerts test: %s\n", said(rs.error()).c_str());
    return kExitUsage;
  }
  int failed = 0;
  auto now = std::chrono::system_clock::now().time_since_epoch();
  for (const auto& [name, cfg] : rs->sinks) {
    alerts::Notification n;
    n.time_unix_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
    n.id = fmt::format("{}-{}-test-{}", n.time_unix_ns, ::getpid(), name);
    n.state = "test";
    n.rule = "test";
    n.severity = "info";
    n.target = "sink " + name;
    n.hostname = hostname();
    n.tool = "alerts test";
    n.message = fmt::format("test alert from trainmon on {} through sink {}", n.hostname, name);
    auto sink = alerts::make_sink(cfg, "alerts");
    auto r = sink->deliver(n);
    if (r) {
      std::printf("sink %s (%s): delivered\n", name.c_str(),
                  std::string(alerts::sink_type_name(cfg.type)).c_str());
    } else {
      std::printf("sink %s (%s): FAILED: %s\n", name.c_str(),
                  std::string(alerts::sink_type_name(cfg.type)).c_str(), said(r.error()).c_str());
      ++failed;
    }
  }
  return failed ? kExitFailure : kExitOk;
}

int flush(const AlertsOptions& o) {
  auto rs = load(o.file, true);
  if (!rs) {
    std::fprintf(stderr, "trainmon alerts flush: %s\n", said(rs.error()).c_str());
    return kExitUsage;
  }
  rs->delivery.finish_grace_s = o.wait_s;
  std::string spool = spool_of(o, *rs);
  std::size_t before = 0;
  for (const auto& [name, _] : rs->sinks) before += alerts::Spool(spool + "/" + name).list().size();
  {
    alerts::Delivery d(*rs, spool, "alerts");
    d.finish();
  }
  std::size_t after = 0;
  for (const auto& [name, _] : rs->sinks) after += alerts::Spool(spool + "/" + name).list().size();
  std::printf("%zu spooled alert(s) delivered, %zu left in %s\n", before - std::min(before, after), after,
              spool.c_str());
  return after ? kExitFailure : kExitOk;
}

int metrics() {
  for (const auto& m : alerts::metric_table())
    std::printf("%-40s %-4s %s\n", std::string(m.name).c_str(), std::string(m.unit).c_str(),
                std::string(m.help).c_str());
  return kExitOk;
}

const Registrar kRegistrar{CommandSpec{
    "alerts", N_("Alert rules: check a rules file, send a test alert, deliver spooled alerts"),
    [](CLI::App& app, const GlobalOptions&) -> Runner {
      auto o = std::make_shared<AlertsOptions>();
      auto* c = app.add_subcommand("check", tr("Validate a rules file (errors name the line)"));
      c->add_option("file", o->file, tr("Rules file (default: $XDG_CONFIG_HOME/trainmon/alerts.toml)"));
      auto* t = app.add_subcommand("test", tr("Send a test alert through every sink of the rules file"));
      t->add_option("file", o->file, tr("Rules file (default: as for run/record)"));
      auto* f = app.add_subcommand("flush", tr("Deliver the alerts waiting in the spool, then exit"));
      f->add_option("file", o->file, tr("Rules file (default: $XDG_CONFIG_HOME/trainmon/alerts.toml)"));
      f->add_option("--alerts-spool", o->spool,
                    tr("Spool directory (default: the file's, else $XDG_STATE_HOME/...)"));
      f->add_option("--wait", o->wait_s, tr("Keep retrying this many seconds (0 to 86400)"))
          ->check(seconds_span(kMaxLoopIntervalS, true))
          ->capture_default_str();
      auto* m = app.add_subcommand("metrics", tr("List the metric names rules can watch"));
      app.require_subcommand(1);
      return [=, &app]() -> int {
        if (c->parsed()) return check(*o);
        if (t->parsed()) return test(*o);
        if (f->parsed()) return flush(*o);
        if (m->parsed()) return metrics();
        std::fputs(app.help().c_str(), stderr);
        return kExitUsage;
      };
    },
    60}};

}  // namespace
}  // namespace trainmon::cli
