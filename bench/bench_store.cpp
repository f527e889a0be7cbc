// SPDX-License-Identifier: Apache-2.0
// Store benchmarks.
//  1. bytes per GPU-day at 1 s: four hours of ticks of one fully populated, busy GPU (every GpuSample
//     field, plus six high-resolution utilisation samples per tick) written through StoreWriter
//     exactly as `trainmon run` writes them; database growth x 6. Target: <= 5 MB.
//  2. a simulated 24 h x 8 GPU recording written in bulk (chunks of 60 ticks) and read back in full
//     (every chunk decoded). Target: write + read < 5 s.
//  3. Google Benchmark: chunk encode / decode of 60 GPU rows.
// Usage: bench_store [--benchmark_filter=...]   (prints the table first)
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>

#include "trainmon/recorder/session.h"
#include "trainmon/store/series_fields.h"
#include "trainmon/store/store.h"
#include "trainmon/store/writer.h"

namespace {

using namespace trainmon;

/// A busy H200-like GPU at tick `t` (deterministic noise).
GpuSample busy_gpu(unsigned index, int t, std::mt19937& rng) {
  std::uniform_int_distribution<int> noise(-3, 3);
  static auto info = [] {
    auto i = std::make_shared<GpuStaticInfo>();
    i->name = Reading<std::string>::of("NVIDIA H200");
    i->uuid = Reading<std::string>::of("GPU-00000000-0000-0000-0000-000000000000");
    return i;
  }();
  GpuSample g;
  g.index = index;
  g.info = info;
  g.responsive = Reading<bool>::of(true);
  auto u64 = [](std::uint64_t v) { return Reading<std::uint64_t>::of(v); };
  auto u = [](unsigned v) { return Reading<unsigned>::of(v); };
  auto d = [](double v) { return Reading<double>::of(v); };
  const unsigned util = static_cast<unsigned>(std::clamp(85 + noise(rng) * 3, 0, 100));
  g.memory_total_bytes = u64(150'754'820'096);
  g.memory_reserved_bytes = u64(520'093'696);
  g.memory_used_bytes = u64(80'000'000'000ull + static_cast<std::uint64_t>(t) * 4096 + (rng() % 4) * 2097152);
  g.memory_free_bytes = u64(150'754'820'096 - 520'093'696 - *g.memory_used_bytes);
  g.bar1_used_bytes = u64(33'554'432);
  g.bar1_free_bytes = u64(274'844'352'512);
  g.utilization_gpu_pct = u(util);
  g.utilization_memory_pct = u(static_cast<unsigned>(40 + noise(rng)));
  g.utilization_encoder_pct = u(0);
  g.utilization_decoder_pct = u(0);
  g.utilization_jpeg_pct = u(0);
  g.utilization_ofa_pct = u(0);
  g.temperature_gpu_c = u(static_cast<unsigned>(64 + noise(rng) / 2));
  g.temperature_memory_c = u(static_cast<unsigned>(70 + noise(rng) / 2));
  g.power_draw_mw = u(static_cast<unsigned>(560'000 + noise(rng) * 4'000));
  g.power_draw_instant_mw = u(static_cast<unsigned>(560'000 + noise(rng) * 9'000));
  g.power_limit_mw = u(700'000);
  g.enforced_power_limit_mw = u(700'000);
  g.total_energy_mj = u64(9'000'000'000ull + static_cast<std::uint64_t>(t) * 560'000 + rng() % 8000);
  g.fan_speed_pct = Reading<unsigned>::fail(ReadStatus::not_supported);
  g.pstate = u(0);
  g.clocks_graphics_mhz = u(t % 600 < 590 ? 1980 : 1755);
  g.clocks_sm_mhz = g.clocks_graphics_mhz;
  g.clocks_memory_mhz = u(2619);
  g.clocks_video_mhz = u(1740);
  g.clocks_event_reasons_active = u64(t % 600 < 590 ? 0 : clock_event::sw_power_cap);
  g.violation_power_ns = u64(1'000'000'000ull * static_cast<std::uint64_t>(t / 600));
  g.violation_thermal_ns = u64(0);
  g.violation_sw_thermal_ns = u64(0);
  g.violation_hw_thermal_ns = u64(0);
  g.violation_hw_power_brake_ns = u64(0);
  g.ecc_mode_current = Reading<bool>::of(true);
  g.ecc_mode_pending = Reading<bool>::of(true);
  g.ecc_corrected_volatile = u64(0);
  g.ecc_uncorrected_volatile = u64(0);
  g.ecc_corrected_aggregate = u64(12);
  g.ecc_uncorrected_aggregate = u64(0);
  g.retired_pages_sbe = Reading<unsigned>::fail(ReadStatus::not_supported);
  g.retired_pages_dbe = Reading<unsigned>::fail(ReadStatus::not_supported);
  g.retired_pages_pending = Reading<bool>::fail(ReadStatus::not_supported);
  g.remapped_rows_correctable = u(0);
  g.remapped_rows_uncorrectable = u(0);
  g.remapped_rows_pending = Reading<bool>::of(false);
  g.remapped_rows_failure = Reading<bool>::of(false);
  g.pcie_link_gen_current = u(5);
  g.pcie_link_width_current = u(16);
  g.pcie_rx_kib_s = u(static_cast<unsigned>(200'000 + rng() % 50'000));
  g.pcie_tx_kib_s = u(static_cast<unsigned>(30'000 + rng() % 10'000));
  g.pcie_replay_count = u(0);
  g.persistence_mode = Reading<bool>::of(true);
  g.compute_mode = u(0);
  g.display_active = Reading<bool>::of(false);
  g.mig_mode_current = u(0);
  g.mig_mode_pending = u(0);
  g.gpm_sm_util_pct = d(80 + noise(rng) * 1.37);
  g.gpm_sm_occupancy_pct = d(45 + noise(rng) * 0.71);
  g.gpm_tensor_util_pct = d(35 + noise(rng) * 1.13);
  g.gpm_dram_bw_util_pct = d(55 + noise(rng) * 0.93);
  g.gpm_pcie_tx_mib_s = d(30 + noise(rng) * 0.5);
  g.gpm_pcie_rx_mib_s = d(200 + noise(rng) * 2.5);
  g.gpm_nvlink_tx_mib_s = d(0);
  g.gpm_nvlink_rx_mib_s = d(0);
  // six driver samples in the second before the tick (period ~166.7 ms)
  const std::uint64_t base_us = 1'700'000'000'000'000ull + static_cast<std::uint64_t>(t) * 1'000'000;
  for (int k = 0; k < 6; ++k) {
    g.gpu_utilization_samples.push_back({base_us - 1'000'000 + static_cast<std::uint64_t>(k) * 166'667,
                                         static_cast<double>(k % 3 ? util : 0)});
  }
  return g;
}

Snapshot snapshot_at(int t, unsigned gpus, std::mt19937& rng) {
  Snapshot s;
  s.time_unix_ns =
      1'700'000'000'000'000'000 + static_cast<std::int64_t>(t) * 1'000'000'000 + (rng() % 2000) * 1000;
  for (unsigned i = 0; i < gpus; ++i) s.gpus.push_back(busy_gpu(i, t, rng));
  return s;
}

std::string temp_db(const char* name) {
  auto p = std::filesystem::temp_directory_path() /
           (std::string("trainmon-bench-") + std::to_string(::getpid()) + name);
  std::filesystem::remove(p);
  std::filesystem::remove(p.string() + "-wal");
  std::filesystem::remove(p.string() + "-shm");
  return p.string();
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// GPU series only (no host row): bytes per GPU-day at 1 s (growth over four hours x 6).
double bytes_per_gpu_day() {
  const std::string path = temp_db("-size.db");
  constexpr int kTicks = 4 * 3600;  // four hours: page granularity (16 KiB) stays under 2 %
  std::int64_t baseline = 0;
  {
    auto st = store::Store::open(path, store::OpenMode::read_write);
    if (!st) return -1;
    store::RunInfo run;
    run.name = "size";
    run.start_unix_ns = 1;
    auto id = *st->create_run(run);
    baseline = st->size_bytes().value_or(0);  // schema and run header: not per GPU-day
    store::StoreWriter w(std::move(*st), id, store::WriterOptions{60, kTicks + 1});
    std::mt19937 rng(42);
    for (int t = 0; t < kTicks; ++t) {
      auto batch = recorder::make_tick_batch(snapshot_at(t, 1, rng), {}, {});
      std::erase_if(batch.rows,
                    [](const store::SeriesRow& r) { return r.series.kind == store::SeriesKind::host; });
      w.push(std::move(batch));
    }
    (void)w.finish(store::RunEnd{2, "exited", 0, {}, ""});
  }
  auto st = store::Store::open(path, store::OpenMode::read_write);
  auto size = st->size_bytes();

  std::filesystem::remove(path);
  std::filesystem::remove(path + "-wal");
  std::filesystem::remove(path + "-shm");
  return size ? static_cast<double>(*size - baseline) * 86400.0 / kTicks : -1;
}

struct DayResult {
  double write_s = 0, read_s = 0, db_mb = 0;
  std::uint64_t rows_read = 0;
};

/// 24 h x 8 GPUs written in bulk (one transaction per simulated hour) and read back fully.
DayResult day_8gpu() {
  DayResult r;
  const std::string path = temp_db("-day.db");
  constexpr int kTicks = 86'400;
  constexpr unsigned kGpus = 8;
  auto t0 = std::chrono::steady_clock::now();
  auto st = store::Store::open(path, store::OpenMode::read_write);
  if (!st) return r;
  store::RunInfo run;
  run.name = "day";
  run.start_unix_ns = 1;
  auto id = *st->create_run(run);
  std::vector<std::int64_t> gpu_series, hr_series;
  for (unsigned i = 0; i < kGpus; ++i) {
    store::SeriesInfo si;
    si.run_id = id;
    si.kind = store::SeriesKind::gpu;
    si.gpu_index = i;
    gpu_series.push_back(*st->create_series(si));
    si.kind = store::SeriesKind::gpu_util_hr;
    hr_series.push_back(*st->create_series(si));
  }
  std::vector<store::Chunk> gpu_chunks(kGpus), hr_chunks(kGpus);
  for (unsigned i = 0; i < kGpus; ++i) {
    gpu_chunks[i].columns = store::fields_of(store::SeriesKind::gpu).size();
    hr_chunks[i].columns = 1;
  }
  std::mt19937 rng(7);
  (void)st->begin();
  for (int t = 0; t < kTicks; ++t) {
    const std::int64_t t_ms = 1'700'000'000'000 + static_cast<std::int64_t>(t) * 1000;
    for (unsigned i = 0; i < kGpus; ++i) {
      GpuSample g = busy_gpu(i, t, rng);
      gpu_chunks[i].append(t_ms, store::gpu_row(g));
      for (const auto& s : g.gpu_utilization_samples)
        hr_chunks[i].append(static_cast<std::int64_t>(s.time_us / 1000),
                            {static_cast<std::int64_t>(s.value)});
      if (gpu_chunks[i].rows() == 60) {
        (void)st->insert_chunk(gpu_series[i], gpu_chunks[i]);
        (void)st->insert_chunk(hr_series[i], hr_chunks[i]);
        gpu_chunks[i].clear();
        hr_chunks[i].clear();
      }
    }
    if (t % 3600 == 3599) {
      (void)st->commit();
      (void)st->begin();
    }
  }
  (void)st->commit();
  r.write_s = seconds_since(t0);
  r.db_mb = static_cast<double>(st->size_bytes().value_or(0)) / 1e6;

  auto t1 = std::chrono::steady_clock::now();
  auto reader = store::Store::open(path, store::OpenMode::read_only);
  auto series = reader->list_series(id);
  const auto util = *store::field_index(store::SeriesKind::gpu, "utilization_gpu_pct");
  std::int64_t sum = 0;
  for (const auto& s : *series) {
    (void)reader->read_series(s.id, [&](const store::Chunk& c, bool) {
      r.rows_read += c.rows();
      if (s.kind == store::SeriesKind::gpu) {
        for (std::size_t row = 0; row < c.rows(); ++row) sum += c.at(row, util);
      }
    });
  }
  benchmark::DoNotOptimize(sum);
  r.read_s = seconds_since(t1);
  std::filesystem::remove(path);
  std::filesystem::remove(path + "-wal");
  std::filesystem::remove(path + "-shm");
  return r;
}

void BM_EncodeGpuChunk(benchmark::State& state) {
  std::mt19937 rng(1);
  store::Chunk c;
  c.columns = store::fields_of(store::SeriesKind::gpu).size();
  for (int t = 0; t < 60; ++t) c.append(t * 1000, store::gpu_row(busy_gpu(0, t, rng)));
  std::size_t bytes = 0;
  for (auto _ : state) {
    auto blob = store::encode_chunk(c);
    bytes = blob.size();
    benchmark::DoNotOptimize(blob);
  }
  state.counters["blob_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_EncodeGpuChunk);

void BM_DecodeGpuChunk(benchmark::State& state) {
  std::mt19937 rng(1);
  store::Chunk c;
  c.columns = store::fields_of(store::SeriesKind::gpu).size();
  for (int t = 0; t < 60; ++t) c.append(t * 1000, store::gpu_row(busy_gpu(0, t, rng)));
  auto blob = store::encode_chunk(c);
  for (auto _ : state) benchmark::DoNotOptimize(store::decode_chunk(blob));
}
BENCHMARK(BM_DecodeGpuChunk);

}  // namespace

int main(int argc, char** argv) {
  const double per_day = bytes_per_gpu_day();
  const auto day = day_8gpu();
  std::printf("%-48s %14s %10s\n", "measurement", "value", "target");
  std::printf("%-48s %11.2f MB %10s\n", "store size per GPU-day at 1 s (full GpuSample)", per_day / 1e6,
              "<= 5 MB");
  std::printf("%-48s %12.2f s %10s\n", "24 h x 8 GPU: write (bulk)", day.write_s, "");
  std::printf("%-48s %12.2f s %10s\n", "24 h x 8 GPU: read back (all rows decoded)", day.read_s, "");
  std::printf("%-48s %12.2f s %10s\n", "24 h x 8 GPU: write + read", day.write_s + day.read_s, "< 5 s");
  std::printf("%-48s %11.1f MB %10s\n", "24 h x 8 GPU: database size", day.db_mb, "");
  std::printf("%-48s %14llu %10s\n", "24 h x 8 GPU: rows read",
              static_cast<unsigned long long>(day.rows_read), "");
  std::fflush(stdout);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
