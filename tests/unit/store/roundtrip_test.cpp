// SPDX-License-Identifier: Apache-2.0
// A Snapshot built here goes through the recorder's rows, the writer thread and SQLite, and comes
// back with the same numbers.
#include <gtest/gtest.h>

#include <memory>

#include "trainmon/diagnose/detectors.h"
#include "trainmon/recorder/session.h"
#include "trainmon/store/load_run_series.h"
#include "trainmon/store/store.h"
#include "trainmon/store/writer.h"
#include "unit/store/store_test_util.h"

namespace trainmon::store {
namespace {

Snapshot make_snapshot(int tick) {
  Snapshot s;
  s.time_unix_ns = 1'700'000'000'000'000'000 + tick * 1'000'000'000LL;
  GpuSample g;
  g.index = 0;
  auto info = std::make_shared<GpuStaticInfo>();
  info->uuid = Reading<std::string>::of("GPU-abc");
  info->name = Reading<std::string>::of("NVIDIA H200");
  g.info = info;
  g.memory_total_bytes = Reading<std::uint64_t>::of(150'000'000'000);
  g.memory_used_bytes = Reading<std::uint64_t>::of(1'000'000'000 + tick * 1'000'000);
  g.utilization_gpu_pct = Reading<unsigned>::of(tick % 3 == 0 ? 0 : 90);
  g.power_draw_mw = Reading<unsigned>::of(350'000 + tick);
  g.fan_speed_pct = Reading<unsigned>::fail(ReadStatus::not_supported);
  g.gpm_sm_util_pct = Reading<double>::of(42.25);
  // three driver samples inside the tick: a 0 -> 90 -> 0 swing shorter than the interval
  const std::uint64_t base_us = static_cast<std::uint64_t>(s.time_unix_ns / 1000);
  g.gpu_utilization_samples = {{base_us - 900'000, 0}, {base_us - 600'000, 90}, {base_us - 300'000, 0}};
  s.gpus.push_back(g);
  s.host.memory.total_bytes = Reading<std::uint64_t>::of(64ull << 30);
  s.host.memory.available_bytes = Reading<std::uint64_t>::of((32ull << 30) - tick);
  s.host.cpu_total.busy_pct = 12.34;
  ProcessSample p;
  p.pid = 4242;
  p.ppid = 1;
  p.start_time_ticks = 777;
  p.comm = "python3";
  p.cmdline = "python3 train.py";
  p.rss_bytes = Reading<std::uint64_t>::of(500'000'000 + tick);
  p.cpu_pct = Reading<double>::of(101.5);
  s.processes.push_back(p);
  GpuEvent e;
  e.time_unix_ns = s.time_unix_ns;
  e.event_type = 0x8;
  e.xid = tick == 2 ? 79 : 0;
  if (tick == 2) s.events.push_back(e);
  return s;
}

TEST(StoreRoundTrip, SnapshotsComeBackThroughWriterAndSqlite) {
  testing::TempDir dir;
  const auto path = dir.file("t.db");
  std::int64_t run_id = 0;
  {
    auto s = Store::open(path, OpenMode::read_write);
    ASSERT_TRUE(s);
    RunInfo run;
    run.name = "rt";
    run.start_unix_ns = 1;
    run_id = *s->create_run(run);
    // chunk_rows 4: 10 ticks span three chunks, the last one left open.
    StoreWriter w(std::move(*s), run_id, WriterOptions{4, 100});
    std::vector<std::uint32_t> pids = {4242};
    for (int i = 0; i < 10; ++i) {
      auto batch = recorder::make_tick_batch(make_snapshot(i), pids, pids);
      if (i == 0)
        batch.gpus = std::vector<RunGpu>{RunGpu{0, "GPU-abc", "NVIDIA H200", "", 150'000'000'000, {}, true}};
      w.push(std::move(batch));
    }
    ASSERT_TRUE(w.finish(RunEnd{99, "exited", 0, {}, "{}"}));
    EXPECT_EQ(w.stats().ticks_written, 10u);
    EXPECT_EQ(w.stats().ticks_dropped, 0u);
  }
  auto s = Store::open(path, OpenMode::read_only);
  ASSERT_TRUE(s) << s.error().message;
  auto run = s->get_run(run_id);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->status, "exited");
  ASSERT_EQ(run->gpus.size(), 1u);
  EXPECT_TRUE(run->gpus[0].used_by_job);
  auto series = s->list_series(run_id);
  ASSERT_TRUE(series);
  int checked = 0;
  for (const auto& si : *series) {
    std::vector<std::int64_t> t;
    std::vector<std::vector<std::int64_t>> rows;
    ASSERT_TRUE(s->read_series(si.id, [&](const Chunk& c, bool agg) {
      EXPECT_FALSE(agg);
      for (std::size_t r = 0; r < c.rows(); ++r) {
        t.push_back(c.t_ms[r]);
        rows.emplace_back(c.values.begin() + r * c.columns, c.values.begin() + (r + 1) * c.columns);
      }
    }));
    if (si.kind == SeriesKind::gpu) {
      ASSERT_EQ(rows.size(), 10u);
      const auto used = *field_index(SeriesKind::gpu, "memory_used_bytes");
      const auto util = *field_index(SeriesKind::gpu, "utilization_gpu_pct");
      const auto fan = *field_index(SeriesKind::gpu, "fan_speed_pct");
      const auto gpm = *field_index(SeriesKind::gpu, "gpm_sm_util_pct");
      for (int i = 0; i < 10; ++i) {
        EXPECT_EQ(t[i], 1'700'000'000'000 + i * 1000LL);
        EXPECT_EQ(rows[i][used], 1'000'000'000 + i * 1'000'000);
        EXPECT_EQ(rows[i][util], i % 3 == 0 ? 0 : 90);
        EXPECT_EQ(rows[i][fan], kNull);
        EXPECT_EQ(rows[i][gpm], 4225);
      }
      ++checked;
    } else if (si.kind == SeriesKind::gpu_util_hr) {
      ASSERT_EQ(rows.size(), 30u);
      EXPECT_EQ(rows[0][0], 0);
      EXPECT_EQ(rows[1][0], 90);  // whole percent
      EXPECT_EQ(rows[2][0], 0);
      ++checked;
    } else if (si.kind == SeriesKind::process) {
      EXPECT_EQ(*si.pid, 4242u);
      EXPECT_EQ(si.start_time_ticks, 777u);
      EXPECT_EQ(si.cmdline, "python3 train.py");
      EXPECT_TRUE(si.in_job);
      ASSERT_EQ(rows.size(), 10u);
      EXPECT_EQ(rows[9][*field_index(SeriesKind::process, "rss_bytes")], 500'000'009);
      EXPECT_EQ(rows[9][*field_index(SeriesKind::process, "cpu_pct")], 10150);
      ++checked;
    } else if (si.kind == SeriesKind::host) {
      ASSERT_EQ(rows.size(), 10u);
      EXPECT_EQ(rows[3][*field_index(SeriesKind::host, "memory_available_bytes")], (32ll << 30) - 3);
      EXPECT_EQ(rows[3][*field_index(SeriesKind::host, "cpu_busy_pct")], 1234);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4);
  auto events = s->gpu_events(run_id);
  ASSERT_TRUE(events);
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].xid, 79u);
}

TEST(StoreRetention, DownsamplesOldChunksAndDeletesOldRuns) {
  testing::TempDir dir;
  auto s = Store::open(dir.file("t.db"), OpenMode::read_write);
  ASSERT_TRUE(s);
  RunInfo old_run;
  old_run.name = "old";
  old_run.start_unix_ns = 1'000'000'000'000'000'000;
  old_run.end_unix_ns = 1'000'000'100'000'000'000;
  auto old_id = *s->create_run(old_run);
  RunInfo recent;
  recent.name = "recent";
  recent.start_unix_ns = 1'700'000'000'000'000'000;
  auto recent_id = *s->create_run(recent);
  SeriesInfo si;
  si.run_id = recent_id;
  si.kind = SeriesKind::gpu_util_hr;
  si.gpu_index = 0;
  auto sid = *s->create_series(si);
  Chunk c;
  c.columns = 1;
  for (int i = 0; i < 60; ++i) c.append(1'700'000'000'000 + i * 1000, {i % 2 ? 9000 : 0});
  ASSERT_TRUE(s->insert_chunk(sid, c));
  const std::int64_t now = 1'700'000'000'000'000'000 + 2LL * 86'400'000'000'000;  // two days later
  auto r = s->apply_retention(now, RetentionPolicy{30LL * 86'400'000'000'000, 86'400'000'000'000});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->runs_deleted, 1);
  EXPECT_EQ(r->chunks_downsampled, 1);
  EXPECT_FALSE(s->get_run(old_id));
  int chunks = 0;
  ASSERT_TRUE(s->read_series(sid, [&](const Chunk& a, bool agg) {
    ++chunks;
    EXPECT_TRUE(agg);
    ASSERT_EQ(a.rows(), 1u);
    ASSERT_EQ(a.columns, 3u);
    EXPECT_EQ(a.at(0, 0), 4500);  // mean
    EXPECT_EQ(a.at(0, 1), 0);     // min
    EXPECT_EQ(a.at(0, 2), 9000);  // max
  }));
  EXPECT_EQ(chunks, 1);
}

}  // namespace
// A tick whose GPU answer came after the tick (the sampler waits at most 3/4 of the interval) is
// "not judged": no fields, responsive not collected. Read back from the store it is a GPU that
// answers, as the live diagnosis takes it, never a failure (an offline D14 the live one never had,
// seen under load); a GPU past the deadline is still a timeout.
TEST(StoreRoundTrip, AGpuNotJudgedInATickIsNoFailureOffline) {
  testing::TempDir dir;
  const auto path = dir.file("t.db");
  std::int64_t run_id = 0;
  {
    auto s = Store::open(path, OpenMode::read_write);
    ASSERT_TRUE(s);
    RunInfo run;
    run.name = "late";
    run.start_unix_ns = 1'700'000'000'000'000'000;
    run_id = *s->create_run(run);
    StoreWriter w(std::move(*s), run_id, WriterOptions{4, 100});
    std::vector<std::uint32_t> pids;
    for (int i = 0; i < 40; ++i) {
      Snapshot snap = make_snapshot(i);
      snap.processes.clear();
      GpuSample& g = snap.gpus[0];
      g.responsive = Reading<bool>::of(true);
      if (i == 5 || i == 6 || i == 20) {  // late: nothing but the index and the static info
        GpuSample late;
        late.index = 0;
        late.info = g.info;
        late.responsive = Reading<bool>::fail(ReadStatus::not_collected);
        g = late;
      } else if (i >= 30) {
        GpuSample hung;
        hung.index = 0;
        hung.info = g.info;
        hung.responsive = Reading<bool>::fail(ReadStatus::timeout);
        g = hung;
      }
      w.push(recorder::make_tick_batch(snap, pids, pids));
    }
    ASSERT_TRUE(w.finish(RunEnd{1'700'000'040'000'000'000, "exited", 0, {}, "{}"}));
  }
  auto s = Store::open(path, OpenMode::read_only);
  ASSERT_TRUE(s) << s.error().message;
  auto series = load_run_series(*s, run_id);
  ASSERT_TRUE(series) << series.error().message;
  ASSERT_EQ(series->gpus.size(), 1u);
  const auto& state = series->gpus[0].state;
  ASSERT_EQ(state.size(), 40u);
  EXPECT_EQ(state[5], diagnose::GpuState::ok);
  EXPECT_EQ(state[20], diagnose::GpuState::ok);
  EXPECT_EQ(state[31], diagnose::GpuState::timeout);
  const auto found = diagnose::detect_gpu_lost(*series, diagnose::Thresholds{});
  ASSERT_EQ(found.size(), 1u);  // the hang from 30 s on, not the late ticks
  EXPECT_NEAR(found[0].start_s, 30, 1.01);
}

}  // namespace trainmon::store
