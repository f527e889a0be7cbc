// SPDX-License-Identifier: Apache-2.0
// Diagnosis speed: every detector over a simulated 24 h x 8 GPU run sampled at 1 s (target: under
// 2 s), and one live evaluation over the last hour of it (what LiveDiagnosis does every N seconds):
// without training ranks (BM_LiveEvaluateHour8Gpus, as measured before D23-D26 existed), with the
// 8 ranks' step timing (BM_LiveEvaluateHour8GpusRanks: a row per rank and second, a straggler and a
// data-wait stretch) and, for a ratio within one run, only the detectors D1-D22 on the hour with ranks
// (BM_LiveEvaluateHour8GpusRanksD1toD22). Target (issue 18): the hour with ranks under 1.5x the
// evaluation without D23-D26.
#include <benchmark/benchmark.h>

#include <cmath>

#include "diagnose/detail.h"
#include "trainmon/diagnose/engine.h"
#include "unit/diagnose/synth.h"
#include "unit/diagnose/train_synth.h"

namespace {
using trainmon::diagnose::DiagnosisEngine;
using trainmon::diagnose::RunSeries;
using trainmon::diagnose::Thresholds;
using trainmon::diagnose::testing::Synth;

const RunSeries& day_run() {
  static const RunSeries series = [] {
    Synth x(8, 24 * 3600.0);
    // a few failure modes so detectors do real work: a starved stretch, a slow host leak,
    // a thermal episode and hi-res samples on every GPU
    for (auto& g : x.s.gpus) x.set(g.util_gpu_pct, 20000, 23600, 25, 5);
    x.set(x.s.host.cpu_busy_pct, 20000, 23600, 20, 2);
    x.apply(x.s.job.rss_mib, 0, 1e9,
            [](double t, float v) { return v + static_cast<float>(300 * t / 3600); });
    for (std::size_t i = 40000; i < 40600; ++i) x.s.gpus[3].clock_reasons[i] = 0x20;
    for (auto& g : x.s.gpus)
      for (double t = 0; t < 24 * 3600.0; t += 1.0) {  // one hi-res sample per second per GPU
        g.hires_util.t.push_back(t + 0.5);
        g.hires_util.value.push_back(std::fmod(t, 4) < 2 ? 10.f : 90.f);
      }
    return std::move(x.s);
  }();
  return series;
}

void BM_DiagnoseDay8Gpus(benchmark::State& state) {
  const auto& s = day_run();
  const DiagnosisEngine engine;
  const Thresholds th;
  std::size_t findings = 0;
  for (auto _ : state) {
    auto f = engine.run_all(s, th);
    findings = f.size();
    benchmark::DoNotOptimize(f);
  }
  state.counters["rows"] = static_cast<double>(s.size());
  state.counters["gpus"] = static_cast<double>(s.gpus.size());
  state.counters["findings"] = static_cast<double>(findings);
}
BENCHMARK(BM_DiagnoseDay8Gpus)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_LiveWindowHour8Gpus(benchmark::State& state) {
  const auto& s = day_run();
  const DiagnosisEngine engine;
  const Thresholds th;
  for (auto _ : state) {
    const auto w = trainmon::diagnose::slice(s, s.t.back() - 3600, s.t.back());
    auto f = engine.run_all(w, th);
    benchmark::DoNotOptimize(f);
  }
}
BENCHMARK(BM_LiveWindowHour8Gpus)->Unit(benchmark::kMillisecond);

// What `top`, `record` and `serve` pay every LiveOptions::every_s (10 s) once an hour is retained:
// one LiveDiagnosis::evaluate() on the retained hour (evaluated in place, no window copy).
void BM_LiveEvaluateHour8Gpus(benchmark::State& state) {
  const auto& s = day_run();
  trainmon::diagnose::LiveDiagnosis live(Thresholds{}, trainmon::diagnose::LiveOptions{.retain_s = 3600});
  live.mutable_series() = trainmon::diagnose::slice(s, s.t.back() - 3600, s.t.back());
  for (auto _ : state) benchmark::DoNotOptimize(live.evaluate());
}
BENCHMARK(BM_LiveEvaluateHour8Gpus)->Unit(benchmark::kMillisecond);

/// The last hour of the day run with 8 training ranks (one per GPU, pid 1000 + g) reporting every
/// second: 0.1-s steps, rank 5 a straggler (0.14 s) for 20 min, every rank waiting 30 % for data for
/// 10 min, each rank's process in the job tree.
const RunSeries& hour_with_ranks() {
  static const RunSeries series = [] {
    const auto& day = day_run();
    const double t1 = day.t.back(), t0 = t1 - 3600;
    RunSeries s = trainmon::diagnose::slice(day, t0, t1);
    for (unsigned g = 0; g < 8; ++g) {
      trainmon::diagnose::testing::RankFeed r(static_cast<int>(g), 1000 + g, static_cast<int>(g));
      r.id.world_size = 8;
      r.steps(s, t0, t0 + 1200, 1.0, 0.1, 0.005);
      r.steps(s, t0 + 1200, t0 + 2400, 1.0, g == 5 ? 0.14 : 0.1, 0.005);
      r.steps(s, t0 + 2400, t0 + 3000, 1.0, 0.1, 0.03);
      r.steps(s, t0 + 3000, t1, 1.0, 0.1, 0.005);
      trainmon::diagnose::testing::job_process(s, 1000 + g, t0, t1);
    }
    return s;
  }();
  return series;
}

void BM_LiveEvaluateHour8GpusRanks(benchmark::State& state) {
  trainmon::diagnose::LiveDiagnosis live(Thresholds{}, trainmon::diagnose::LiveOptions{.retain_s = 3600});
  live.mutable_series() = hour_with_ranks();
  std::size_t found = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(live.evaluate());
    found = live.active().size();
  }
  state.counters["ranks"] = 8;
  state.counters["open"] = static_cast<double>(found);
}
BENCHMARK(BM_LiveEvaluateHour8GpusRanks)->Unit(benchmark::kMillisecond);

// The same hour, only the detectors that existed before D23-D26 (the "before" of the ratio).
void BM_LiveEvaluateHour8GpusRanksD1toD22(benchmark::State& state) {
  const auto& s = hour_with_ranks();
  const Thresholds th;
  for (auto _ : state) {
    const trainmon::diagnose::detail::RunAllMemo memo(s);
    std::size_t n = 0;
    for (const auto& d : trainmon::diagnose::detector_table()) {
      if (d.code == "D23" || d.code == "D24" || d.code == "D25" || d.code == "D26") continue;
      n += d.fn(s, th).size();
    }
    benchmark::DoNotOptimize(n);
  }
}
BENCHMARK(BM_LiveEvaluateHour8GpusRanksD1toD22)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
