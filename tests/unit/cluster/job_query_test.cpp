// SPDX-License-Identifier: Apache-2.0
// The PromQL that picks a job, the command line's times, the base URL check and top's frame query.
#include "trainmon/cluster/job_query.h"

#include <gtest/gtest.h>

#include "trainmon/cluster/cluster_view.h"
#include "trainmon/cluster/prometheus_client.h"

namespace trainmon::cluster {
namespace {

TEST(PromqlString, EscapesQuotesBackslashesAndControls) {
  EXPECT_EQ(promql_string("4242"), "\"4242\"");
  EXPECT_EQ(promql_string("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(promql_string("x\ny\x01"), "\"x\\ny\\x01\"");
  EXPECT_EQ(promql_string("作业"), "\"作业\"");
}

TEST(JobMatchers, FollowTheJobIdPrecedence) {
  const auto m = job_matchers("4242");
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m[0], "train_job=\"4242\"");
  EXPECT_EQ(m[1], "train_job=\"\",slurm_job_id=\"4242\"");
  EXPECT_EQ(m[2], "train_job=\"\",slurm_job_id=\"\",torchelastic_run_id=\"4242\"");
  // torchrun's default run id "none" is no id: a later label decides
  EXPECT_EQ(m[3], "train_job=\"\",slurm_job_id=\"\",torchelastic_run_id=~\"|none\",pbs_jobid=\"4242\"");
  EXPECT_EQ(m[5],
            "train_job=\"\",slurm_job_id=\"\",torchelastic_run_id=~\"|none\",pbs_jobid=\"\",lsb_jobid=\"\","
            "job_id=\"4242\"");
  EXPECT_TRUE(job_matchers("").empty());
  // "none" is never a torchelastic id
  for (const auto& x : job_matchers("none"))
    EXPECT_EQ(x.find("torchelastic_run_id=\"none\""), std::string::npos) << x;
  EXPECT_EQ(job_matchers("none").size(), 5u);
  // a hostile id stays one string literal
  EXPECT_EQ(job_matchers("a\"} or up{x=\"")[0], "train_job=\"a\\\"} or up{x=\\\"\"");
}

TEST(JobSelector, OrsOneSelectorPerMatcher) {
  EXPECT_EQ(job_selector("trainmon_labels_info", ""), "trainmon_labels_info");
  EXPECT_EQ(job_selector("m", "", "10s"), "last_over_time(m[10s])");
  const auto s = job_selector("trainmon_labels_info", "7", "600s");
  EXPECT_EQ(s.rfind("last_over_time(trainmon_labels_info{train_job=\"7\"}[600s]) or ", 0), 0u) << s;
  EXPECT_NE(s.find(" or last_over_time(trainmon_labels_info{train_job=\"\",slurm_job_id=\"7\"}[600s])"),
            std::string::npos)
      << s;
}

TEST(TopFrameQuery, FiltersTheJobInsideTheQuery) {
  const auto all = frame_query(600);
  EXPECT_EQ(all.find("slurm_job_id"), std::string::npos);
  const auto job = frame_query(600, "4242");
  // GPU series: the instant vector (staleness ends a destroyed MIG instance), else the last value
  // within the lookback (a node whose scrapes fail); joined on the job's nodes; ranks: their labels
  EXPECT_NE(
      job.find("((max without (GPU_I_ID, GPU_I_PROFILE) (DCGM_FI_DEV_GPU_UTIL) or max without (GPU_I_ID, "
               "GPU_I_PROFILE) (last_over_time(DCGM_FI_DEV_GPU_UTIL[600s]))) and on (Hostname) "
               "(last_over_time(trainmon_labels_info{train_job=\"4242\"}[600s]) or "),
      std::string::npos)
      << job;
  // A MIG-enabled GPU's instance series make one row: memory summed, the repeated fields once
  EXPECT_NE(all.find("(sum without (GPU_I_ID, GPU_I_PROFILE) (DCGM_FI_DEV_FB_USED) or sum without (GPU_I_ID, "
                     "GPU_I_PROFILE) (last_over_time(DCGM_FI_DEV_FB_USED[600s])))"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("max without (GPU_I_ID, GPU_I_PROFILE) (last_over_time(DCGM_FI_DEV_GPU_TEMP[600s]))"),
            std::string::npos);
  EXPECT_NE(all.find("max without (GPU_I_ID, GPU_I_PROFILE) (trainmon_gpu_memory_total_bytes)"),
            std::string::npos);
  EXPECT_EQ(all.find("max without (GPU_I_ID, GPU_I_PROFILE) (last_over_time(trainmon_train"),
            std::string::npos);
  EXPECT_NE(
      job.find("last_over_time(trainmon_train_steps_total{train_job=\"\",slurm_job_id=\"4242\"}[600s])"),
      std::string::npos);
  EXPECT_NE(job.find("rate(trainmon_train_samples_total{train_job=\"4242\"}[1m])"), std::string::npos);
  EXPECT_EQ(job.find("last_over_time(DCGM_FI_DEV_GPU_UTIL[600s]), "), std::string::npos);
}

TEST(TopFrameQuery, GroupsAndFiltersByTheProcessesAttributedJob) {
  // Every GPU's attributed jobs (serve's trainmon_gpu_process_info, docs/cluster.md section 10)
  const auto all = frame_query(600);
  EXPECT_NE(
      all.find(R"(label_replace(max by (Hostname, gpu, job_id, namespace, pod, pod_uid) )"
               R"((last_over_time(trainmon_gpu_process_info[600s])), "trainmon_m", "gpu_job", "", ""))"),
      std::string::npos)
      << all;
  // --job: the job's nodes, or the GPUs its processes hold (a Slurm job id, or a pod's uid) ...
  const auto slurm = frame_query(600, "4242");
  EXPECT_NE(
      slurm.find(R"((last_over_time(DCGM_FI_DEV_GPU_UTIL[600s]))) and on (Hostname, gpu) )"
                 R"((last_over_time(trainmon_gpu_process_info{job_id="4242"}[600s]) or )"
                 R"(last_over_time(trainmon_gpu_process_info{job_id="",pod="",pod_uid="4242"}[600s])))"),
      std::string::npos)
      << slurm;
  // ... or a pod as namespace/pod, quoted as PromQL strings
  const auto pod = frame_query(600, "team-a/trainer\"0");
  EXPECT_NE(pod.find(R"(trainmon_gpu_process_info{job_id="",namespace="team-a",pod="trainer\"0"}[600s]))"),
            std::string::npos)
      << pod;
}

TEST(ParseTimeArg, AcceptsRfc3339UnixSecondsNowAndRelative) {
  const double now = 1764626400;  // 2025-12-01T22:00:00Z
  EXPECT_EQ(*parse_time_arg("2025-12-01T22:00:00Z", now), 1764626400);
  EXPECT_EQ(*parse_time_arg("2025-12-01T23:00:00+01:00", now), 1764626400);
  EXPECT_EQ(*parse_time_arg("2025-12-01t21:30:00-00:30", now), 1764626400);
  EXPECT_DOUBLE_EQ(*parse_time_arg("2025-12-01T22:00:00.25Z", now), 1764626400.25);
  EXPECT_EQ(*parse_time_arg("1764626400", now), 1764626400);
  EXPECT_DOUBLE_EQ(*parse_time_arg("1764626400.5", now), 1764626400.5);
  EXPECT_EQ(*parse_time_arg("now", now), now);
  EXPECT_EQ(*parse_time_arg("-2h", now), now - 7200);
  EXPECT_EQ(*parse_time_arg("-1h30m", now), now - 5400);
  EXPECT_EQ(*parse_time_arg("-45s", now), now - 45);
  EXPECT_EQ(*parse_time_arg("-1d", now), now - 86400);
  for (const char* bad :
       {"", "yesterday", "2h", "-2", "-2x", "2025-12-01T22:00:00", "2025-02-31T00:00:00Z",
        "2025-12-01T25:00:00Z", "1e9", "0x10", "-", "12:00", ".5", "2025-12-01T22:00:00Zjunk"}) {
    auto t = parse_time_arg(bad, now);
    ASSERT_FALSE(t.has_value()) << bad;
    EXPECT_EQ(t.error().domain, ErrorDomain::usage);
    EXPECT_NE(t.error().message.find("is not a time"), std::string::npos) << t.error().message;
  }
}

TEST(RangeStep, AtMostMaxPointsAndWholeSeconds) {
  EXPECT_EQ(range_step_s(0, 60, 1000), 1);      // a minute: a point a second
  EXPECT_EQ(range_step_s(0, 86400, 1000), 87);  // a day: 993 points
  EXPECT_LE(86400 / range_step_s(0, 86400, 1000) + 1, 1000);
  EXPECT_EQ(range_step_s(0, 3600, 1000, 15), 15);  // never under the minimum
  EXPECT_EQ(range_step_s(10, 10, 1000), 1);
}

// A range wider than the job: the report covers the job's span, and its step follows from that.
TEST(ClampToJob, CutsTheRangeToTheJobsSpan) {
  constexpr double first = 1764634157, last = first + 655;  // an 11-minute job
  // --from -30d: the job's own span, not the month
  auto r = clamp_to_job(first - 30 * 86400, first + 86400, first, last);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->start_unix_s, first);
  EXPECT_EQ(r->end_unix_s, last);
  // the step of that part: a point a second (the scrape interval), not the month's 2595 s
  EXPECT_EQ(range_step_s(r->start_unix_s, r->end_unix_s, 1000, 1), 1);
  EXPECT_EQ(range_step_s(first - 30 * 86400, first + 86400, 1000, 1), 2682);  // what it was
  // not given: the job's edges
  r = clamp_to_job(NAN, NAN, first, last);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->start_unix_s, first);
  EXPECT_EQ(r->end_unix_s, last);
  // a range inside the job stays as given; one across its start is cut there
  r = clamp_to_job(first + 60, first + 120, first, last);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->start_unix_s, first + 60);
  EXPECT_EQ(r->end_unix_s, first + 120);
  r = clamp_to_job(first - 3600, first + 100, first, last);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->start_unix_s, first);
  EXPECT_EQ(r->end_unix_s, first + 100);
  // a 30-day job in a 30-day range: at most 1000 points, never finer than a 15 s scrape
  EXPECT_EQ(range_step_s(0, 30 * 86400, 1000, 15), 2595);
  EXPECT_EQ(range_step_s(0, 600, 1000, 15), 15);
  // no overlap (the job ended before the range, or began after it), or no span at all
  EXPECT_FALSE(clamp_to_job(last + 1, last + 100, first, last));
  EXPECT_FALSE(clamp_to_job(first - 100, first - 1, first, last));
  EXPECT_FALSE(clamp_to_job(NAN, NAN, NAN, NAN));
  // a single sample: a range of no length, which the caller widens to a second
  r = clamp_to_job(first - 10, last, first, first);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->end_unix_s - r->start_unix_s, 0);
}

TEST(NormalizeBaseUrl, RefusesWhatIsNoUrl) {
  EXPECT_EQ(*normalize_base_url("http://prom:9090/"), "http://prom:9090");
  EXPECT_EQ(*normalize_base_url("https://[::1]:9090"), "https://[::1]:9090");
  EXPECT_EQ(*normalize_base_url("http://u:p@prom.example.org/prometheus"),
            "http://u:p@prom.example.org/prometheus");
  const std::pair<const char*, const char*> bad[] = {
      {"http://[::1", "no closing ']'"},
      {"http://[::1]x", "after its IPv6"},
      {"http://[zz]:1", "is not one"},
      {"http://h:0", "port '0'"},
      {"http://h:99999", "port '99999'"},
      {"http://h:", "port ''"},
      {"http://h:9a", "port '9a'"},
      {"http://h^/", "character a host name cannot have"},
      {"http://", "no host"},
      {"ftp://h", "must start with http"},
      {"http://h/?q", "query or fragment"},
  };
  for (const auto& [url, why] : bad) {
    auto r = normalize_base_url(url);
    ASSERT_FALSE(r.has_value()) << url;
    EXPECT_NE(r.error().message.find(why), std::string::npos) << url << ": " << r.error().message;
  }
}

}  // namespace
}  // namespace trainmon::cluster
