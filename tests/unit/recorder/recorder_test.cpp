// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <memory>

#include "trainmon/recorder/job_tree.h"
#include "trainmon/recorder/labels.h"
#include "trainmon/recorder/resource_line.h"
#include "trainmon/recorder/run_stats.h"
#include "trainmon/recorder/session.h"

namespace trainmon::recorder {
namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

GpuSample gpu(unsigned index, unsigned util, std::uint64_t used, std::uint64_t total) {
  GpuSample g;
  g.index = index;
  auto info = std::make_shared<GpuStaticInfo>();
  info->name = Reading<std::string>::of("NVIDIA H200");
  info->uuid = Reading<std::string>::of("GPU-" + std::to_string(index));
  g.info = info;
  g.utilization_gpu_pct = Reading<unsigned>::of(util);
  g.memory_used_bytes = Reading<std::uint64_t>::of(used);
  g.memory_total_bytes = Reading<std::uint64_t>::of(total);
  return g;
}

ProcessSample proc(std::uint32_t pid, std::uint32_t ppid, std::uint64_t rss, double cpu) {
  ProcessSample p;
  p.pid = pid;
  p.ppid = ppid;
  p.state = 'S';
  p.comm = "python3";
  p.rss_bytes = Reading<std::uint64_t>::of(rss);
  p.cpu_pct = Reading<double>::of(cpu);
  return p;
}

Snapshot snapshot() {
  Snapshot s;
  s.time_unix_ns = 1'700'000'000'000'000'000;
  s.monotonic_ns = 750'000'000'000;  // 00:12:30 after a start at 0
  s.gpus = {gpu(0, 94, 87'100'000'000, 100'000'000'000), gpu(1, 12, 15'600'000'000, 100'000'000'000)};
  s.host.memory.total_bytes = Reading<std::uint64_t>::of(static_cast<std::uint64_t>(61.4 * kGiB));
  s.host.memory.used_bytes = Reading<std::uint64_t>::of(static_cast<std::uint64_t>(38.2 * kGiB));
  s.host.cpu_total.busy_pct = 42.1;
  return s;
}

TEST(RecorderResourceLine, MatchesTheArticleFormat) {
  Snapshot s = snapshot();
  JobTotals job{3, static_cast<std::uint64_t>(5.1 * kGiB), 130};
  EXPECT_EQ(
      format_resource_line(s, 750'000, job),
      "Resource @ 00:12:30: GPU0(H200): 94.0%/87.1% GPU1(H200): 12.0%/15.6% | Mem: 62.2%(38.2G/61.4G) | "
      "CPU: 42.1% | RSS: 5.1G");
  s.gpus[1].utilization_gpu_pct = Reading<unsigned>::fail(ReadStatus::not_supported);
  s.gpus[0].gpu_utilization_samples = {{1, 90}, {2, 0}, {3, 90}};  // high-resolution samples win
  EXPECT_EQ(
      format_resource_line(s, 1000, std::nullopt, "45/200"),
      "Resource @ epoch 45/200: GPU0(H200): 60.0%/87.1% GPU1(H200): N/A%/15.6% | Mem: 62.2%(38.2G/61.4G) | "
      "CPU: 42.1%");
  // The article's own example (python/trainmon's test_article_example_line_is_reproduced_exactly).
  Snapshot a;
  a.gpus = {gpu(0, 94, 871, 1000), gpu(1, 12, 156, 1000)};
  for (auto& g : a.gpus) {
    auto info = std::make_shared<GpuStaticInfo>(*g.info);
    info->name = Reading<std::string>::of("Tesla V100-SXM2-32GB");
    g.info = info;
  }
  a.gpus[0].gpu_utilization_samples = {{1, 94.2}};
  a.gpus[1].gpu_utilization_samples = {{1, 12.3}};
  a.host.memory.total_bytes = Reading<std::uint64_t>::of(static_cast<std::uint64_t>(61.4 * kGiB));
  a.host.memory.used_bytes = Reading<std::uint64_t>::of(static_cast<std::uint64_t>(38.2 * kGiB));
  a.host.cpu_total.busy_pct = 42.1;
  EXPECT_EQ(
      format_resource_line(a, 0, std::nullopt, "45/200"),
      "Resource @ epoch 45/200: GPU0(V100): 94.2%/87.1% GPU1(V100): 12.3%/15.6% | Mem: 62.2%(38.2G/61.4G) | "
      "CPU: 42.1%");
}

TEST(RecorderResourceLine, TrainPartFromTheLastInterval) {
  Snapshot s = snapshot();
  diagnose::TrainStats t;
  t.steps = 100;
  t.samples_per_s = 1234.54;
  t.step_median_s = 0.4123;
  t.data_share = 0.1234;
  EXPECT_EQ(
      format_resource_line(s, 750'000, std::nullopt, std::nullopt, &t),
      "Resource @ 00:12:30: GPU0(H200): 94.0%/87.1% GPU1(H200): 12.0%/15.6% | Mem: 62.2%(38.2G/61.4G) | "
      "CPU: 42.1% | train: 1234.5 samples/s step 0.412s data 12.3%");
  t.samples_per_s = NAN;  // the batch size is not known: the rest still shows
  EXPECT_EQ(format_train_part(t), "step 0.412s data 12.3%");
  diagnose::TrainStats none;
  EXPECT_EQ(format_resource_line(s, 750'000, std::nullopt, std::nullopt, &none),
            format_resource_line(s, 750'000, std::nullopt));
}

TEST(RecorderResourceLine, ShortGpuNamesAsThePythonPackage) {
  EXPECT_EQ(short_gpu_name("Tesla V100-SXM2-32GB"), "V100");
  EXPECT_EQ(short_gpu_name("NVIDIA H200"), "H200");
  EXPECT_EQ(short_gpu_name("NVIDIA GeForce RTX 4090"), "RTX 4090");
  EXPECT_EQ(short_gpu_name("NVIDIA A100-SXM4-40GB"), "A100");
  EXPECT_EQ(short_gpu_name("NVIDIA GeForce RTX 2080 SUPER"), "RTX 2080");
  EXPECT_EQ(short_gpu_name(""), "?");
  EXPECT_EQ(short_gpu_name("NVIDIA"), "NVIDIA");
}

TEST(RecorderStats, MeansPeaksAndRssGrowth) {
  RunStats stats;
  Snapshot s = snapshot();
  for (int i = 0; i < 4; ++i) {
    s.gpus[0].utilization_gpu_pct = Reading<unsigned>::of(i % 2 ? 90u : 10u);
    s.gpus[0].memory_used_bytes = Reading<std::uint64_t>::of(1000u * (i + 1));
    // RSS grows 1 GiB per 30 min -> 2 GiB/h
    JobTotals job{2, static_cast<std::uint64_t>(4 * kGiB + i * (kGiB / 2)), 100.0 + i};
    stats.add(s, i * 1'800'000LL, job, {0});
  }
  auto sum = stats.summary();
  ASSERT_EQ(sum.gpus.size(), 2u);
  EXPECT_DOUBLE_EQ(*sum.gpus[0].mean_util_pct, 50.0);
  EXPECT_DOUBLE_EQ(*sum.gpus[0].peak_util_pct, 90.0);
  EXPECT_EQ(*sum.gpus[0].peak_memory_used_bytes, 4000u);
  EXPECT_TRUE(sum.gpus[0].used_by_job);
  EXPECT_FALSE(sum.gpus[1].used_by_job);
  EXPECT_EQ(*sum.peak_job_rss_bytes, 4 * kGiB + 3 * (kGiB / 2));
  EXPECT_NEAR(*sum.job_rss_growth_bytes_per_h, 1.0 * kGiB, 1.0);
  EXPECT_EQ(sum.duration_ms, 3 * 1'800'000LL);
  auto back = summary_from_json(summary_to_json(sum));
  EXPECT_EQ(back.gpus.size(), 2u);
  EXPECT_EQ(back.peak_job_rss_bytes, sum.peak_job_rss_bytes);
  EXPECT_EQ(back.duration_ms, sum.duration_ms);
  EXPECT_EQ(back.gpus[0].mean_util_pct, sum.gpus[0].mean_util_pct);
  EXPECT_EQ(back.cgroup.version, 0);  // no cgroup read: "cgroup": null
  EXPECT_EQ(format_summary(sum, "command exited 0", 0, 0).find("cgroup"), std::string::npos);
  // The job's cgroup limits travel with the summary and are printed.
  sum.cgroup.version = 2;
  sum.cgroup.path = "/job";
  sum.cgroup.memory_limit_bytes = 64ull << 20;
  sum.cgroup.memory_limit_file = "memory.max";
  sum.cgroup.memory_limit_path = "/job";
  sum.cgroup.memory_peak_bytes = 64ull << 20;
  sum.cgroup.memory_limit_reached = true;
  sum.cgroup.cpu_limit_cpus = 1.5;
  sum.cgroup.cpu_limit_file = "cpu.max";
  sum.cgroup.cpu_limit_path = "/";
  sum.oom_at_cgroup_limit = true;
  back = summary_from_json(summary_to_json(sum));
  EXPECT_EQ(back.cgroup.version, 2);
  EXPECT_EQ(back.cgroup.memory_limit_bytes, sum.cgroup.memory_limit_bytes);
  EXPECT_EQ(back.cgroup.memory_limit_path, "/job");
  EXPECT_TRUE(back.cgroup.memory_limit_reached);
  EXPECT_EQ(back.cgroup.cpu_limit_cpus, 1.5);
  EXPECT_TRUE(back.oom_at_cgroup_limit);
  EXPECT_NE(format_summary(sum, "command exited 0", 0, 0)
                .find("  cgroup limits: memory 64.0 MiB (memory.max of /job), CPU 1.50 CPUs (cpu.max of /); "
                      "memory peak 64.0 MiB\n"),
            std::string::npos)
      << format_summary(sum, "command exited 0", 0, 0);
}

TEST(RecorderJobTree, ParsesStatAndFindsDescendantsAndOrphans) {
  EXPECT_EQ(parse_stat_ppid("123 (python3 (x) y) S 77 123 123 0 -1"), 77u);
  EXPECT_FALSE(parse_stat_ppid("123 (python3"));
  EXPECT_FALSE(parse_stat_ppid(""));
  // 100 = trainmon (subreaper), 200 = the command, 201/202 workers, 300 an orphan adopted by 100,
  // 400 someone else's process.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> parents = {
      {1, 0}, {100, 50}, {200, 100}, {201, 200}, {202, 200}, {203, 202}, {300, 100}, {400, 1}};
  std::vector<std::uint32_t> roots = {200, 100};
  EXPECT_EQ(descendants(parents, roots, 100), (std::vector<std::uint32_t>{200, 201, 202, 203, 300}));
  std::vector<std::pair<std::uint32_t, std::uint32_t>> cycle = {{5, 6}, {6, 5}};
  std::vector<std::uint32_t> r5 = {5};
  EXPECT_EQ(descendants(cycle, r5), (std::vector<std::uint32_t>{5, 6}));
}

TEST(RecorderLabels, EnvironmentThenCommandLine) {
  EXPECT_FALSE(parse_label("novalue"));
  EXPECT_FALSE(parse_label("=x"));
  EXPECT_EQ(parse_label("a=b=c")->second, "b=c");
  auto labels =
      collect_labels({{"SLURM_JOB_ID", "override"}, {"team", "cv"}},
                     {"SLURM_JOB_ID=42", "CUDA_VISIBLE_DEVICES=0,1", "HOME=/root", "TORCHELASTIC_RUN_ID=r1"});
  std::vector<std::pair<std::string, std::string>> want = {{"CUDA_VISIBLE_DEVICES", "0,1"},
                                                           {"SLURM_JOB_ID", "override"},
                                                           {"TORCHELASTIC_RUN_ID", "r1"},
                                                           {"team", "cv"}};
  EXPECT_EQ(labels, want);
}

TEST(RecorderTickBatch, JobTotalsAndRowsForTheTree) {
  Snapshot s = snapshot();
  s.processes = {proc(200, 100, 100 << 20, 95.0), proc(201, 200, 50 << 20, 30.0), proc(999, 1, 1 << 30, 5)};
  s.processes.push_back(proc(202, 200, 0, 0));
  s.processes.back().state = 'Z';
  std::vector<std::uint32_t> job = {200, 201, 202};
  auto t = job_totals(s, job);
  EXPECT_EQ(t.processes, 2u);
  EXPECT_EQ(t.rss_bytes, 150u << 20);
  EXPECT_DOUBLE_EQ(t.cpu_pct, 125.0);
  auto batch = make_tick_batch(s, job, job);
  int gpu_rows = 0, proc_rows = 0, host_rows = 0;
  for (const auto& r : batch.rows) {
    gpu_rows += r.series.kind == store::SeriesKind::gpu;
    host_rows += r.series.kind == store::SeriesKind::host;
    if (r.series.kind == store::SeriesKind::process) {
      ++proc_rows;
      EXPECT_TRUE(r.series.in_job);
      EXPECT_NE(*r.series.pid, 999u);
    }
  }
  EXPECT_EQ(gpu_rows, 2);
  EXPECT_EQ(host_rows, 1);
  EXPECT_EQ(proc_rows, 3);
}

}  // namespace
}  // namespace trainmon::recorder
