// SPDX-License-Identifier: Apache-2.0
#include "trainmon/alerts/rules.h"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include <toml++/toml.h>

#include "trainmon/alerts/template.h"
#include "trainmon/core/duration.h"
#include "trainmon/core/gpu_fields.h"
#include "trainmon/core/i18n.h"

namespace trainmon::alerts {

namespace {

// The metrics that are not one GPU field, each at its position in the list; the GPU fields'
// metrics come from the registry (core/gpu_fields.h, `alert` names), at their alert_order.
struct PlacedMetric {
  std::size_t at;
  MetricInfo info;
};
constexpr PlacedMetric kOtherMetrics[] = {
    {5, {"memory.used_pct", Scope::gpu, "%", "memory.used / memory.total x 100 (the article's OOM rule)"}},
    {10, {"power.draw_pct", Scope::gpu, "%", "power.draw / enforced power limit x 100"}},
    {19, {"gpu.responsive", Scope::gpu, "", "1 while the GPU answers, 0 when lost / timed out / failed"}},
    {20, {"xid", Scope::event, "", "Xid code of an NVML Xid event received this tick (fires at once)"}},
    {21, {"host.memory.used_pct", Scope::host, "%", "(MemTotal - MemAvailable) / MemTotal x 100"}},
    {22, {"host.memory.available", Scope::host, "MiB", "MemAvailable"}},
    {23, {"host.swap.used", Scope::host, "MiB", "swap used"}},
    {24, {"host.load1", Scope::host, "", "1-minute load average"}},
    {25, {"host.pressure.memory.some_avg10_pct", Scope::host, "%", "PSI memory some avg10"}},
    {26,
     {"process.used_memory", Scope::process, "MiB",
      "GPU memory of one GPU process (nvidia-smi used_memory)"}},
    {27, {"process.sm_util_pct", Scope::process, "%", "SM utilisation of one GPU process (pmon sm)"}},
};

// A position taken twice or left empty does not compile (a throw in a constant expression).
constexpr auto kMetrics = [] {
  constexpr std::size_t kCount = gpu_fields::count_alert() + std::size(kOtherMetrics);
  std::array<MetricInfo, kCount> out{};
  std::array<bool, kCount> taken{};
  const auto place = [&](std::size_t at, const MetricInfo& m) {
    if (at >= out.size() || taken[at]) throw "alert metric positions must be unique and dense";
    out[at] = m;
    taken[at] = true;
  };
  for (const auto& f : gpu_fields::kGpuFields)
    if (!f.alert.empty())
      place(static_cast<std::size_t>(f.alert_order), {f.alert, Scope::gpu, f.alert_unit, f.alert_help});
  for (const auto& p : kOtherMetrics) place(p.at, p.info);
  for (bool t : taken)
    if (!t) throw "alert metric positions must be unique and dense";
  return out;
}();

Error usage_error(std::string msg) {
  return Error{ErrorDomain::usage, 0, "EINVAL", std::move(msg)};
}

std::string where(std::string_view path, const toml::node& node) {
  return fmt::format("{}:{}", path.empty() ? "<rules>" : path, node.source().begin.line);
}

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

// A small reader that records the first error with its line.
struct Reader {
  std::string_view path;
  std::optional<Error> err;

  void fail(const toml::node& at, std::string msg) {
    if (!err) err = usage_error(fmt::format("{}: {}", where(path, at), msg));
  }

  std::optional<std::string> str(const toml::table& t, std::string_view key) {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    if (auto v = n->value<std::string>(); v && n->is_string()) return *v;
    fail(*n, fmt::format("'{}' must be a string", key));
    return std::nullopt;
  }
  std::optional<double> duration(const toml::table& t, std::string_view key) {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    if (n->is_integer() || n->is_floating_point()) {
      double v = n->value<double>().value_or(-1);
      if (std::isfinite(v) && v >= 0 && v <= static_cast<double>(kMaxDurationNs) / 1e9) return v;
    } else if (n->is_string()) {
      if (auto d = parse_duration_s(*n->value<std::string>())) return d;
    }
    fail(*n, fmt::format("'{}' must be a duration such as \"60s\", \"10m\", \"1h\" or a number of seconds, "
                         "at most 36500d",
                         key));
    return std::nullopt;
  }
  std::optional<double> number(const toml::table& t, std::string_view key) {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    if (n->is_integer() || n->is_floating_point()) return n->value<double>();
    fail(*n, fmt::format("'{}' must be a number", key));
    return std::nullopt;
  }
  std::optional<bool> boolean(const toml::table& t, std::string_view key) {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    if (n->is_boolean()) return n->value<bool>();
    fail(*n, fmt::format("'{}' must be true or false", key));
    return std::nullopt;
  }
  std::optional<std::vector<std::string>> strings(const toml::table& t, std::string_view key) {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    if (n->is_string()) return std::vector<std::string>{*n->value<std::string>()};
    if (const toml::array* a = n->as_array()) {
      std::vector<std::string> out;
      for (const toml::node& e : *a) {
        if (!e.is_string()) {
          fail(e, fmt::format("'{}' must be a list of strings", key));
          return std::nullopt;
        }
        out.push_back(*e.value<std::string>());
      }
      return out;
    }
    fail(*n, fmt::format("'{}' must be a string or a list of strings", key));
    return std::nullopt;
  }
  void unknown_keys(const toml::table& t, std::initializer_list<std::string_view> known,
                    std::string_view what) {
    for (const auto& [k, v] : t) {
      bool ok = false;
      for (auto kn : known) ok = ok || k.str() == kn;
      if (!ok) fail(v, fmt::format("unknown key '{}' in {}", k.str(), what));
    }
  }
};

bool valid_name(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

bool loopback_url(std::string_view url) {
  auto p = url.find("://");
  std::string_view rest = p == std::string_view::npos ? url : url.substr(p + 3);
  return rest.starts_with("127.") || rest.starts_with("localhost") || rest.starts_with("[::1]");
}

void check_template(Reader& r, const toml::table& t, std::string_view tmpl) {
  for (std::size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] == '{' && i + 1 < tmpl.size() && tmpl[i + 1] == '{') {
      ++i;
      continue;
    }
    if (tmpl[i] != '{') continue;
    auto e = tmpl.find('}', i);
    if (e == std::string_view::npos) break;
    auto name = tmpl.substr(i + 1, e - i - 1);
    if (!is_template_var(name))
      r.fail(*t.get("message"), fmt::format("unknown template variable {{{}}}", name));
    i = e;
  }
}

}  // namespace

std::string_view op_name(Op op) noexcept {
  switch (op) {
    case Op::lt: return "<";
    case Op::le: return "<=";
    case Op::gt: return ">";
    case Op::ge: return ">=";
    case Op::eq: return "==";
    case Op::ne: return "!=";
  }
  return "?";
}

bool Condition::holds(double v) const noexcept {
  switch (op) {
    case Op::lt: return v < threshold;
    case Op::le: return v <= threshold;
    case Op::gt: return v > threshold;
    case Op::ge: return v >= threshold;
    case Op::eq: return v == threshold;
    case Op::ne: return v != threshold;
  }
  return false;
}

std::optional<Condition> parse_condition(std::string_view text) {
  std::string s = trim(text);
  Condition c;
  std::size_t n = 0;
  if (s.starts_with("<="))
    c.op = Op::le, n = 2;
  else if (s.starts_with(">="))
    c.op = Op::ge, n = 2;
  else if (s.starts_with("=="))
    c.op = Op::eq, n = 2;
  else if (s.starts_with("!="))
    c.op = Op::ne, n = 2;
  else if (s.starts_with("<"))
    c.op = Op::lt, n = 1;
  else if (s.starts_with(">"))
    c.op = Op::gt, n = 1;
  else
    return std::nullopt;
  std::string num = trim(std::string_view(s).substr(n));
  if (num.empty()) return std::nullopt;
  char* end = nullptr;
  c.threshold = std::strtod(num.c_str(), &end);
  if (end != num.c_str() + num.size() || !std::isfinite(c.threshold)) return std::nullopt;
  return c;
}

std::span<const MetricInfo> metric_table() noexcept {
  return kMetrics;
}

const MetricInfo* find_metric(std::string_view name) noexcept {
  for (const auto& m : kMetrics)
    if (m.name == name) return &m;
  return nullptr;
}

std::string_view sink_type_name(SinkType t) noexcept {
  switch (t) {
    case SinkType::log: return "log";
    case SinkType::command: return "command";
    case SinkType::webhook: return "webhook";
    case SinkType::email: return "email";
  }
  return "?";
}

std::optional<double> parse_duration_s(std::string_view text) {
  const auto ns = parse_duration_ns(text);  // core/duration.h: the one grammar
  if (!ns) return std::nullopt;
  return static_cast<double>(*ns) / 1e9;
}

namespace {
std::string env_or(const char* var, const char* home_suffix) {
  if (const char* v = std::getenv(var); v && *v) return v;
  const char* home = std::getenv("HOME");
  return fmt::format("{}/{}", home && *home ? home : ".", home_suffix);
}
}  // namespace

std::string default_rules_path() {
  return env_or("XDG_CONFIG_HOME", ".config") + "/trainmon/alerts.toml";
}
std::string default_spool_dir() {
  return env_or("XDG_STATE_HOME", ".local/state") + "/trainmon/alerts-spool";
}

std::vector<Rule> builtin_rules(const std::vector<std::string>& sinks) {
  std::vector<Rule> out;
  Rule util;
  util.name = "gpu-bottleneck";
  util.metric = "utilization.gpu";
  util.condition = {Op::lt, 30};
  util.for_s = 60;
  util.severity = diagnose::Severity::warning;
  // The built-in templates in the language of the process that sends them (docs/language.md).
  util.message =
      i18n::tr("GPU {target} utilization {value}% below 30% for {for}: the input pipeline is the bottleneck");
  out.push_back(util);
  Rule mem;
  mem.name = "gpu-memory-full";
  mem.metric = "memory.used_pct";
  mem.condition = {Op::gt, 95};
  mem.severity = diagnose::Severity::critical;
  mem.message = i18n::tr("GPU {target} memory {value}% used (> 95%): out-of-memory risk");
  out.push_back(mem);
  Rule xid;
  xid.name = "xid";
  xid.metric = "xid";
  xid.condition = {Op::gt, 0};
  xid.cooldown_s = 60;
  xid.send_resolved = false;
  xid.severity = diagnose::Severity::critical;
  xid.message = i18n::tr("GPU {target}: Xid {value} reported by the driver");
  out.push_back(xid);
  Rule crit;
  crit.name = "critical-finding";
  crit.finding = "*";
  crit.min_severity = diagnose::Severity::critical;
  crit.severity = diagnose::Severity::critical;
  crit.cooldown_s = 3600;
  crit.message = i18n::tr("{target}: {finding}");
  out.push_back(crit);
  for (auto& r : out) r.sinks = sinks;
  return out;
}

RuleSet default_rule_set() {
  RuleSet rs;
  rs.rules = builtin_rules({"log"});
  rs.sinks["log"] = SinkConfig{.name = "log"};
  return rs;
}

Expected<RuleSet> parse_rules(std::string_view text, std::string_view path) {
  std::optional<toml::table> parsed;  // moved, not copied: a copy loses the nodes' line numbers
  try {
    parsed.emplace(toml::parse(text, std::string(path)));
  } catch (const toml::parse_error& e) {
    return std::unexpected(usage_error(
        fmt::format("{}:{}: {}", path.empty() ? "<rules>" : path, e.source().begin.line, e.description())));
  }
  const toml::table& root = *parsed;
  Reader r{path, std::nullopt};
  RuleSet rs;
  rs.path = std::string(path);
  rs.sinks["log"] = SinkConfig{.name = "log"};
  r.unknown_keys(root, {"delivery", "defaults", "sinks", "rule"}, "the file");

  if (const toml::node* dn = root.get("delivery")) {
    if (const toml::table* d = dn->as_table()) {
      r.unknown_keys(*d, {"spool_dir", "retry_initial", "retry_max", "finish_grace"}, "[delivery]");
      if (auto v = r.str(*d, "spool_dir")) rs.delivery.spool_dir = *v;
      if (auto v = r.duration(*d, "retry_initial")) rs.delivery.retry_initial_s = std::max(0.05, *v);
      if (auto v = r.duration(*d, "retry_max"))
        rs.delivery.retry_max_s = std::max(rs.delivery.retry_initial_s, *v);
      if (auto v = r.duration(*d, "finish_grace")) rs.delivery.finish_grace_s = *v;
    } else {
      r.fail(*dn, "[delivery] must be a table");
    }
  }

  if (const toml::node* sn = root.get("sinks")) {
    const toml::table* st = sn->as_table();
    if (!st) r.fail(*sn, "[sinks] must be a table of [sinks.NAME] tables");
    static const toml::table kNoSinks;
    for (const auto& [key, node] : st ? *st : kNoSinks) {
      const toml::table* t = node.as_table();
      std::string name(key.str());
      if (!t) {
        r.fail(node, fmt::format("[sinks.{}] must be a table", name));
        continue;
      }
      if (!valid_name(name))
        r.fail(node, fmt::format("sink name '{}': use letters, digits, '-', '_', '.'", name));
      SinkConfig s;
      s.name = name;
      s.line = static_cast<int>(node.source().begin.line);
      auto type = r.str(*t, "type");
      if (!type) {
        r.fail(node,
               fmt::format("[sinks.{}] needs type = \"log\", \"command\", \"webhook\" or \"email\"", name));
        continue;
      }
      if (*type == "log")
        s.type = SinkType::log;
      else if (*type == "command")
        s.type = SinkType::command;
      else if (*type == "webhook")
        s.type = SinkType::webhook;
      else if (*type == "email")
        s.type = SinkType::email;
      else {
        r.fail(*t->get("type"), fmt::format("unknown sink type '{}' (log, command, webhook, email)", *type));
        continue;
      }
      r.unknown_keys(*t,
                     {"type", "command", "url", "format", "from", "to", "starttls", "credentials_file",
                      "ca_file", "timeout", "rate_per_hour"},
                     fmt::format("[sinks.{}]", name));
      if (auto v = r.duration(*t, "timeout")) s.timeout_s = std::max(0.1, *v);
      if (auto v = r.str(*t, "ca_file")) s.ca_file = *v;
      if (auto v = r.number(*t, "rate_per_hour")) {
        if (!std::isfinite(*v) || *v <= 0) r.fail(*t->get("rate_per_hour"), "'rate_per_hour' must be > 0");
        s.rate_per_hour = *v;
      }
      switch (s.type) {
        case SinkType::log: break;
        case SinkType::command:
          // No shell: the command is run as an argv list. A string ("sleep 10") would be taken as one
          // program name with a space in it and fail at every delivery, so it is refused here.
          if (const toml::node* c = t->get("command"); c && c->is_string())
            r.fail(*c, fmt::format("[sinks.{}] command must be a list, e.g. command = [\"/usr/bin/logger\", "
                                   "\"-t\", \"trainmon\"] (it is run without a shell)",
                                   name));
          else if (auto v = r.strings(*t, "command"); v && !v->empty() && !v->front().empty())
            s.command = *v;
          else
            r.fail(node,
                   fmt::format("[sinks.{}] needs command = [\"/path/to/program\", \"arg\", ...]", name));
          break;
        case SinkType::webhook: {
          if (auto v = r.str(*t, "url")) s.url = *v;
          if (!s.url.starts_with("http://") && !s.url.starts_with("https://"))
            r.fail(t->get("url") ? *t->get("url") : node,
                   fmt::format("[sinks.{}] needs url = \"http(s)://...\"", name));
          if (auto v = r.str(*t, "format")) {
            if (*v == "slack")
              s.slack = true;
            else if (*v != "json")
              r.fail(*t->get("format"), "'format' must be \"json\" or \"slack\"");
          }
          break;
        }
        case SinkType::email: {
          if (auto v = r.str(*t, "url")) s.url = *v;
          if (!s.url.starts_with("smtp://") && !s.url.starts_with("smtps://"))
            r.fail(t->get("url") ? *t->get("url") : node,
                   fmt::format("[sinks.{}] needs url = \"smtp://host:587\" or \"smtps://host:465\"", name));
          if (auto v = r.str(*t, "from")) s.from = *v;
          if (s.from.empty())
            r.fail(node, fmt::format("[sinks.{}] needs from = \"trainmon@example.org\"", name));
          if (auto v = r.strings(*t, "to")) s.to = *v;
          if (s.to.empty()) r.fail(node, fmt::format("[sinks.{}] needs to = [\"you@example.org\"]", name));
          if (auto v = r.str(*t, "starttls")) {
            if (*v != "required" && *v != "try" && *v != "off")
              r.fail(*t->get("starttls"), "'starttls' must be \"required\", \"try\" or \"off\"");
            s.starttls = *v;
          }
          if (s.starttls == "off" && s.url.starts_with("smtp://") && !loopback_url(s.url))
            r.fail(*t->get("starttls"),
                   "starttls = \"off\" is only allowed for a server on 127.0.0.1 / localhost");
          if (auto v = r.str(*t, "credentials_file")) s.credentials_file = *v;
          break;
        }
      }
      if (name == "log" && s.type != SinkType::log)
        r.fail(node, "the sink name 'log' is reserved for the log sink");
      rs.sinks[name] = s;
    }
  }

  // defaults
  Rule defaults;
  bool critical_findings = true;
  std::vector<std::string> default_sinks;
  for (const auto& [name, s] : rs.sinks)
    if (name != "log") default_sinks.push_back(name);
  if (default_sinks.empty()) default_sinks = {"log"};
  auto check_sinks = [&](const toml::node& at, const std::vector<std::string>& names) {
    for (const auto& n : names)
      if (!rs.sinks.contains(n))
        r.fail(at, fmt::format("unknown sink '{}' (define it under [sinks.{}])", n, n));
  };
  if (const toml::node* dn = root.get("defaults")) {
    if (const toml::table* d = dn->as_table()) {
      r.unknown_keys(*d, {"for", "cooldown", "repeat", "resolved", "sinks", "critical_findings"},
                     "[defaults]");
      if (auto v = r.duration(*d, "for")) defaults.for_s = *v;
      if (auto v = r.duration(*d, "cooldown")) defaults.cooldown_s = *v;
      if (auto v = r.duration(*d, "repeat")) defaults.repeat_s = *v;
      if (auto v = r.boolean(*d, "resolved")) defaults.send_resolved = *v;
      if (auto v = r.boolean(*d, "critical_findings")) critical_findings = *v;
      if (auto v = r.strings(*d, "sinks")) {
        check_sinks(*d->get("sinks"), *v);
        default_sinks = *v;
      }
    } else {
      r.fail(*dn, "[defaults] must be a table");
    }
  }

  if (const toml::node* rn = root.get("rule")) {
    const toml::array* arr = rn->as_array();
    if (!arr) r.fail(*rn, "rules are written as [[rule]] tables");
    static const toml::array kNoRules;
    for (const toml::node& node : arr ? *arr : kNoRules) {
      const toml::table* t = node.as_table();
      if (!t) {
        r.fail(node, "a rule must be a [[rule]] table");
        continue;
      }
      Rule rule = defaults;
      rule.line = static_cast<int>(node.source().begin.line);
      r.unknown_keys(*t,
                     {"name", "metric", "finding", "min_severity", "condition", "gpus", "processes", "runs",
                      "for", "cooldown", "repeat", "resolved", "severity", "sinks", "message"},
                     "[[rule]]");
      if (auto v = r.str(*t, "name")) rule.name = *v;
      if (rule.name.empty())  // at `name = ""` itself when given, else at the rule's [[rule]] line
        r.fail(t->get("name") ? *t->get("name") : node, "the rule needs name = \"...\"");
      else if (!valid_name(rule.name))
        r.fail(*t->get("name"), "rule name: use letters, digits, '-', '_', '.'");
      auto metric = r.str(*t, "metric");
      auto finding = r.str(*t, "finding");
      if (metric.has_value() == finding.has_value()) {
        r.fail(node, fmt::format("rule '{}' needs exactly one of metric = \"...\" or finding = \"D13\"",
                                 rule.name));
        continue;
      }
      if (metric) {
        if (!find_metric(*metric)) {
          r.fail(*t->get("metric"), fmt::format("unknown metric '{}' (see docs/alerts.md)", *metric));
          continue;
        }
        rule.metric = *metric;
        auto cond = r.str(*t, "condition");
        if (!cond && rule.metric == "xid") cond = "> 0";
        if (!cond) {
          r.fail(node, fmt::format("rule '{}' needs condition = \"< 30\" (or >, <=, >=, ==, !=)", rule.name));
          continue;
        }
        auto c = parse_condition(*cond);
        if (!c) {
          r.fail(*t->get("condition"),
                 fmt::format("condition '{}': write an operator and a number, e.g. \"< 30\"", *cond));
          continue;
        }
        rule.condition = *c;
        if (rule.metric == "xid") rule.send_resolved = false;
      } else {
        if (*finding != "*" && !diagnose::find_kind(*finding)) {
          bool slug = false;
          for (const auto& k : diagnose::finding_kinds()) slug = slug || k.slug == *finding;
          if (!slug) {
            r.fail(*t->get("finding"),
                   fmt::format("unknown finding '{}' (D1..D22, a slug, or \"*\")", *finding));
            continue;
          }
        }
        rule.finding = *finding;
        if (auto v = r.str(*t, "min_severity"); v && !diagnose::parse_severity(*v, rule.min_severity))
          r.fail(*t->get("min_severity"), "'min_severity' must be info, warning or critical");
      }
      if (const toml::node* g = t->get("gpus")) {
        if (const toml::array* ga = g->as_array()) {
          for (const toml::node& e : *ga) {
            auto v = e.value<std::int64_t>();
            if (!e.is_integer() || !v || *v < 0)
              r.fail(e, "'gpus' must be a list of GPU indices, e.g. [0, 1]");
            else
              rule.gpus.push_back(static_cast<unsigned>(*v));
          }
        } else if (!(g->is_string() && g->value<std::string>() == "all")) {
          r.fail(*g, "'gpus' must be a list of GPU indices, e.g. [0, 1], or \"all\"");
        }
      }
      if (auto v = r.strings(*t, "processes")) rule.processes = *v;
      if (auto v = r.strings(*t, "runs")) rule.runs = *v;
      if (auto v = r.duration(*t, "for")) rule.for_s = *v;
      if (auto v = r.duration(*t, "cooldown")) rule.cooldown_s = *v;
      if (auto v = r.duration(*t, "repeat")) rule.repeat_s = *v;
      if (auto v = r.boolean(*t, "resolved")) rule.send_resolved = *v;
      if (auto v = r.str(*t, "severity"); v && !diagnose::parse_severity(*v, rule.severity))
        r.fail(*t->get("severity"), "'severity' must be info, warning or critical");
      if (auto v = r.strings(*t, "sinks")) {
        check_sinks(*t->get("sinks"), *v);
        rule.sinks = *v;
      } else {
        rule.sinks = default_sinks;
      }
      if (auto v = r.str(*t, "message")) {
        rule.message = *v;
        check_template(r, *t, *v);
      } else {
        rule.message = rule.finding.empty()
                           ? i18n::tr("{rule}: {target} {metric} = {value} ({condition} for {for})")
                           : i18n::tr("{target}: {finding}");
      }
      for (const auto& other : rs.rules)
        if (other.name == rule.name) r.fail(node, fmt::format("a second rule named '{}'", rule.name));
      rs.rules.push_back(std::move(rule));
    }
  }
  if (r.err) return std::unexpected(*r.err);
  if (critical_findings) {
    for (auto& b : builtin_rules(default_sinks)) {
      if (b.name != "xid" && b.name != "critical-finding") continue;
      bool taken = false;
      for (const auto& u : rs.rules) taken = taken || u.name == b.name;
      if (!taken) rs.rules.push_back(std::move(b));
    }
  }
  return rs;
}

Expected<RuleSet> load_rules(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return std::unexpected(Error{ErrorDomain::usage, EISDIR, "EISDIR",
                                 fmt::format("the alert rules file {} is a directory", path)});
  std::ifstream in(path);
  if (!in)
    return std::unexpected(
        Error{ErrorDomain::os, errno, "ENOENT",
              fmt::format("cannot read the alert rules file {}: {}", path, std::strerror(errno))});
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_rules(ss.str(), path);
}

}  // namespace trainmon::alerts
