// SPDX-License-Identifier: Apache-2.0
// What the views of the training loop cost each tick: `trainmon run` rewriting its live state file
// (8 ranks, an hour of rows at one a second each, the document of docs/top.md), `top` / `serve`
// reading the live runs back (two runs of 8 ranks), serve rendering their /metrics, and the run's
// summary at the end (summarize_train over the hour).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "trainmon/diagnose/train_summary.h"
#include "trainmon/ipc/run_state_file.h"
#include "trainmon/serve/metrics_text.h"

using namespace trainmon;

namespace {

constexpr int kRanks = 8;
constexpr int kSeconds = 3600;

/// An hour of one row a second for each of 8 ranks: 10 steps of 0.1 s (rank r a little slower).
const diagnose::TrainSeries& hour() {
  static const diagnose::TrainSeries s = [] {
    diagnose::TrainSeries out;
    for (int r = 0; r < kRanks; ++r) {
      diagnose::TrainRank id;
      id.rank = r;
      id.local_rank = r;
      id.world_size = kRanks;
      id.host = "gpu-node-01";
      id.pid = 1000 + r;
      id.gpu = r;
      id.key = r;
      double total = 0;
      for (int i = 1; i <= kSeconds; ++i) {
        diagnose::TrainWindow w;
        const float step = 0.1f + 0.001f * r + 0.0001f * static_cast<float>(i % 7);
        w.t = i + 0.001 * r;
        w.steps = 10;
        w.samples = 80;
        w.span_s = 10 * step;
        w.step = {10 * step, step * 0.9f, step * 1.2f, step, step * 1.05f, step * 1.15f};
        w.data = {step, 0.05f * step, 0.2f * step, 0.1f * step, 0.15f * step, 0.19f * step};
        total += 10;
        w.total_steps = total;
        w.total_samples = 8 * total;
        w.total_step_s = total * step;
        w.total_data_s = total * step * 0.1;
        w.last_step_t = w.t;
        w.phase = diagnose::TrainPhase::compute;
        w.phase_t = w.t;
        diagnose::append_train_window(out, id, w);
      }
    }
    return out;
  }();
  return s;
}

ipc::RunStateHeader header(std::int64_t id) {
  ipc::RunStateHeader h;
  h.run_id = id;
  h.name = "train.py";
  h.db = "/tmp/trainmon.db";
  h.pid = static_cast<std::uint32_t>(::getpid());
  h.pid_start_ticks = ipc::process_start_ticks(h.pid).value_or(0);
  h.host = "gpu-node-01";
  h.start_unix_s = 1.718e9;
  h.interval_ms = 1000;
  h.labels = {{"SLURM_JOB_ID", "4242"}};
  return h;
}

std::string bench_dir() {
  static const std::string d = [] {
    std::string t = (std::filesystem::temp_directory_path() / "trainmon-bench-XXXXXX").string();
    return std::string(::mkdtemp(t.data())) + "/trainmon/runs";
  }();
  return d;
}

void BM_RunStateWrite8RanksHour(benchmark::State& st) {
  auto f = ipc::RunStateFile::create(header(1), bench_dir());
  if (!f) {
    st.SkipWithError(f.error().message.c_str());
    return;
  }
  (void)f->write(hour(), kSeconds, {});  // the sums of the hour once, as a run does over time
  for (auto _ : st) benchmark::DoNotOptimize(f->write(hour(), kSeconds, {}));
}
BENCHMARK(BM_RunStateWrite8RanksHour)->Unit(benchmark::kMicrosecond);

void BM_ReadLiveRunsTwoRuns(benchmark::State& st) {
  auto a = ipc::RunStateFile::create(header(2), bench_dir());
  auto b = ipc::RunStateFile::create(header(3), bench_dir());
  (void)a->write(hour(), kSeconds, {});
  (void)b->write(hour(), kSeconds, {});
  for (auto _ : st) benchmark::DoNotOptimize(ipc::read_live_runs(bench_dir()));
}
BENCHMARK(BM_ReadLiveRunsTwoRuns)->Unit(benchmark::kMicrosecond);

void BM_ReadLiveRunsNone(benchmark::State& st) {
  const std::string missing = bench_dir() + "-none";
  for (auto _ : st) benchmark::DoNotOptimize(ipc::read_live_runs(missing));
}
BENCHMARK(BM_ReadLiveRunsNone)->Unit(benchmark::kMicrosecond);

void BM_RenderTrainMetricsTwoRuns(benchmark::State& st) {
  auto s = ipc::parse_run_state(ipc::run_state_json(header(4), hour(), kSeconds, {}));
  const std::vector<ipc::LiveRunState> runs{*s, *s};
  for (auto _ : st) benchmark::DoNotOptimize(serve::render_train_metrics(runs));
}
BENCHMARK(BM_RenderTrainMetricsTwoRuns)->Unit(benchmark::kMicrosecond);

void BM_SummarizeTrainHour8Ranks(benchmark::State& st) {
  for (auto _ : st) benchmark::DoNotOptimize(diagnose::summarize_train(hour()));
}
BENCHMARK(BM_SummarizeTrainHour8Ranks)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
