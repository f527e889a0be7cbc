// SPDX-License-Identifier: Apache-2.0
// A job's history from Prometheus answers (synthetic matrices): nodes, GPUs, ranks, alerts, and the
// job report's model built from them.
#include "trainmon/cluster/job_history.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "trainmon/cluster/job_query.h"
#include "trainmon/diagnose/prom_rules.h"
#include "trainmon/diagnose/thresholds.h"

#include "trainmon/diagnose/train_summary.h"
#include "trainmon/report/job_report.h"

namespace trainmon::cluster {
namespace {

constexpr double kStart = 1764626400;

JobHistory grid(std::size_t n, double step) {
  JobHistory h;
  h.job = "4242";
  h.prometheus = "http://prom:9090";
  h.start_unix_s = kStart;
  h.step_s = step;
  h.end_unix_s = kStart + step * static_cast<double>(n - 1);
  for (std::size_t i = 0; i < n; ++i) h.t.push_back(step * static_cast<double>(i));
  return h;
}

PromSeries series(std::map<std::string, std::string> labels, std::vector<double> values, double step = 1) {
  PromSeries s{std::move(labels), {}};
  for (std::size_t i = 0; i < values.size(); ++i)
    if (!std::isnan(values[i])) s.points.emplace_back(kStart + step * static_cast<double>(i), values[i]);
  return s;
}

TEST(JobQueries, NameEverySeriesAndTheJob) {
  std::map<std::string, std::string> q;
  for (const auto& [k, v] : job_range_queries("4242")) q[k] = v;
  for (const char* key :
       {"info", "util", "fb_used", "reasons", "up", "cpu_busy", "steps", "step_sum", "step_q", "last_step"})
    EXPECT_TRUE(q.contains(key)) << key;
  EXPECT_EQ(q["util"].rfind("max without (GPU_I_ID, GPU_I_PROFILE) (DCGM_FI_DEV_GPU_UTIL) and on (Hostname) "
                            "(trainmon_labels_info{train_job=\"4242\"} or ",
                            0),
            0u)
      << q["util"];
  // MIG: the instances' memory summed to the GPU's
  EXPECT_EQ(q["fb_used"].rfind("sum without (GPU_I_ID, GPU_I_PROFILE) (DCGM_FI_DEV_FB_USED) and on", 0), 0u)
      << q["fb_used"];
  EXPECT_NE(q["steps"].find("trainmon_train_steps_total{train_job=\"\",slurm_job_id=\"4242\"}"),
            std::string::npos);
  EXPECT_EQ(q["steps"].find("and on"), std::string::npos);
  const auto a = job_alerts_query("4242");
  EXPECT_EQ(
      a.rfind(
          "ALERTS{alertstate=\"firing\",job_id=\"4242\"} or (ALERTS{alertstate=\"firing\",job_id=\"\","
          "code=~\"D3|D10|D12|D13|D14|D21\"} and on (Hostname) (trainmon_labels_info{train_job=\"4242\"} or ",
          0),
      0u)
      << a;
  // at a step: the instant value, or whether it fired within the step before (a short episode)
  const auto w = job_alerts_query("4242", 2595);
  EXPECT_EQ(
      w.rfind("ALERTS{alertstate=\"firing\",job_id=\"4242\"} or max_over_time(ALERTS{alertstate=\"firing\","
              "job_id=\"4242\"}[2595s]) or ",
              0),
      0u)
      << w;
  EXPECT_NE(w.find("last_over_time(trainmon_labels_info{train_job=\"4242\"}[2595s])"), std::string::npos)
      << w;
}

// A job that did not run under serve or `trainmon run` (serve as a node service): the GPUs its
// processes hold, as serve attributes them (docs/cluster.md section 10), are the job's.
TEST(JobQueries, TheGpusTheJobsProcessesHold) {
  std::map<std::string, std::string> q;
  for (const auto& [k, v] : job_range_queries("team-a/trainer-0")) q[k] = v;
  EXPECT_NE(
      q["util"].find(" or max without (GPU_I_ID, GPU_I_PROFILE) (DCGM_FI_DEV_GPU_UTIL) and on (Hostname, "
                     "gpu) (trainmon_gpu_process_info{job_id=\"team-a/trainer-0\"} or "
                     "trainmon_gpu_process_info{job_id=\"\",namespace=\"team-a\",pod=\"trainer-0\"})"),
      std::string::npos)
      << q["util"];
  EXPECT_NE(
      q["info"].find(" or group by (Hostname) (trainmon_gpu_process_info{job_id=\"team-a/trainer-0\"} or "),
      std::string::npos)
      << q["info"];
  const auto a = job_alerts_query("77");
  EXPECT_NE(a.find(" and on (Hostname, gpu) (trainmon_gpu_process_info{job_id=\"77\"} or "
                   "trainmon_gpu_process_info{job_id=\"\",pod=\"\",pod_uid=\"77\"})"),
            std::string::npos)
      << a;
  EXPECT_EQ(attributed_job_of({{"job_id", "77"}, {"namespace", "ns"}, {"pod", "p"}}), "77");
  EXPECT_EQ(attributed_job_of({{"namespace", "ns"}, {"pod", "p"}, {"pod_uid", "u"}}), "ns/p");
  EXPECT_EQ(attributed_job_of({{"pod_uid", "u"}}), "u");
  EXPECT_EQ(attributed_job_of({{"user", "alice"}}), "");
}

// Without a job_id only the node's hardware alerts are the job's: never another run's hang or a
// job alert; the list matches what the rules give a job_id only where the node is in a job.
TEST(JobQueries, NodeAlertsAreTheRulesHardwareAlerts) {
  std::set<std::string> optional, job_only;
  for (const auto& g : diagnose::prometheus_rule_groups(diagnose::Thresholds{}))
    for (const auto& r : g.rules) {
      if (r.alert.empty()) continue;
      const bool node =
          r.expr.find("group_left (job_id) trainmon:job_node_single:info or on") != std::string::npos;
      (node ? optional : job_only).insert(r.labels.at("code"));
    }
  std::set<std::string> listed(std::begin(kNodeAlertCodes), std::end(kNodeAlertCodes));
  EXPECT_EQ(optional, listed);
  for (const char* c : {"D2", "D7", "D23", "D24"}) EXPECT_FALSE(listed.contains(c)) << c;
}

TEST(AddJobSeries, GroupsGpusByNodeOnTheSharedAxis) {
  JobHistory h = grid(4, 1);
  const std::map<std::string, std::string> a0{
      {"Hostname", "node-a"}, {"gpu", "0"}, {"modelName", "NVIDIA H100"}};
  auto with = [](std::map<std::string, std::string> l, const char* key) {
    l["trainmon_m"] = key;
    return l;
  };
  std::vector<PromSeries> in = {
      series({{"trainmon_m", "info"}, {"Hostname", "node-b"}, {"slurm_job_id", "4242"}}, {1, 1, 1, 1}),
      series(with(a0, "util"), {90, NAN, 95, 100}),
      series(with(a0, "fb_used"), {1000, 1000, 2000, 2000}),
      series(with(a0, "fb_free"), {80000, 80000, 79000, 79000}),
      series(with(a0, "fb_reserved"), {559, 559, 559, 559}),
      series(with(a0, "reasons"), {0, 0x20, 0x20, 0}),
      series(with(a0, "up"), {1, 1, 0, 0}),
      // serve's total where it has one (rows 2, 3: 81560 MiB, where the rounded fields give 81559)
      series(with(a0, "fb_total"), {NAN, NAN, 1048576.0 * 81560, 1048576.0 * 81560}),
      series(with({{"Hostname", "node-a"}, {"gpu", "3"}}, "temp"), {40, 41, 42, 43}),
      series({{"trainmon_m", "mem_total"}, {"Hostname", "node-a"}}, {1048576.0 * 4096, NAN, NAN, NAN}),
      series({{"trainmon_m", "cpu_busy"}, {"Hostname", "node-a"}}, {0.5, 0.25, NAN, NAN}),
      // a point off the grid (not a step of the range) and one past its end are left out
      PromSeries{with(a0, "power"), {{kStart + 10, 300}, {kStart - 5, 1}}},
  };
  add_job_series(h, in);
  ASSERT_EQ(h.nodes.size(), 2u);
  EXPECT_EQ(h.nodes[0].host, "node-a");
  EXPECT_EQ(h.nodes[1].host, "node-b");
  EXPECT_TRUE(h.nodes[1].series.gpus.empty());
  const auto& rs = h.nodes[0].series;
  ASSERT_EQ(rs.t, h.t);
  ASSERT_EQ(rs.gpus.size(), 2u);
  const auto& g = rs.gpus[0];
  EXPECT_EQ(g.index, 0u);
  EXPECT_EQ(g.name, "NVIDIA H100");
  EXPECT_EQ(g.util_gpu_pct[0], 90);
  EXPECT_TRUE(std::isnan(g.util_gpu_pct[1]));
  EXPECT_EQ(g.mem_used_mib[2], 2000);
  EXPECT_EQ(g.mem_total_mib[0], 81559);  // used + free + reserved
  EXPECT_EQ(g.mem_total_mib[2], 81560);  // trainmon_gpu_memory_total_bytes
  EXPECT_EQ(g.clock_reasons[1], 0x20u);
  EXPECT_EQ(g.state[1], diagnose::GpuState::ok);
  EXPECT_EQ(g.state[2], diagnose::GpuState::lost);
  EXPECT_TRUE(std::all_of(g.power_w.begin(), g.power_w.end(), [](float v) { return std::isnan(v); }));
  EXPECT_EQ(rs.gpus[1].index, 3u);
  EXPECT_EQ(rs.gpus[1].temp_c[3], 43);
  EXPECT_EQ(rs.host.mem_total_mib[0], 4096);
  EXPECT_EQ(rs.host.cpu_busy_pct[1], 25);
}

TEST(AddJobSeries, RanksBecomeTrainWindowsFromTheCounters) {
  JobHistory h = grid(4, 10);
  auto rank = [](int r, const char* host, const char* key) {
    return std::map<std::string, std::string>{{"trainmon_m", key},
                                              {"Hostname", host},
                                              {"rank", std::to_string(r)},
                                              {"gpu", std::to_string(r % 8)},
                                              {"run_id", "3"},
                                              {"slurm_job_id", "4242"}};
  };
  auto q = [&](int r, const char* host, const char* quantile) {
    auto l = rank(r, host, "step_q");
    l["quantile"] = quantile;
    return l;
  };
  std::vector<PromSeries> in = {
      // rank 0 on node-a: 10 steps of 1 s per 10 s, 32 samples a step, 0.2 s data wait a step
      series(rank(0, "node-a", "steps"), {100, 110, 120, 130}, 10),
      series(rank(0, "node-a", "samples"), {3200, 3520, 3840, 4160}, 10),
      series(rank(0, "node-a", "step_sum"), {100, 110, 120, 130}, 10),
      series(rank(0, "node-a", "data"), {20, 22, 24, 26}, 10),
      series(rank(0, "node-a", "last_step"), {kStart, kStart + 10, kStart + 20, kStart + 30}, 10),
      series(q(0, "node-a", "0.5"), {1, 1, 1, 1}, 10),
      series(q(0, "node-a", "0.9"), {1.2, 1.2, 1.2, 1.2}, 10),
      // rank 9 on node-b: half as fast, restarted (counter reset) before the last point
      series(rank(9, "node-b", "steps"), {50, 55, 60, 4}, 10),
      series(rank(9, "node-b", "samples"), {1600, 1760, 1920, 128}, 10),
      series(rank(9, "node-b", "step_sum"), {100, 110, 120, 8}, 10),
  };
  add_job_series(h, in);
  ASSERT_EQ(h.train.ranks.size(), 2u);
  const auto& r0 = h.train.ranks[0];
  EXPECT_EQ(r0.id.rank, 0);
  EXPECT_EQ(r0.id.host, "node-a");
  EXPECT_EQ(r0.id.gpu, 0);
  ASSERT_EQ(r0.rows.size(), 4u);
  EXPECT_EQ(r0.rows[0].steps, 0u);  // the first point has no earlier one to count from
  EXPECT_EQ(r0.rows[1].steps, 10u);
  EXPECT_EQ(r0.rows[1].samples, 320);
  EXPECT_FLOAT_EQ(r0.rows[1].step.sum, 10);
  EXPECT_FLOAT_EQ(r0.rows[1].data.sum, 2);
  EXPECT_FLOAT_EQ(r0.rows[1].step.p90, 1.2f);
  EXPECT_EQ(r0.rows[1].last_step_t, 10);
  const auto& r9 = h.train.ranks[1];
  EXPECT_EQ(r9.id.key, 9);
  EXPECT_EQ(r9.id.host, "node-b");
  EXPECT_EQ(r9.rows[3].steps, 4u);  // after the reset: what came since
  const auto stats = diagnose::train_stats(h.train);
  EXPECT_EQ(stats.steps, 30u);                          // the rank that did the most
  EXPECT_NEAR(stats.ranks[0].samples_per_s, 32, 1e-9);  // 32 samples per 1 s step
  EXPECT_NEAR(stats.ranks[0].data_share, 0.2, 1e-6);
  EXPECT_NEAR(stats.ranks[1].samples_per_s, 16, 1e-9);
}

// Steps before a counter's first scrape: counted when the counter began in the range (the range
// starts with the job, or the rank's series appears later); not when the range cuts into the job.
TEST(AddJobSeries, AFreshCounterCountsFromZero) {
  auto rank = [](const char* r, const char* key) {
    return std::map<std::string, std::string>{
        {"trainmon_m", key}, {"Hostname", "node-a"}, {"rank", r}, {"slurm_job_id", "4242"}};
  };
  const std::vector<PromSeries> in = {series(rank("0", "steps"), {6, 14, 22, 30}, 10),
                                      series(rank("1", "steps"), {NAN, 5, 13, 21}, 10)};
  JobHistory cut = grid(4, 10);  // --from inside the job: rank 0's 6 came before the range
  add_job_series(cut, in);
  ASSERT_EQ(cut.train.ranks.size(), 2u);
  EXPECT_EQ(cut.train.ranks[0].rows[0].steps, 0u);
  EXPECT_EQ(cut.train.ranks[1].rows[0].steps, 5u);  // began inside the range
  EXPECT_EQ(diagnose::train_stats(cut.train).ranks[0].steps, 24u);
  JobHistory whole = grid(4, 10);
  whole.from_job_start = true;  // the job's whole span: its first 6 steps are the job's
  add_job_series(whole, in);
  EXPECT_EQ(whole.train.ranks[0].rows[0].steps, 6u);
  EXPECT_EQ(diagnose::train_stats(whole.train).ranks[0].steps, 30u);
}

TEST(AddJobAlerts, OneFindingPerEpisodeWithTheRulesAdvice) {
  JobHistory h = grid(20, 1);
  const std::map<std::string, std::string> d2{
      {"__name__", "ALERTS"},    {"alertname", "TrainmonGpuStraggler"},
      {"alertstate", "firing"},  {"code", "D2"},
      {"slug", "gpu-imbalance"}, {"severity", "warning"},
      {"Hostname", "node-b"},    {"gpu", "0"},
      {"job_id", "4242"}};
  std::vector<double> on(20, NAN);
  for (int i : {2, 3, 4, 10, 11, 18, 19}) on[static_cast<std::size_t>(i)] = 1;
  PromAlert live;
  live.labels = d2;
  live.labels.erase("__name__");
  live.labels.erase("alertstate");
  live.state = "firing";
  live.annotations = {{"summary", "GPU 0 on node-b (job 4242) is the straggler at 99 %"},
                      {"description", "live advice"}};
  add_job_alerts(h, {series(d2, on)}, {live});
  ASSERT_EQ(h.findings.size(), 3u);
  const auto& f = h.findings[0].finding;
  EXPECT_EQ(f.code, "D2");
  EXPECT_EQ(f.slug, "gpu-imbalance");
  EXPECT_EQ(f.severity, diagnose::Severity::warning);
  EXPECT_EQ(f.start_s, 2);
  EXPECT_EQ(f.end_s, 4);
  EXPECT_EQ(f.gpus, std::vector<unsigned>{0});
  EXPECT_EQ(h.findings[0].host, "node-b");
  EXPECT_FALSE(h.findings[0].firing_at_end);
  // the rule's advice with its {{ $labels.X }} filled in
  EXPECT_EQ(f.advice.rfind("GPU0 on node-b is the straggler", 0), 0u) << f.advice;
  EXPECT_EQ(f.advice.find("{{"), std::string::npos);
  EXPECT_NE(f.evidence.find("TrainmonGpuStraggler GPU 0 on node-b fired from 2025-12-01T22:00:02Z to "
                            "2025-12-01T22:00:04Z (resolved)"),
            std::string::npos)
      << f.evidence;
  EXPECT_EQ(h.findings[1].finding.start_s, 10);
  // still firing: Prometheus' own summary and description
  const auto& last = h.findings[2];
  EXPECT_TRUE(last.firing_at_end);
  EXPECT_EQ(last.finding.advice, "live advice");
  EXPECT_EQ(last.finding.evidence.rfind("GPU 0 on node-b (job 4242) is the straggler at 99 % (", 0), 0u);
}

// A short alert in a long range: the window's series (no __name__) and the instant one are one
// alert; a point the instant value missed still makes an episode.
TEST(AddJobAlerts, MergesTheWindowSeriesAndFindsAShortEpisode) {
  JobHistory h = grid(10, 600);
  std::map<std::string, std::string> d12{{"__name__", "ALERTS"},
                                         {"alertname", "TrainmonGpuThermalThrottle"},
                                         {"alertstate", "firing"},
                                         {"code", "D12"},
                                         {"severity", "warning"},
                                         {"Hostname", "node-b"},
                                         {"gpu", "0"},
                                         {"job_id", "4242"}};
  std::vector<double> instant(10, NAN), window(10, NAN);
  instant[2] = instant[3] = 1;
  window[4] = 1;  // it resolved between 3 and 4
  window[7] = 1;  // 20 s of throttling between two points: only the window saw it
  auto no_name = d12;
  no_name.erase("__name__");
  add_job_alerts(h, {series(d12, instant, 600), series(no_name, window, 600)}, {});
  ASSERT_EQ(h.findings.size(), 2u);
  EXPECT_EQ(h.findings[0].finding.start_s, 1200);
  EXPECT_EQ(h.findings[0].finding.end_s, 2400);
  EXPECT_EQ(h.findings[1].finding.start_s, 4200);
  EXPECT_EQ(h.findings[1].host, "node-b");
  // the rule's thresholds, as numbers
  EXPECT_EQ(h.findings[0].finding.thresholds.at("throttle_for_s"), 30);
}

// The job's hang (labels job_id only) gets its ranks, node and longest stall from the episode.
TEST(AddHangRanks, NamesTheStuckRanksAndTheirNode) {
  JobHistory h = grid(20, 1);
  std::map<std::string, std::string> d23{{"__name__", "ALERTS"},   {"alertname", "TrainmonTrainingHang"},
                                         {"alertstate", "firing"}, {"code", "D23"},
                                         {"severity", "critical"}, {"job_id", "4242"}};
  std::vector<double> on(20, NAN);
  for (int i = 5; i < 9; ++i) on[static_cast<std::size_t>(i)] = 1;
  add_job_alerts(h, {series(d23, on)}, {});
  ASSERT_EQ(h.findings.size(), 1u);
  auto& jf = h.findings[0];
  EXPECT_TRUE(jf.host.empty());
  EXPECT_EQ(jf.finding.thresholds.at("hang_floor_s"), 120);
  EXPECT_EQ(jf.finding.thresholds.at("hang_p90_factor"), 5);
  PromSample r1{{{"rank", "1"}, {"Hostname", "node-a"}, {"gpu", "1"}, {"job_id", "4242"}}, 21.91, 0};
  PromSample r0{{{"rank", "0"}, {"Hostname", "node-a"}, {"gpu", "0"}, {"job_id", "4242"}}, 12.5, 0};
  add_hang_ranks(jf, {r0, r1});
  EXPECT_EQ(jf.host, "node-a");
  EXPECT_NE(jf.finding.evidence.find(
                "; stuck: rank 1 on node-a (GPU 1) for 21.9 s, rank 0 on node-a (GPU 0) for 12.5 s"),
            std::string::npos)
      << jf.finding.evidence;
  EXPECT_EQ(jf.finding.numbers.at("stuck_ranks"), 2);
  EXPECT_EQ(jf.finding.numbers.at("max_stall_s"), 21.91);
  // ranks on two nodes: the finding stays the job's (no single host)
  JobFinding two;
  PromSample b{{{"rank", "2"}, {"Hostname", "node-b"}}, 3, 0};
  add_hang_ranks(two, {r1, b});
  EXPECT_TRUE(two.host.empty());
  add_hang_ranks(two, {});  // nothing: unchanged
  EXPECT_EQ(two.finding.numbers.at("stuck_ranks"), 2);
}

TEST(JobReportModel, EveryNodeUnderItsNameWithItsFindings) {
  JobHistory h = grid(30, 1);
  std::vector<PromSeries> in;
  for (const char* host : {"node-a", "node-b"})
    for (const char* gpu : {"0", "1"}) {
      std::vector<double> util(30, std::string(host) == "node-a" && std::string(gpu) == "1" ? 0.0 : 90.0);
      in.push_back(
          series({{"trainmon_m", "util"}, {"Hostname", host}, {"gpu", gpu}, {"modelName", "H100"}}, util));
    }
  add_job_series(h, in);
  JobFinding jf;
  jf.finding.code = "D7";
  jf.finding.severity = diagnose::Severity::warning;
  jf.finding.start_s = 5;
  jf.finding.end_s = 20;
  jf.finding.gpus = {1};
  jf.host = "node-a";
  h.findings.push_back(jf);
  const auto m = report::build_job_report_model(h, 2000);
  EXPECT_EQ(m["job"]["id"], "4242");
  EXPECT_EQ(m["job"]["gpus"], 4);
  ASSERT_EQ(m["job"]["nodes"].size(), 2u);
  EXPECT_EQ(m["job"]["nodes"][0]["gpus"][1]["mean_util_pct"], 0);
  EXPECT_EQ(m["job"]["nodes"][1]["gpus"][1]["mean_util_pct"], 90);
  EXPECT_EQ(m["x"].size(), 30u);
  std::set<std::string> ids, groups;
  for (const auto& c : m["charts"]) {
    ids.insert(c["id"].get<std::string>());
    groups.insert(c["group"].get<std::string>());
  }
  EXPECT_TRUE(ids.contains("n0-gpu1-util") && ids.contains("n1-gpu1-util") && ids.contains("n1-cmp-util"));
  EXPECT_TRUE(groups.contains("node-b · GPU 0 (H100)"));
  ASSERT_EQ(m["findings"].size(), 1u);
  const auto& f = m["findings"][0];
  EXPECT_EQ(f["host"], "node-a");
  // shaded on node-a's GPU 1 and comparison charts only
  std::set<std::string> on;
  for (const auto& c : f["charts"]) on.insert(c.get<std::string>());
  EXPECT_TRUE(on.contains("n0-gpu1-util") && on.contains("n0-cmp-util"));
  EXPECT_FALSE(on.contains("n0-gpu0-util") || on.contains("n1-gpu1-util"));
  EXPECT_EQ(report::default_job_report_path("/var/lib/t/trainmon.db", "a/b c"),
            "/var/lib/t/reports/job-a_b_c.html");
  EXPECT_FALSE(report::render_job_report(h, {.format = report::Format::markdown}).has_value());
}

}  // namespace
}  // namespace trainmon::cluster
