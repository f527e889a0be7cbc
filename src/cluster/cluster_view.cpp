// SPDX-License-Identifier: Apache-2.0
#include "trainmon/cluster/cluster_view.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "cluster/serve_series.h"
#include "trainmon/cluster/job_history.h"
#include "trainmon/cluster/job_query.h"
#include "trainmon/core/text_escape.h"

namespace trainmon::cluster {
namespace {

/// The series read per frame: (key, PromQL of one instant vector). Each is the last sample within
/// the lookback (last_over_time), so a node whose scrapes fail keeps its last values, marked stale,
/// instead of vanishing at Prometheus' staleness marker.
struct Metric {
  const char* key;
  const char* expr;  ///< {W}: the lookback window
};
constexpr Metric kNodeMetrics[] = {
    {"info", "trainmon_labels_info"},
    {"tick", "trainmon_exporter_last_tick_timestamp_seconds"},
};
// then serve's per-GPU series (kServeGpuSeries), then the ranks'
constexpr Metric kRankMetrics[] = {
    {"steps", "trainmon_train_steps_total"},
    {"last_step", "trainmon_train_last_step_timestamp_seconds"},
    {"step_q", "trainmon_train_step_seconds"},
    {"phase", "trainmon_train_phase"},
};

bool is_rank_metric(std::string_view key) {
  return key == "steps" || key == "last_step" || key == "step_q" || key == "phase";
}

}  // namespace

std::string frame_query(double lookback_s, std::string_view job) {
  const auto w = fmt::format("{}s", static_cast<long long>(std::max(1.0, lookback_s)));
  // With a job: the GPU and node series of its nodes (trainmon_labels_info with its id, joined on
  // Hostname), the ranks' series by their own job labels: Prometheus sends only the job's series.
  const std::string nodes = job.empty() ? std::string() : job_selector("trainmon_labels_info", job, w);
  std::string q;
  const auto add = [&](const char* key, const char* expr, const ServeSeries* gpu) {
    if (!q.empty()) q += " or ";
    std::string e = fmt::format("last_over_time({}[{}])", expr, w);
    // One series per GPU, MIG instances folded: the instances scraped now (an instant vector, which
    // Prometheus' staleness markers end when an instance is destroyed), else, when the node's scrapes
    // fail, the last values within the lookback (a destroyed instance's among them until it passes).
    if (gpu != nullptr) e = fmt::format("({} or {})", per_gpu(*gpu, expr), per_gpu(*gpu, e));
    if (is_rank_metric(key) && !job.empty())
      e = "(" + job_selector(expr, job, w) + ")";
    else if (!job.empty() && gpu != nullptr)  // the job's nodes, or GPUs its processes hold
      e = fmt::format("({0} and on (Hostname) ({1}) or {0} and on (Hostname, gpu) ({2}))", e, nodes,
                      attributed_selector(job, w));
    else if (!job.empty())
      e = fmt::format("({} and on (Hostname) ({}))", e, nodes);
    q += fmt::format(R"(label_replace({}, "trainmon_m", "{}", "", ""))", e, key);
  };
  for (const auto& m : kNodeMetrics) add(m.key, m.expr, nullptr);
  for (const auto& m : kServeGpuSeries) add(m.key, m.name, &m);
  for (const auto& m : kRankMetrics) add(m.key, m.expr, nullptr);
  // Who holds each GPU when serve runs outside the jobs (docs/cluster.md section 10): the
  // attribution of its processes, one series per GPU and job.
  q += fmt::format(
      R"( or label_replace(max by (Hostname, gpu, job_id, namespace, pod, pod_uid) ({}), "trainmon_m", )"
      R"("gpu_job", "", ""))",
      job.empty() ? fmt::format("last_over_time(trainmon_gpu_process_info[{}])", w)
                  : attributed_selector(job, w));
  // Rates over the last minute: samples/s and the data wait's share of the step time.
  const auto rate = [&](const char* name) {
    if (job.empty()) return fmt::format("rate({}[1m])", name);
    std::string s;
    for (const auto& m : job_matchers(job))
      s += fmt::format("{}rate({}{{{}}}[1m])", s.empty() ? "" : " or ", name, m);
    return "(" + s + ")";
  };
  q += fmt::format(R"( or label_replace({}, "trainmon_m", "samples_rate", "", ""))",
                   rate("trainmon_train_samples_total"));
  q += fmt::format(R"( or label_replace({} / {}, "trainmon_m", "data_share", "", ""))",
                   rate("trainmon_train_data_wait_seconds_total"), rate("trainmon_train_step_seconds_sum"));
  return q;
}

namespace {

std::string label(const std::map<std::string, std::string>& l, const char* k) {
  auto it = l.find(k);
  return it == l.end() ? std::string() : it->second;
}

int int_label(const std::map<std::string, std::string>& l, const char* k) {
  const auto v = label(l, k);
  if (v.empty() || v.size() > 9 ||
      !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  return std::stoi(v);
}

/// "10 min", "45 s", "2 h" of a window.
std::string lookback_text(double s) {
  if (s >= 3600 && std::fmod(s, 3600) == 0) return fmt::format("{:.0f} h", s / 3600);
  if (s >= 60 && std::fmod(s, 60) == 0) return fmt::format("{:.0f} min", s / 60);
  return fmt::format("{:.0f} s", s);
}

template <class T>
Reading<T> reading(double v) {
  if (!std::isfinite(v) || v < 0) return Reading<T>::fail(ReadStatus::not_supported);
  return Reading<T>::of(static_cast<T>(std::llround(v)));
}

/// A rank's identity: the labels of its series without the metric's own.
std::string rank_key(std::map<std::string, std::string> l) {
  for (const char* k : {"__name__", "trainmon_m", "quantile", "phase", "instance", "job"}) l.erase(k);
  std::string s;
  for (const auto& [k, v] : l) s += k + "=" + v + ",";
  return s;
}

}  // namespace

std::string job_id_of(const std::map<std::string, std::string>& labels) {
  for (const char* k :
       {"train_job", "slurm_job_id", "torchelastic_run_id", "pbs_jobid", "lsb_jobid", "job_id"}) {
    const auto v = label(labels, k);
    if (v.empty() || (std::string_view(k) == "torchelastic_run_id" && v == "none")) continue;
    return v;
  }
  return {};
}

ClusterFrame read_cluster(const ClusterOptions& o, double now_unix_s) {
  ClusterFrame f;
  f.snapshot.time_unix_ns = static_cast<std::int64_t>(now_unix_s * 1e9);
  f.snapshot.driver.loaded = true;
  auto samples = query(o.endpoint, frame_query(o.lookback_s, o.job), now_unix_s);
  if (!samples) {
    f.error = samples.error().message;
    f.snapshot.driver.loaded = false;
    f.snapshot.driver.error = text::terminal(f.error);
    f.snapshot.host.hostname = "prometheus";
    return f;
  }
  // --- nodes -------------------------------------------------------------------------------------
  std::map<std::string, ClusterNode> nodes;
  auto node = [&](const std::string& host) -> ClusterNode& {
    auto& n = nodes[host];
    n.host = host;
    return n;
  };
  for (const auto& s : *samples) {
    const auto m = label(s.labels, "trainmon_m");
    const auto host = label(s.labels, "Hostname");
    if (host.empty()) continue;
    if (m == "info") {
      auto& n = node(host);
      if (n.job_id.empty()) n.job_id = job_id_of(s.labels);
    } else if (m == "tick") {
      node(host).last_tick_unix_s = std::max(node(host).last_tick_unix_s, s.value);
    }
  }
  // --- the jobs of each GPU's processes (a GPU held by two jobs belongs to neither) ---------------
  std::map<std::pair<std::string, int>, std::set<std::string>> gpu_jobs;
  for (const auto& s : *samples) {
    if (label(s.labels, "trainmon_m") != "gpu_job") continue;
    const auto job = attributed_job_of(s.labels);
    const int idx = int_label(s.labels, "gpu");
    if (!job.empty() && idx >= 0) gpu_jobs[{label(s.labels, "Hostname"), idx}].insert(job);
  }
  // --- GPUs --------------------------------------------------------------------------------------
  struct Gpu {
    std::string host, uuid, model, driver;
    int index = -1;
    std::map<std::string, double> v;
  };
  std::map<std::pair<std::string, int>, Gpu> gpus;
  for (const auto& s : *samples) {
    const auto m = label(s.labels, "trainmon_m");
    if (m == "info" || m == "tick" || m == "steps" || m == "last_step" || m == "step_q" || m == "phase" ||
        m == "samples_rate" || m == "data_share" || m == "gpu_job")
      continue;
    const auto host = label(s.labels, "Hostname");
    const int idx = int_label(s.labels, "gpu");
    if (host.empty() || idx < 0) continue;
    auto& g = gpus[{host, idx}];
    g.host = host;
    g.index = idx;
    if (g.uuid.empty()) g.uuid = label(s.labels, "UUID");
    if (g.model.empty()) g.model = label(s.labels, "modelName");
    if (g.driver.empty()) g.driver = label(s.labels, "DCGM_FI_DRIVER_VERSION");
    g.v[m] = s.value;
    node(host);
  }
  for (auto& [h, n] : nodes)
    n.stale = n.last_tick_unix_s > 0 && now_unix_s - n.last_tick_unix_s > o.stale_after_s;
  const auto keep = [&](const std::string& host) {
    if (o.job.empty()) return true;
    auto it = nodes.find(host);
    return it != nodes.end() && it->second.job_id == o.job;
  };
  // A GPU's job: its node's (serve started inside the job), else its processes' single one.
  const auto job_of = [&](const Gpu& g) -> std::string {
    if (const auto& j = nodes[g.host].job_id; !j.empty()) return j;
    auto it = gpu_jobs.find({g.host, g.index});
    return it != gpu_jobs.end() && it->second.size() == 1 ? *it->second.begin() : std::string();
  };
  std::vector<const Gpu*> order;
  std::map<const Gpu*, std::string> jobs;
  for (const auto& [k, g] : gpus) {
    jobs[&g] = job_of(g);
    if (keep(g.host) || (!o.job.empty() && jobs[&g] == o.job)) order.push_back(&g);
  }
  std::stable_sort(order.begin(), order.end(), [&](const Gpu* a, const Gpu* b) {
    return std::tie(jobs[a], a->host, a->index) < std::tie(jobs[b], b->host, b->index);
  });
  std::set<std::string> drivers;  // the header's driver version: every node's, as they export it
  for (const Gpu* g : order) {
    const auto& n = nodes[g->host];
    if (!g->driver.empty()) drivers.insert(g->driver);
    auto info = std::make_shared<GpuStaticInfo>();
    info->index = static_cast<unsigned>(g->index);
    std::string group = jobs[g].empty() ? "" : "job " + jobs[g] + " ";
    group += g->host;
    if (n.stale) group += fmt::format(" STALE {:.0f}s", now_unix_s - n.last_tick_unix_s);
    info->group = text::terminal(group);
    info->name = Reading<std::string>::of(text::terminal(g->model.empty() ? std::string("GPU") : g->model));
    info->uuid = Reading<std::string>::of(g->uuid);
    GpuSample s;
    s.index = info->index;
    const auto v = [&](const char* k) {
      auto it = g->v.find(k);
      return it == g->v.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
    };
    const double used = v("fb_used"), free = v("fb_free"),
                 reserved = std::isfinite(v("fb_reserved")) ? v("fb_reserved") : 0;
    constexpr double kMiB = 1048576.0;
    if (std::isfinite(used) && std::isfinite(free)) {
      const double total = v("fb_total");
      info->memory_total_bytes =
          reading<std::uint64_t>(std::isfinite(total) ? total : (used + free + reserved) * kMiB);
      s.memory_total_bytes = info->memory_total_bytes;
      s.memory_used_bytes = reading<std::uint64_t>(used * kMiB);
      s.memory_free_bytes = reading<std::uint64_t>(free * kMiB);
    }
    s.info = std::move(info);
    s.responsive = v("up") == 0 ? Reading<bool>::fail(ReadStatus::gpu_lost) : Reading<bool>::of(true);
    s.utilization_gpu_pct = reading<unsigned>(v("util"));
    s.utilization_memory_pct = reading<unsigned>(v("mem_util"));
    s.temperature_gpu_c = reading<unsigned>(v("temp"));
    s.power_draw_mw = reading<unsigned>(v("power") * 1000);
    // DCGM_FI_DEV_POWER_MGMT_LIMIT is nvmlDeviceGetPowerManagementLimit (W); serve exports no other
    s.power_limit_mw = reading<unsigned>(v("power_limit") * 1000);
    s.enforced_power_limit_mw = s.power_limit_mw;
    s.clocks_sm_mhz = reading<unsigned>(v("sm_clock"));
    s.clocks_event_reasons_active = reading<std::uint64_t>(v("reasons"));
    f.snapshot.gpus.push_back(std::move(s));
  }
  if (!drivers.empty()) {
    std::string d;
    for (const auto& x : drivers) d += (d.empty() ? "" : ", ") + x;
    f.snapshot.driver.driver_version = Reading<std::string>::of(text::terminal(d));
  }
  // --- ranks -------------------------------------------------------------------------------------
  std::map<std::string, ipc::LiveRankState> ranks;  // by rank_key
  std::map<std::string, std::string> rank_job;
  for (const auto& s : *samples) {
    const auto m = label(s.labels, "trainmon_m");
    if (m != "steps" && m != "last_step" && m != "step_q" && m != "phase" && m != "samples_rate" &&
        m != "data_share")
      continue;
    const auto host = label(s.labels, "Hostname");
    const auto job = job_id_of(s.labels);
    if (!o.job.empty() && job != o.job) continue;
    const auto key = rank_key(s.labels);
    auto& r = ranks[key];
    if (rank_job.find(key) == rank_job.end()) {
      rank_job[key] = job.empty() ? host + " run " + label(s.labels, "run_id") : "job " + job;
      r.rank = int_label(s.labels, "rank");
      r.local_rank = int_label(s.labels, "local_rank");
      r.host = host;
      r.gpu = int_label(s.labels, "gpu");
      r.key = static_cast<std::int64_t>(ranks.size());
      node(host);
    }
    if (m == "steps") r.total_steps = s.value;
    if (m == "last_step") r.last_step_unix_s = s.value;
    if (m == "samples_rate") r.samples_per_s = s.value;
    if (m == "data_share" && std::isfinite(s.value)) r.data_share = s.value;
    if (m == "step_q") {
      const auto q = label(s.labels, "quantile");
      if (q == "0.5") r.step_p50_s = s.value;
      if (q == "0.9") r.step_p90_s = s.value;
      if (q == "0.99") r.step_p99_s = s.value;
    }
    if (m == "phase" && s.value == 1) r.phase = label(s.labels, "phase");
  }
  std::map<std::string, ipc::LiveRunState> runs;
  for (auto& [key, r] : ranks) {
    auto& run = runs[rank_job[key]];
    run.name = rank_job[key];
    run.train = true;
    run.time_unix_s = now_unix_s;
    run.interval_ms = 1000;
    run.run_id = static_cast<std::int64_t>(runs.size());
    run.ranks.push_back(r);
  }
  for (auto& [name, run] : runs) {
    std::sort(run.ranks.begin(), run.ranks.end(), [](const auto& a, const auto& b) {
      return std::tie(a.rank, a.host) < std::tie(b.rank, b.host);
    });
    double sps = 0, share = 0, steps = 0;
    int n_share = 0;
    for (const auto& r : run.ranks) {
      if (std::isfinite(r.samples_per_s)) sps += r.samples_per_s;
      if (std::isfinite(r.data_share)) share += r.data_share, ++n_share;
      if (std::isfinite(r.total_steps)) steps = std::max(steps, r.total_steps);
      if (std::isfinite(r.step_p50_s))
        run.step_median_s =
            std::isfinite(run.step_median_s) ? std::max(run.step_median_s, r.step_p50_s) : r.step_p50_s;
    }
    run.samples_per_s = sps;
    run.steps = steps;
    if (n_share) run.data_share = share / n_share;
    run.host = run.ranks.empty() ? "" : run.ranks.front().host;
  }
  // --- alerts ------------------------------------------------------------------------------------
  auto firing = alerts(o.endpoint);
  if (!firing) {
    f.error = firing.error().message;  // the series are shown; the findings cannot be
  } else {
    for (const auto& a : *firing) {
      if (a.state != "firing") continue;
      const auto job = label(a.labels, "job_id");
      if (!o.job.empty() && job != o.job) continue;
      const auto host = label(a.labels, "Hostname");
      if (!o.job.empty() && job.empty() && !keep(host)) continue;
      diagnose::Finding x;
      x.code = label(a.labels, "code");
      x.slug = label(a.labels, "slug");
      x.title = text::terminal(label(a.annotations, "title").empty() ? label(a.labels, "alertname")
                                                                     : label(a.annotations, "title"));
      diagnose::Severity sev{};
      x.severity =
          diagnose::parse_severity(label(a.labels, "severity"), sev) ? sev : diagnose::Severity::warning;
      x.evidence = text::terminal(label(a.annotations, "summary"));
      if (auto r = label(a.annotations, "ranks"); !r.empty()) x.evidence += "; stuck: " + text::terminal(r);
      x.advice = text::terminal(label(a.annotations, "description"));
      x.start_s = x.end_s = a.active_since_unix_s;
      if (int g = int_label(a.labels, "gpu"); g >= 0) x.gpus.push_back(static_cast<unsigned>(g));
      auto it = job.empty() ? runs.end() : runs.find("job " + job);
      if (it != runs.end())
        it->second.findings.push_back(std::move(x));
      else
        f.findings.push_back(std::move(x));
    }
  }
  for (auto& [name, run] : runs) f.runs.push_back(std::move(run));
  std::size_t shown = 0, stale = 0;
  for (const auto& [h, n] : nodes) {
    if (!keep(h)) continue;
    ++shown;
    stale += n.stale ? 1 : 0;
    f.nodes.push_back(n);
  }
  f.snapshot.host.hostname = text::terminal(
      fmt::format("{} ({} node{}{}, {} GPU{}{})", o.endpoint.base_url, shown, shown == 1 ? "" : "s",
                  stale ? fmt::format(", {} stale", stale) : "", f.snapshot.gpus.size(),
                  f.snapshot.gpus.size() == 1 ? "" : "s", o.job.empty() ? "" : ", job " + o.job));
  // A job Prometheus does not have (a typo in --job) is no healthy empty job: say so, naming the
  // jobs it has, as `report --prometheus` does.
  if (!o.job.empty() && shown == 0 && f.runs.empty() && f.error.empty()) {
    f.job_not_found = true;
    auto jobs = known_jobs(o.endpoint, now_unix_s, o.lookback_s);
    f.error = fmt::format("Prometheus {} has no node of job {} in the last {}; the jobs it has: {}",
                          o.endpoint.base_url, o.job, lookback_text(o.lookback_s),
                          jobs ? *jobs : "(unknown: " + jobs.error().message + ")");
    f.snapshot.driver.loaded = false;
    f.snapshot.driver.error = text::terminal(f.error);
  }
  return f;
}

}  // namespace trainmon::cluster
