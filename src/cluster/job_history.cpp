// SPDX-License-Identifier: Apache-2.0
#include "trainmon/cluster/job_history.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <map>
#include <set>

#include <fmt/format.h>

#include "cluster/serve_series.h"
#include "trainmon/cluster/cluster_view.h"
#include "trainmon/cluster/job_query.h"
#include "trainmon/diagnose/prom_rules.h"

namespace trainmon::cluster {
namespace {

constexpr double kMiB = 1048576.0;

struct Metric {
  const char* key;
  const char* name;
};
/// Per node (no gpu label).
constexpr Metric kHostMetrics[] = {
    {"cpu_busy", "trainmon_host_cpu_busy_ratio"},
    {"cpu_iowait", "trainmon_host_cpu_iowait_ratio"},
    {"mem_total", "trainmon_host_memory_total_bytes"},
    {"mem_available", "trainmon_host_memory_available_bytes"},
    {"mem_cached", "trainmon_host_memory_cached_bytes"},
};
/// Per rank, with the rank's own run labels (docs/serve.md "Training").
constexpr Metric kRankMetrics[] = {
    {"steps", "trainmon_train_steps_total"},
    {"samples", "trainmon_train_samples_total"},
    {"step_sum", "trainmon_train_step_seconds_sum"},
    {"step_q", "trainmon_train_step_seconds"},
    {"data", "trainmon_train_data_wait_seconds_total"},
    {"last_step", "trainmon_train_last_step_timestamp_seconds"},
};

std::string label(const std::map<std::string, std::string>& l, const char* k) {
  auto it = l.find(k);
  return it == l.end() ? std::string() : it->second;
}

int int_label(const std::map<std::string, std::string>& l, const char* k) {
  const auto v = label(l, k);
  if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoi(v);
}

std::string utc(double unix_s) {
  const std::time_t t = static_cast<std::time_t>(std::floor(unix_s));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

/// (metric, label matchers) of the series whose samples say the job was there: its nodes'
/// trainmon_labels_info, and the info series of the GPU processes attributed to it.
std::vector<std::pair<std::string_view, std::string>> job_presence(std::string_view job) {
  std::vector<std::pair<std::string_view, std::string>> out;
  for (auto& m : job_matchers(job)) out.emplace_back("trainmon_labels_info", std::move(m));
  for (auto& m : attributed_matchers(job)) out.emplace_back("trainmon_gpu_process_info", std::move(m));
  return out;
}

Error job_error(std::string name, std::string message) {
  return Error{ErrorDomain::usage, 0, std::move(name), std::move(message)};
}

/// `agg(agg_over_time(timestamp(SEL)[window:res]) or ...)` over the job's info selectors: the time of
/// its first (min) or last (max) sample seen within the window before `at`. NaN: none.
Expected<double> edge(const PromEndpoint& ep, std::string_view job, bool first, double at, double window_s,
                      double res_s) {
  const char* agg = first ? "min" : "max";
  std::string inner;
  for (const auto& [metric, m] : job_presence(job))
    inner +=
        fmt::format("{}{}_over_time(timestamp({}{{{}}})[{}s:{}s])", inner.empty() ? "" : " or ", agg, metric,
                    m, static_cast<long long>(std::ceil(window_s)), static_cast<long long>(res_s));
  auto r = query(ep, fmt::format("{}({})", agg, inner), at);
  if (!r) return std::unexpected(r.error());
  if (r->empty() || !std::isfinite(r->front().value)) return NAN;
  return r->front().value;
}

/// The first and last bucket end (unix s) within (hi - n * step_s, hi] in which the job's
/// trainmon_labels_info has a sample: one range query of count_over_time per bucket (a range
/// function reads every sample, so no job between two steps is missed, as an instant selector's
/// 5 min lookback would). NaN, NaN: none.
Expected<std::pair<double, double>> active_buckets(const PromEndpoint& ep, std::string_view job, double lo,
                                                   double hi, double step_s) {
  std::string inner;
  for (const auto& [metric, m] : job_presence(job))
    inner += fmt::format("{}count_over_time({}{{{}}}[{}s])", inner.empty() ? "" : " or ", metric, m,
                         static_cast<long long>(step_s));
  const double n = std::max(1.0, std::ceil((hi - lo) / step_s));
  auto r = query_range(ep, fmt::format("sum({})", inner), hi - (n - 1) * step_s, hi, step_s);
  if (!r) return std::unexpected(r.error());
  double first = NAN, last = NAN;
  for (const auto& s : *r)
    for (const auto& [t, v] : s.points)
      if (v > 0) {
        first = std::fmin(first, t);
        last = std::fmax(last, t);
      }
  return std::pair{first, last};
}

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

Expected<std::string> known_jobs(const PromEndpoint& ep, double at, double window_s) {
  std::string by;
  for (auto k : kJobLabels) by += (by.empty() ? "" : ", ") + std::string(k);
  auto r = query(ep,
                 fmt::format("group by (Hostname, {}) (last_over_time(trainmon_labels_info[{}s]))", by,
                             static_cast<long long>(std::ceil(window_s))),
                 at);
  if (!r) return std::unexpected(r.error());
  std::set<std::string> jobs, bare;
  for (const auto& s : *r) {
    const auto id = job_id_of(s.labels);
    (id.empty() ? bare : jobs).insert(id.empty() ? label(s.labels, "Hostname") : id);
  }
  // the jobs of the GPU processes of nodes where serve runs outside the jobs (docs/cluster.md 10)
  auto held = query(ep,
                    fmt::format("group by (job_id, namespace, pod, pod_uid) "
                                "(last_over_time(trainmon_gpu_process_info[{}s]))",
                                static_cast<long long>(std::ceil(window_s))),
                    at);
  if (held)
    for (const auto& s : *held)
      if (auto id = attributed_job_of(s.labels); !id.empty()) jobs.insert(std::move(id));
  if (jobs.empty() && bare.empty())
    return std::string("none (no node's trainmon_labels_info: is serve scraped?)");
  std::string out;
  std::size_t n = 0;
  for (const auto& j : jobs) {
    if (++n > 20) {
      out += fmt::format(" and {} more", jobs.size() - 20);
      break;
    }
    out += (out.empty() ? "" : ", ") + j;
  }
  if (jobs.empty()) out = "none";
  if (!bare.empty())
    out += fmt::format(" ({} node{} without a job id)", bare.size(), bare.size() == 1 ? "" : "s");
  return out;
}

std::vector<std::pair<std::string, std::string>> job_range_queries(std::string_view job) {
  const std::string nodes = job_selector("trainmon_labels_info", job);
  // The GPUs its processes hold on nodes where serve runs outside the jobs (docs/cluster.md 10).
  const std::string held = attributed_selector(job);
  std::vector<std::pair<std::string, std::string>> q;
  q.emplace_back("info", fmt::format("{} or group by (Hostname) ({})", nodes, held));
  for (const auto& m : kServeGpuSeries)
    q.emplace_back(m.key, fmt::format("{0} and on (Hostname) ({1}) or {0} and on (Hostname, gpu) ({2})",
                                      per_gpu(m, m.name), nodes, held));
  for (const auto& m : kHostMetrics)
    q.emplace_back(m.key, fmt::format("{0} and on (Hostname) ({1}) or {0} and on (Hostname) ({2})", m.name,
                                      nodes, held));
  for (const auto& m : kRankMetrics) q.emplace_back(m.key, job_selector(m.name, job));
  return q;
}

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

void add_job_series(JobHistory& h, const std::vector<PromSeries>& series) {
  const std::size_t n = h.t.size();
  std::map<std::string, JobNode> nodes;
  auto node = [&](const std::string& host) -> JobNode& {
    auto [it, fresh] = nodes.try_emplace(host);
    if (fresh) {
      it->second.host = host;
      diagnose::append_empty_rows(it->second.series, h.t);
    }
    return it->second;
  };
  auto row = [&](double t_unix) -> long {
    if (h.step_s <= 0) return -1;
    const double k = std::round((t_unix - h.start_unix_s) / h.step_s);
    return k >= 0 && k < static_cast<double>(n) ? static_cast<long>(k) : -1;
  };
  // ranks: identity and per-row totals
  struct RankRows {
    diagnose::TrainRank id;
    std::map<std::string, std::vector<double>> v;  // by key ("steps", ..., "q0.5") per row
  };
  std::map<std::string, RankRows> ranks;
  // trainmon_gpu_memory_total_bytes by (host, GPU index), MiB per row
  std::map<std::pair<std::string, unsigned>, std::vector<float>> totals;
  const auto total_of = [&](const std::string& host, unsigned gpu) -> std::vector<float>& {
    auto& t = totals[{host, gpu}];
    if (t.empty()) t.assign(n, NAN);
    return t;
  };
  for (const auto& s : series) {
    const auto key = label(s.labels, "trainmon_m");
    const auto host = label(s.labels, "Hostname");
    if (host.empty()) continue;
    if (key == "info") {
      node(host);
      continue;
    }
    const bool rank_metric = std::any_of(std::begin(kRankMetrics), std::end(kRankMetrics),
                                         [&](const Metric& m) { return key == m.key; });
    if (rank_metric) {
      auto l = s.labels;
      for (const char* k : {"__name__", "trainmon_m", "quantile", "instance", "job"}) l.erase(k);
      std::string id;
      for (const auto& [k, v] : l) id += k + "=" + v + ",";
      auto& r = ranks[id];
      if (r.v.empty()) {
        r.id.rank = int_label(s.labels, "rank");
        r.id.local_rank = int_label(s.labels, "local_rank");
        r.id.node_rank = int_label(s.labels, "node_rank");
        r.id.gpu = int_label(s.labels, "gpu");
        r.id.host = host;
      }
      const std::string col = key == "step_q" ? "q" + label(s.labels, "quantile") : key;
      auto& c = r.v[col];
      if (c.empty()) c.assign(n, NAN);
      for (const auto& [t, v] : s.points)
        if (const long i = row(t); i >= 0) c[static_cast<std::size_t>(i)] = v;
      continue;
    }
    auto& nd = node(host);
    auto& rs = nd.series;
    const int idx = int_label(s.labels, "gpu");
    const bool host_metric = std::any_of(std::begin(kHostMetrics), std::end(kHostMetrics),
                                         [&](const Metric& m) { return key == m.key; });
    if (host_metric) {
      std::vector<float>* col = key == "cpu_busy"        ? &rs.host.cpu_busy_pct
                                : key == "cpu_iowait"    ? &rs.host.cpu_iowait_pct
                                : key == "mem_total"     ? &rs.host.mem_total_mib
                                : key == "mem_available" ? &rs.host.mem_available_mib
                                                         : &rs.host.mem_cached_mib;
      const double f = key.starts_with("cpu") ? 100.0 : 1.0 / kMiB;
      for (const auto& [t, v] : s.points)
        if (const long i = row(t); i >= 0 && std::isfinite(v))
          (*col)[static_cast<std::size_t>(i)] = static_cast<float>(v * f);
      continue;
    }
    if (idx < 0) continue;
    auto& g = diagnose::ensure_gpu(rs, static_cast<unsigned>(idx));
    if (g.name.empty()) g.name = label(s.labels, "modelName");
    for (const auto& [t, v] : s.points) {
      const long i = row(t);
      if (i < 0 || !std::isfinite(v)) continue;
      const auto k = static_cast<std::size_t>(i);
      const auto fv = static_cast<float>(v);
      if (g.state[k] == diagnose::GpuState::absent) g.state[k] = diagnose::GpuState::ok;
      if (key == "util")
        g.util_gpu_pct[k] = fv;
      else if (key == "mem_util")
        g.util_mem_pct[k] = fv;
      else if (key == "fb_used")
        g.mem_used_mib[k] = fv;
      else if (key == "fb_free")
        g.mem_total_mib[k] = std::isnan(g.mem_total_mib[k]) ? fv : g.mem_total_mib[k] + fv;
      else if (key == "fb_reserved")
        g.mem_reserved_mib[k] = fv;
      else if (key == "temp")
        g.temp_c[k] = fv;
      else if (key == "power")
        g.power_w[k] = fv;
      else if (key == "power_limit")
        g.power_limit_w[k] = fv;
      else if (key == "sm_clock")
        g.sm_clock_mhz[k] = fv;
      else if (key == "reasons" && v >= 0)
        g.clock_reasons[k] = static_cast<std::uint64_t>(v);
      else if (key == "up" && v == 0)
        g.state[k] = diagnose::GpuState::lost;
      else if (key == "fb_total")
        total_of(host, g.index)[k] = static_cast<float>(v / kMiB);
    }
  }
  // memory.total: serve's trainmon_gpu_memory_total_bytes (the GPU's, MIG or not), else used + free
  // + reserved (dcgm-exporter's FB fields, MiB, each rounded)
  for (auto& [host, nd] : nodes)
    for (auto& g : nd.series.gpus)
      for (std::size_t k = 0; k < n; ++k) {
        if (auto t = totals.find({host, g.index});
            t != totals.end() && !std::isnan(t->second[k]) && !std::isnan(g.mem_used_mib[k])) {
          g.mem_total_mib[k] = t->second[k];
          continue;
        }
        if (std::isnan(g.mem_total_mib[k]) || std::isnan(g.mem_used_mib[k])) {
          g.mem_total_mib[k] = diagnose::kNA;
          continue;
        }
        g.mem_total_mib[k] +=
            g.mem_used_mib[k] + (std::isnan(g.mem_reserved_mib[k]) ? 0.f : g.mem_reserved_mib[k]);
      }
  // ranks: one TrainWindow per step of the grid, from the cumulative counters' differences
  std::int64_t anonymous = 0;
  for (auto& [id, r] : ranks) {
    r.id.key = r.id.rank >= 0 ? r.id.rank : -1 - (++anonymous);
    const auto col = [&](const char* k) -> const std::vector<double>* {
      auto it = r.v.find(k);
      return it == r.v.end() ? nullptr : &it->second;
    };
    const auto at = [&](const std::vector<double>* c, std::size_t i) { return c ? (*c)[i] : NAN; };
    const auto *steps = col("steps"), *samples = col("samples"), *step_sum = col("step_sum"),
               *data = col("data"), *last = col("last_step"), *p50 = col("q0.5"), *p90 = col("q0.9"),
               *p99 = col("q0.99");
    if (!steps) continue;
    auto& rank = h.train.upsert(r.id);
    double prev_steps = NAN, prev_samples = NAN, prev_sum = NAN, prev_data = NAN;
    bool seen = false;
    for (std::size_t i = 0; i < n; ++i) {
      const double st = at(steps, i);
      if (std::isnan(st)) continue;
      // A counter that began in the range (the range starts with the job, or the rank's series
      // appears after the range's start) counts from 0: the steps before its first scrape are the
      // job's too.
      if (!seen && (h.from_job_start || i > 0)) prev_steps = prev_samples = prev_sum = prev_data = 0;
      seen = true;
      diagnose::TrainWindow w;
      w.t = h.t[i];
      w.total_steps = st;
      w.total_samples = at(samples, i);
      w.total_step_s = at(step_sum, i);
      w.total_data_s = at(data, i);
      if (const double ls = at(last, i); std::isfinite(ls) && ls > 0) w.last_step_t = ls - h.start_unix_s;
      // a counter that went down restarted (a new run): its value is all that came since
      const auto delta = [](double now, double before) -> double {
        if (std::isnan(now)) return NAN;
        if (std::isnan(before)) return NAN;
        return now >= before ? now - before : now;
      };
      const double d_steps = delta(st, prev_steps);
      if (std::isfinite(d_steps) && d_steps > 0) {
        w.steps = static_cast<std::uint32_t>(std::llround(d_steps));
        w.samples = delta(w.total_samples, prev_samples);
        const double d_sum = delta(w.total_step_s, prev_sum), d_data = delta(w.total_data_s, prev_data);
        if (std::isfinite(d_sum)) {
          w.step.sum = static_cast<float>(d_sum);
          w.span_s = static_cast<float>(d_sum);
        }
        if (std::isfinite(d_data)) w.data.sum = static_cast<float>(d_data);
        w.step.p50 = static_cast<float>(at(p50, i));
        w.step.p90 = static_cast<float>(at(p90, i));
        w.step.p99 = static_cast<float>(at(p99, i));
      }
      prev_steps = st;
      prev_samples = w.total_samples;
      prev_sum = w.total_step_s;
      prev_data = w.total_data_s;
      rank.rows.push_back(w);
    }
  }
  for (auto& [host, nd] : nodes) h.nodes.push_back(std::move(nd));
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

Expected<JobHistory> read_job_history(const JobHistoryOptions& o, double now_unix_s) {
  if (o.job.empty()) return std::unexpected(job_error("USAGE", "no job id given"));
  // Prometheus has nothing after now: a --to in the future ends the range now (and the search for
  // the job looks back from now, not from that future time).
  if (std::isfinite(o.from_unix_s) && o.from_unix_s > now_unix_s)
    return std::unexpected(job_error(
        "EMPTY_RANGE", fmt::format("--from {} is in the future (now is {}): Prometheus has nothing after now",
                                   utc(o.from_unix_s), utc(now_unix_s))));
  const double to = std::isfinite(o.to_unix_s) ? std::min(o.to_unix_s, now_unix_s) : now_unix_s;
  if (std::isfinite(o.from_unix_s) && o.from_unix_s >= to)
    return std::unexpected(job_error(
        "EMPTY_RANGE",
        fmt::format("the range is empty: --from {} is not before --to {}", utc(o.from_unix_s), utc(to))));
  // The job's first and last sample that Prometheus has, looked for from now back to --from, or
  // search_s before --to (never from a --to in the future: nothing is there): the hours with
  // samples, in them the minutes, in those the seconds. The range is then cut to that span.
  const double at = now_unix_s;
  const double window = std::max(
      {o.search_s, std::isfinite(o.from_unix_s) ? at - o.from_unix_s + 60 : 0.0, at - to + o.search_s});
  // buckets of whole hours, at most 10,000 of them (Prometheus answers at most 11,000 points)
  const double coarse_s = 3600 * std::max(1.0, std::ceil(window / 10000 / 3600));
  auto hours = active_buckets(o.endpoint, o.job, at - window, at, coarse_s);
  if (!hours) return std::unexpected(hours.error());
  if (std::isnan(hours->first)) {
    auto jobs = known_jobs(o.endpoint, at, window);
    if (!jobs) return std::unexpected(jobs.error());
    return std::unexpected(
        job_error("JOB_NOT_FOUND",
                  fmt::format("Prometheus {} has no node of job {} between {} and {}; the jobs it has: {}",
                              o.endpoint.base_url, o.job, utc(at - window), utc(at), *jobs)));
  }
  auto first_min = active_buckets(o.endpoint, o.job, hours->first - coarse_s, hours->first, 60);
  if (!first_min) return std::unexpected(first_min.error());
  auto last_min = active_buckets(o.endpoint, o.job, hours->second - coarse_s, hours->second, 60);
  if (!last_min) return std::unexpected(last_min.error());
  // in the minute: the sample times themselves (timestamp() of the selector, every second)
  auto first = edge(o.endpoint, o.job, true, first_min->first, 60, 1);
  if (!first) return std::unexpected(first.error());
  auto last = edge(o.endpoint, o.job, false, last_min->second, 60, 1);
  if (!last) return std::unexpected(last.error());
  const double first_s = std::isfinite(*first) ? *first : first_min->first - 60;
  const double last_s = std::isfinite(*last) ? *last : last_min->second;

  JobHistory h;
  h.job = o.job;
  h.prometheus = o.endpoint.base_url;
  // The report covers the part of the range with the job's samples: a range wider than the job
  // (--from -30d) neither coarsens the step nor puts the job between two points.
  const auto span = clamp_to_job(o.from_unix_s, to, first_s, last_s);
  if (!span)
    return std::unexpected(job_error(
        "EMPTY_RANGE", fmt::format("job {} has no samples between {} and {}; Prometheus has it from {} to {}",
                                   o.job, utc(std::isfinite(o.from_unix_s) ? o.from_unix_s : first_s),
                                   utc(to), utc(first_s), utc(last_s))));
  h.start_unix_s = span->start_unix_s;
  h.end_unix_s = span->end_unix_s;
  h.from_job_start = h.start_unix_s <= first_s;
  if (std::isfinite(o.to_unix_s) && o.to_unix_s > now_unix_s + 1)
    h.notes.push_back(
        fmt::format("--to {} is in the future: the range ends now ({})", utc(o.to_unix_s), utc(now_unix_s)));
  if (h.end_unix_s <= h.start_unix_s) h.end_unix_s = h.start_unix_s + 1;  // one sample
  // No finer than the scrape interval (the points in between would repeat the last sample): the
  // interval from the number of samples of the job's busiest node over its last hour (at most).
  double scrape_s = 1;
  {
    const double w = std::clamp(last_s - first_s, 1.0, 3600.0);
    std::string inner;
    for (const auto& [metric, m] : job_presence(o.job))
      inner += fmt::format("{}count_over_time({}{{{}}}[{}s])", inner.empty() ? "" : " or ", metric, m,
                           static_cast<long long>(std::ceil(w)));
    auto counts = query(o.endpoint, fmt::format("max({})", inner), last_s);
    if (!counts) return std::unexpected(counts.error());
    if (!counts->empty() && counts->front().value > 1) scrape_s = std::floor(w / (counts->front().value - 1));
  }
  h.scrape_s = std::clamp(scrape_s, 1.0, 300.0);
  h.step_s = range_step_s(h.start_unix_s, h.end_unix_s, o.max_points, h.scrape_s);
  for (double t = h.start_unix_s; t <= h.end_unix_s + 1e-6; t += h.step_s) h.t.push_back(t - h.start_unix_s);

  // One range query per series kind: Prometheus joins a chain of `or` step by step, and one query of
  // them all took 300 times as long as these (bench/compare_cluster_top.sh).
  std::vector<PromSeries> series;
  for (const auto& [key, promql] : job_range_queries(o.job)) {
    auto part = query_range(o.endpoint, promql, h.start_unix_s, h.end_unix_s, h.step_s);
    if (!part) return std::unexpected(part.error());
    for (auto& x : *part) {
      x.labels["trainmon_m"] = key;
      series.push_back(std::move(x));
    }
  }
  add_job_series(h, series);
  if (h.nodes.empty())
    return std::unexpected(
        job_error("EMPTY_RANGE",
                  fmt::format("job {}'s nodes sent no series Prometheus kept between {} and {} (its "
                              "trainmon_labels_info is there from {} to {})",
                              o.job, utc(h.start_unix_s), utc(h.end_unix_s), utc(first_s), utc(last_s))));
  auto fired =
      query_range(o.endpoint, job_alerts_query(o.job, h.step_s), h.start_unix_s, h.end_unix_s, h.step_s);
  std::vector<PromAlert> live;
  if (auto a = alerts(o.endpoint)) live = std::move(*a);
  if (fired) {
    add_job_alerts(h, *fired, live);
    // The job's own hang (one alert per job_id, no node or rank label): its ranks, nodes and longest
    // stall over the episode, from the recording rule the alert is made of.
    for (auto& jf : h.findings) {
      if (jf.finding.code != "D23" || !jf.host.empty()) continue;
      const double t1 = h.start_unix_s + jf.finding.end_s,
                   dur = jf.finding.end_s - jf.finding.start_s + h.step_s;
      auto stalled = query(o.endpoint,
                           fmt::format("max_over_time(trainmon:rank_stalled:seconds{{job_id={}}}[{}s])",
                                       promql_string(o.job), static_cast<long long>(std::ceil(dur))),
                           t1);
      if (stalled) add_hang_ranks(jf, *stalled);
    }
  } else
    h.notes.push_back("the job's alerts could not be read: " + fired.error().message);
  if (h.train.empty())
    h.notes.push_back("no rank of the job exported step timing (trainmon_train_*) in the range");
  return h;
}

}  // namespace trainmon::cluster
