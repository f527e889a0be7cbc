// SPDX-License-Identifier: Apache-2.0
// Prometheus recording and alerting rules for the findings that can be computed across nodes from
// what `trainmon serve` exports (`trainmon rules`, docs/cluster.md). Codes, slugs, severities,
// advice and default thresholds are the local detectors' (finding_kinds(), src/diagnose/advice.h,
// Thresholds); the expressions are PromQL over dcgm-exporter names plus trainmon_*.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "trainmon/diagnose/thresholds.h"

namespace trainmon::diagnose {

/// One rule of a rule group: a recording rule (`alert` empty) or an alerting rule.
struct PromRule {
  std::string record;                              ///< recording rule's series name, else empty
  std::string alert;                               ///< alerting rule's name, else empty
  std::string expr;                                ///< PromQL
  std::string for_duration;                        ///< "60s" / "1500ms"; empty: fires at once
  std::map<std::string, std::string> labels;       ///< alerts: severity, code, slug (+ xid)
  std::map<std::string, std::string> annotations;  ///< alerts: summary, description, code, ...
};

/// A rule group (the YAML `groups:` entry).
struct PromRuleGroup {
  std::string name;
  std::vector<PromRule> rules;
};

/// The rules for thresholds `th` (defaults: the local detectors'): group "trainmon-recording"
/// (recording rules: a job id per node and rank, per-GPU window means, clock-event bits) then
/// "trainmon-alerts". Every duration comes from `th` (seconds, written as whole milliseconds, at
/// least 1 ms, at most 10 years); every number is printed so that PromQL reads it back exactly.
std::vector<PromRuleGroup> prometheus_rule_groups(const Thresholds& th);

/// The groups as a Prometheus rule file (YAML). Every string is double-quoted with JSON escapes
/// (valid YAML), so advice text with quotes, colons or backticks cannot break the document.
std::string prometheus_rules_yaml(const std::vector<PromRuleGroup>& groups, const Thresholds& th);

/// The PromQL duration for `seconds`: whole milliseconds ("60s" when a whole number of seconds,
/// else "1500ms"), clamped to 1 ms .. 10 years; a non-finite or non-positive value gives "1ms".
std::string prom_duration(double seconds);

/// `v` as a PromQL number literal that parses back to the same double ("95", "0.9", "1e-05").
std::string prom_number(double v);

}  // namespace trainmon::diagnose
