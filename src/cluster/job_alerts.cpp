// SPDX-License-Identifier: Apache-2.0
// The job report's alerts (job_history.h): the range query of the job's ALERTS, its answer made into
// findings (one per episode, with the rule's title, advice and thresholds), and the job's hang made
// whole from its ranks' stalls.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "cluster/job_history_parts.h"
#include "trainmon/cluster/job_history.h"
#include "trainmon/cluster/job_query.h"
#include "trainmon/diagnose/prom_rules.h"

namespace trainmon::cluster {

using job_parts::int_label;
using job_parts::label;
using job_parts::utc;

namespace {

/// `{{ $labels.X }}` of a rule's text filled in from `labels`; every other template action left out.
std::string fill_labels(std::string_view text, const std::map<std::string, std::string>& labels) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    const auto open = text.find("{{", i);
    if (open == std::string_view::npos) {
      out += text.substr(i);
      break;
    }
    out += text.substr(i, open - i);
    const auto close = text.find("}}", open);
    if (close == std::string_view::npos) break;
    std::string_view action = text.substr(open + 2, close - open - 2);
    while (!action.empty() && action.front() == ' ') action.remove_prefix(1);
    while (!action.empty() && action.back() == ' ') action.remove_suffix(1);
    if (action.starts_with("$labels.")) {
      const std::string k(action.substr(8));
      out += label(labels, k.c_str());
    }
    i = close + 2;
  }
  return out;
}

/// The rule of `trainmon rules` (default thresholds) an ALERTS series came from: same alertname and
/// the same values of the rule's own labels (severity, xid, cause).
const diagnose::PromRule* rule_of(const std::vector<diagnose::PromRuleGroup>& groups,
                                  const std::map<std::string, std::string>& labels) {
  const diagnose::PromRule* by_name = nullptr;
  for (const auto& g : groups)
    for (const auto& r : g.rules) {
      if (r.alert.empty() || r.alert != label(labels, "alertname")) continue;
      if (!by_name) by_name = &r;
      bool all = true;
      for (const auto& [k, v] : r.labels) all = all && label(labels, k.c_str()) == v;
      if (all) return &r;
    }
  return by_name;
}

/// The annotation `thresholds` of a rule ("hang_p90_factor=5, hang_floor_s=120", th_list in
/// prom_rules.cpp) as name -> value; an item that is not `name=number` is left out.
std::map<std::string, double> parse_thresholds(std::string_view text) {
  std::map<std::string, double> out;
  while (!text.empty()) {
    const auto comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    const auto eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    const std::string value(item.substr(eq + 1));
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (end != value.c_str() && *end == '\0' && std::isfinite(v)) out[std::string(item.substr(0, eq))] = v;
  }
  return out;
}

}  // namespace

std::string job_alerts_query(std::string_view job, double window_s) {
  std::string codes;
  for (auto c : kNodeAlertCodes) codes += (codes.empty() ? "" : "|") + std::string(c);
  const std::string own = fmt::format("ALERTS{{alertstate=\"firing\",job_id={}}}", promql_string(job));
  const std::string node = fmt::format("ALERTS{{alertstate=\"firing\",job_id=\"\",code=~\"{}\"}}", codes);
  // The node alerts of its nodes, and those of the GPUs its processes hold (docs/cluster.md 10).
  if (!(window_s > 0))
    return fmt::format("{} or ({} and on (Hostname) ({})) or ({} and on (Hostname, gpu) ({}))", own, node,
                       job_selector("trainmon_labels_info", job), node, attributed_selector(job));
  const auto w = fmt::format("{}s", static_cast<long long>(std::ceil(window_s)));
  return fmt::format(
      "{0} or max_over_time({0}[{2}]) or (({1} or max_over_time({1}[{2}])) and on (Hostname) ({3})) or (({1} "
      "or "
      "max_over_time({1}[{2}])) and on (Hostname, gpu) ({4}))",
      own, node, w, job_selector("trainmon_labels_info", job, w), attributed_selector(job, w));
}

void add_hang_ranks(JobFinding& jf, const std::vector<PromSample>& stalled) {
  std::vector<const PromSample*> ranks;
  for (const auto& s : stalled)
    if (std::isfinite(s.value)) ranks.push_back(&s);
  if (ranks.empty()) return;
  std::stable_sort(ranks.begin(), ranks.end(),
                   [](const auto* a, const auto* b) { return a->value > b->value; });
  std::set<std::string> hosts;
  std::string list;
  for (const auto* r : ranks) {
    const auto host = label(r->labels, "Hostname");
    hosts.insert(host);
    std::string one = "rank " + (label(r->labels, "rank").empty() ? "?" : label(r->labels, "rank"));
    if (!host.empty()) one += " on " + host;
    if (const auto g = label(r->labels, "gpu"); !g.empty()) one += " (GPU " + g + ")";
    list += (list.empty() ? "" : ", ") + one + fmt::format(" for {:.1f} s", r->value);
  }
  auto& f = jf.finding;
  if (hosts.size() == 1 && jf.host.empty()) jf.host = *hosts.begin();
  f.evidence += fmt::format("; stuck: {}", list);
  f.numbers["stuck_ranks"] = static_cast<double>(ranks.size());
  f.numbers["max_stall_s"] = ranks.front()->value;
}

void add_job_alerts(JobHistory& h, const std::vector<PromSeries>& alerts,
                    const std::vector<PromAlert>& live) {
  const auto groups = diagnose::prometheus_rule_groups(diagnose::Thresholds{});
  // The instant series (ALERTS) and the window's (max_over_time, no __name__) of one alert: one.
  std::map<std::map<std::string, std::string>, std::vector<std::pair<double, double>>> merged;
  for (const auto& s : alerts) {
    auto l = s.labels;
    l.erase("__name__");
    auto& pts = merged[l];
    pts.insert(pts.end(), s.points.begin(), s.points.end());
  }
  for (auto& [l, pts] : merged) {
    std::sort(pts.begin(), pts.end());
    pts.erase(
        std::unique(pts.begin(), pts.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
        pts.end());
  }
  for (const auto& [labels, points] : merged) {
    if (points.empty()) continue;
    const auto* rule = rule_of(groups, labels);
    // episodes: points at most 1.5 steps apart
    std::vector<std::pair<double, double>> episodes;
    for (const auto& [t, v] : points) {
      if (!episodes.empty() && t - episodes.back().second <= 1.5 * h.step_s)
        episodes.back().second = t;
      else
        episodes.emplace_back(t, t);
    }
    for (const auto& [t0, t1] : episodes) {
      JobFinding jf;
      auto& f = jf.finding;
      f.code = label(labels, "code");
      f.slug = label(labels, "slug");
      const auto* kind = diagnose::find_kind(f.code);
      f.title = rule && rule->annotations.contains("title") ? rule->annotations.at("title")
                : kind                                      ? std::string(kind->title)
                                                            : label(labels, "alertname");
      diagnose::Severity sev{};
      f.severity =
          diagnose::parse_severity(label(labels, "severity"), sev) ? sev : diagnose::Severity::warning;
      f.start_s = t0 - h.start_unix_s;
      f.end_s = t1 - h.start_unix_s;
      if (const int g = int_label(labels, "gpu"); g >= 0) f.gpus.push_back(static_cast<unsigned>(g));
      jf.host = label(labels, "Hostname");
      jf.firing_at_end = t1 + 1.5 * h.step_s >= h.end_unix_s;
      std::string where = jf.host.empty() ? std::string() : " on " + jf.host;
      if (!f.gpus.empty()) where = fmt::format(" GPU {}{}", f.gpus.front(), where);
      if (const auto rank = label(labels, "rank"); !rank.empty()) where += " rank " + rank;
      f.evidence =
          fmt::format("{}{} fired from {} to {} ({})", label(labels, "alertname"), where, utc(t0), utc(t1),
                      jf.firing_at_end ? "still firing at the end of the range" : "resolved");
      f.advice = rule ? fill_labels(rule->annotations.at("description"), labels) : std::string();
      if (rule)
        if (auto it = rule->annotations.find("thresholds"); it != rule->annotations.end())
          f.thresholds = parse_thresholds(it->second);
      // An alert firing now: Prometheus' own summary (its values) and description.
      if (jf.firing_at_end) {
        for (const auto& a : live) {
          if (a.state != "firing") continue;
          bool same = true;
          for (const auto& [k, v] : labels)
            if (k != "alertstate") same = same && label(a.labels, k.c_str()) == v;
          if (!same) continue;
          if (auto it = a.annotations.find("summary"); it != a.annotations.end())
            f.evidence = it->second + " (" + f.evidence + ")";
          if (auto it = a.annotations.find("ranks"); it != a.annotations.end())
            f.evidence += "; stuck: " + it->second;
          if (auto it = a.annotations.find("description"); it != a.annotations.end()) f.advice = it->second;
          if (auto it = a.annotations.find("thresholds"); it != a.annotations.end())
            if (auto th = parse_thresholds(it->second); !th.empty()) f.thresholds = std::move(th);
          break;
        }
      }
      if (f.advice.empty()) f.advice = "See docs/cluster.md, section 6 (" + label(labels, "alertname") + ").";
      h.findings.push_back(std::move(jf));
    }
  }
  std::stable_sort(h.findings.begin(), h.findings.end(), [](const JobFinding& a, const JobFinding& b) {
    return std::tie(a.finding.start_s, a.finding.code, a.host) <
           std::tie(b.finding.start_s, b.finding.code, b.host);
  });
}

}  // namespace trainmon::cluster
