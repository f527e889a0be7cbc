// SPDX-License-Identifier: Apache-2.0
#include "trainmon/alerts/alert_observer.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "trainmon/alerts/delivery.h"
#include "trainmon/alerts/engine.h"
#include "trainmon/alerts/rules.h"

namespace trainmon::alerts {

namespace {

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

class AlertObserver final : public diagnose::TickObserver {
 public:
  AlertObserver(RuleSet rules, std::string spool_dir, std::string tool)
      : rules_(std::move(rules)), tool_(std::move(tool)), delivery_(rules_, std::move(spool_dir), tool_) {}

  void on_start(const diagnose::StartContext& ctx) override {
    engine_.emplace(rules_.rules,
                    EngineContext{std::string(ctx.tool), ctx.run_id, std::string(ctx.run_name), host_name()});
  }

  void on_tick(const diagnose::TickContext& ctx) override {
    if (!engine_) engine_.emplace(rules_.rules, EngineContext{tool_, ctx.run_id, "", host_name()});
    for (const auto& n : engine_->evaluate(ctx.snapshot, ctx.active_findings, ctx.elapsed_s)) {
      const Rule* rule = nullptr;
      for (const auto& r : engine_->rules())
        if (r.name == n.rule) rule = &r;
      if (rule) delivery_.send(n, rule->sinks);
    }
  }

  void on_finish() override { delivery_.finish(); }

 private:
  RuleSet rules_;
  std::string tool_;
  Delivery delivery_;
  std::optional<AlertEngine> engine_;
};

}  // namespace

Expected<std::unique_ptr<diagnose::TickObserver>> make_alert_observer(const AlertSetup& setup) {
  RuleSet rules;
  std::string path = setup.rules_path;
  if (path.empty()) {
    std::error_code ec;
    if (std::filesystem::exists(default_rules_path(), ec)) path = default_rules_path();
  }
  if (!path.empty()) {
    auto loaded = load_rules(path);
    if (!loaded) return std::unexpected(loaded.error());
    rules = std::move(*loaded);
  } else {
    if (setup.quiet) return std::unique_ptr<diagnose::TickObserver>{};
    rules = default_rule_set();
    // `run` prints live findings (D13 for Xids too): the built-in log-only defaults leave them out
    if (setup.findings_printed)
      std::erase_if(rules.rules, [](const Rule& r) { return !r.finding.empty() || r.metric == "xid"; });
  }
  if (setup.quiet)
    for (auto& r : rules.rules) std::erase(r.sinks, std::string("log"));
  std::string spool = !setup.spool_dir.empty()            ? setup.spool_dir
                      : !rules.delivery.spool_dir.empty() ? rules.delivery.spool_dir
                                                          : default_spool_dir();
  return std::unique_ptr<diagnose::TickObserver>(
      std::make_unique<AlertObserver>(std::move(rules), spool, setup.tool));
}

}  // namespace trainmon::alerts
