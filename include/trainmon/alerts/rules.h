// SPDX-License-Identifier: Apache-2.0
// Alert rules and sinks as read from a TOML rules file (docs/alerts.md has the format and the
// metric list). Parsing never throws: a malformed file is an Error whose message names the file
// and the line ("alerts.toml:12: ...").
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trainmon/core/error.h"
#include "trainmon/diagnose/finding.h"

namespace trainmon::alerts {

/// How a metric is compared with the rule's threshold.
enum class Op : std::uint8_t { lt, le, gt, ge, eq, ne };

/// "<", "<=", ">", ">=", "==", "!=".
std::string_view op_name(Op op) noexcept;

/// "< 30", "> 95", ">= 1" (spaces optional). nullopt when malformed.
struct Condition {
  Op op = Op::gt;
  double threshold = 0;
  [[nodiscard]] bool holds(double value) const noexcept;
};
std::optional<Condition> parse_condition(std::string_view text);

/// Where a metric comes from (decides what a rule's targets are).
enum class Scope : std::uint8_t { gpu, host, process, event };

/// One metric a rule can watch; docs/alerts.md lists them all.
struct MetricInfo {
  std::string_view name;  ///< nvidia-smi query field name where one exists: "utilization.gpu"
  Scope scope;
  std::string_view unit;  ///< "%", "MiB", "W", "C", "MHz", ""
  std::string_view help;
};
std::span<const MetricInfo> metric_table() noexcept;
const MetricInfo* find_metric(std::string_view name) noexcept;

/// One rule. Either `metric` (with `condition`) or `finding` is set.
struct Rule {
  std::string name;
  int line = 0;  ///< line of its [[rule]] header in the file (0: built in)
  std::string metric;
  Condition condition;
  /// A finding code ("D13"), slug ("xid-error") or "*" (any), with a minimum severity.
  std::string finding;
  diagnose::Severity min_severity = diagnose::Severity::info;
  // selectors: empty = all
  std::vector<unsigned> gpus;          ///< NVML indices
  std::vector<std::string> processes;  ///< globs on the process name (process metrics)
  std::vector<std::string> runs;       ///< globs on the run name
  double for_s = 0;                    ///< the condition must hold this long before firing
  double cooldown_s = 600;             ///< at most one firing notification per target per cooldown
  double repeat_s = 0;                 ///< re-notify while firing every repeat_s; 0: never
  bool send_resolved = true;           ///< a "resolved" notification when the condition clears
  diagnose::Severity severity = diagnose::Severity::warning;
  std::vector<std::string> sinks;  ///< sink names; "log" is always defined
  std::string message;             ///< template ({rule}, {target}, {value}, ... docs/alerts.md)
};

enum class SinkType : std::uint8_t { log, command, webhook, email };
std::string_view sink_type_name(SinkType t) noexcept;

/// One delivery target. Fields that a type does not use stay empty.
struct SinkConfig {
  std::string name;
  int line = 0;
  SinkType type = SinkType::log;
  std::vector<std::string> command;   ///< command: argv (no shell)
  std::string url;                    ///< webhook: http(s)://...; email: smtp(s)://host:port
  bool slack = false;                 ///< webhook: Slack-compatible body {"text": ...}
  std::string from;                   ///< email
  std::vector<std::string> to;        ///< email
  std::string starttls = "required";  ///< email: "required", "try", "off" (off only for loopback)
  std::string credentials_file;       ///< email: "user:password" in a file of mode 0600 or stricter
  std::string ca_file;        ///< webhook (https) / email (TLS): extra CA bundle (PEM); "" = the system CAs
  double timeout_s = 10;      ///< per attempt
  double rate_per_hour = 60;  ///< at most this many notifications per hour to this sink
};

/// Delivery settings ([delivery]).
struct DeliveryConfig {
  std::string spool_dir;       ///< "" = default
  double retry_initial_s = 5;  ///< first retry delay; doubled per failure
  double retry_max_s = 300;    ///< ceiling of the delay
  double finish_grace_s = 5;   ///< on exit, how long to keep trying before leaving the rest spooled
};

struct RuleSet {
  std::string path;  ///< "" = built-in defaults
  std::vector<Rule> rules;
  std::map<std::string, SinkConfig> sinks;  ///< always holds "log"
  DeliveryConfig delivery;
};

/// Parses a rules file's text; `path` is used in error messages. Error domain: usage.
Expected<RuleSet> parse_rules(std::string_view text, std::string_view path);
/// Reads and parses a file.
Expected<RuleSet> load_rules(const std::string& path);
/// The built-in rules (docs/alerts.md "Defaults"): the article's two rules (utilization.gpu < 30
/// for 60 s, memory.used_pct > 95), an Xid event rule and every critical finding, sinks = `sinks`.
std::vector<Rule> builtin_rules(const std::vector<std::string>& sinks);
/// The defaults used without any file: builtin_rules({"log"}).
RuleSet default_rule_set();

/// "90s", "1m", "1h30m", "500ms", "0", or a bare number of seconds. nullopt when malformed or longer
/// than 36500 days: core/duration.h, the one grammar of trainmon (command-line durations too).
std::optional<double> parse_duration_s(std::string_view text);

/// $XDG_CONFIG_HOME/trainmon/alerts.toml (else $HOME/.config/trainmon/alerts.toml).
std::string default_rules_path();
/// $XDG_STATE_HOME/trainmon/alerts-spool (else $HOME/.local/state/trainmon/alerts-spool).
std::string default_spool_dir();

}  // namespace trainmon::alerts
