// SPDX-License-Identifier: Apache-2.0
#include "report/report_processes.h"

#include <gtest/gtest.h>

#include <map>

#include "trainmon/store/series_fields.h"
#include "unit/store/store_test_util.h"

namespace trainmon::report {
namespace {

using store::SeriesKind;

std::vector<std::int64_t> row(SeriesKind kind, std::initializer_list<std::pair<const char*, double>> values) {
  std::vector<std::int64_t> r(store::fields_of(kind).size(), store::kNull);
  for (const auto& [name, v] : values) {
    const auto i = *store::field_index(kind, name);
    r[i] = static_cast<std::int64_t>(v * store::fields_of(kind)[i].scale);
  }
  return r;
}

TEST(ReportProcesses, PeaksAcrossChunksJobFirstAndGpuProcessesOutsideTheJob) {
  store::testing::TempDir dir;
  auto st = store::Store::open(dir.file("p.db"), store::OpenMode::read_write);
  ASSERT_TRUE(st);
  store::RunInfo run;
  run.name = "p";
  const auto id = *st->create_run(run);
  store::SeriesInfo si;
  si.run_id = id;
  si.kind = SeriesKind::process;
  si.pid = 100;
  si.comm = "python3";
  si.cmdline = "python3 train.py";
  si.in_job = true;
  const auto proc = *st->create_series(si);
  store::Chunk c;
  c.columns = store::fields_of(SeriesKind::process).size();
  c.append(1000, row(SeriesKind::process, {{"rss_bytes", 512.0 * 1048576}, {"cpu_time_s", 1.5}}));
  ASSERT_TRUE(st->insert_chunk(proc, c));
  c.clear();
  c.append(2000, row(SeriesKind::process, {{"rss_bytes", 2048.0 * 1048576}, {"cpu_time_s", 3.25}}));
  c.append(3000, row(SeriesKind::process, {{"rss_bytes", 1024.0 * 1048576}}));  // cpu time N/A
  ASSERT_TRUE(st->insert_chunk(proc, c));

  si.kind = SeriesKind::gpu_process;
  si.gpu_index = 1;
  const auto on_gpu = *st->create_series(si);
  store::Chunk g;
  g.columns = store::fields_of(SeriesKind::gpu_process).size();
  g.append(1000, row(SeriesKind::gpu_process, {{"used_memory_bytes", 4096.0 * 1048576}}));
  g.append(2000, row(SeriesKind::gpu_process, {{"used_memory_bytes", 6144.0 * 1048576}}));
  ASSERT_TRUE(st->insert_chunk(on_gpu, g));
  // another user's process on GPU 0, never part of the job
  si.pid = 7;
  si.gpu_index = 0;
  si.in_job = false;
  si.comm = "ghost";
  si.cmdline = "";
  const auto ghost = *st->create_series(si);
  g.clear();
  g.append(1000, row(SeriesKind::gpu_process, {{"used_memory_bytes", 100.0 * 1048576}}));
  ASSERT_TRUE(st->insert_chunk(ghost, g));

  auto t = process_table(*st, id);
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->size(), 2u) << t->dump();
  const auto& main = (*t)[0];
  EXPECT_EQ(main["pid"], 100);
  EXPECT_TRUE(main["in_job"].get<bool>());
  EXPECT_EQ(main["peak_rss_mib"], 2048.0);
  EXPECT_EQ(main["cpu_time_s"], 3.25);
  EXPECT_EQ(main["peak_gpu_mem_mib"], 6144.0);
  EXPECT_EQ(main["gpus"], nlohmann::json::array({1}));
  const auto& other = (*t)[1];
  EXPECT_EQ(other["pid"], 7);
  EXPECT_FALSE(other["in_job"].get<bool>());
  EXPECT_TRUE(other["peak_rss_mib"].is_null());
  EXPECT_EQ(other["peak_gpu_mem_mib"], 100.0);
  EXPECT_EQ(process_table(*st, id, 1)->size(), 1u);  // the limit
}

TEST(ReportProcesses, AGpuProcessNeverMatchedLocallyKeepsItsOwnRow) {
  // Recorded inside a container: NVML listed pid 1 (a host pid) on GPUs 0 and 1 while the job's
  // local pid 1 is a shell; pid 9 exited. The report never gives them the shell's user, command or RSS.
  store::testing::TempDir dir;
  auto st = store::Store::open(dir.file("ns.db"), store::OpenMode::read_write);
  ASSERT_TRUE(st);
  store::RunInfo run;
  run.name = "ns";
  const auto id = *st->create_run(run);
  store::SeriesInfo si;
  si.run_id = id;
  si.kind = SeriesKind::process;
  si.pid = 1;
  si.comm = "sh";
  si.cmdline = "/bin/sh -c train";
  si.user = "root";
  si.in_job = true;
  const auto shell = *st->create_series(si);
  store::Chunk c;
  c.columns = store::fields_of(SeriesKind::process).size();
  c.append(1000, row(SeriesKind::process, {{"rss_bytes", 3.0 * 1048576}}));
  ASSERT_TRUE(st->insert_chunk(shell, c));
  const auto gpu_series = [&](std::uint32_t pid, unsigned gpu, double mib, double visibility) {
    store::SeriesInfo g = si;
    g.kind = SeriesKind::gpu_process;
    g.pid = pid;
    g.gpu_index = gpu;
    g.comm = "python";
    g.cmdline.clear();
    g.user.clear();
    g.in_job = false;
    const auto sid = *st->create_series(g);
    store::Chunk ch;
    ch.columns = store::fields_of(SeriesKind::gpu_process).size();
    ch.append(1000, row(SeriesKind::gpu_process,
                        {{"used_memory_bytes", mib * 1048576}, {"host_visibility", visibility}}));
    ASSERT_TRUE(st->insert_chunk(sid, ch));
  };
  gpu_series(1, 0, 5000, 2);
  gpu_series(1, 1, 7000, 2);
  gpu_series(9, 0, 300, 4);
  auto t = process_table(*st, id);
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->size(), 3u) << t->dump();
  std::map<std::string, nlohmann::json> by;
  for (const auto& r : *t)
    by[std::to_string(r["pid"].get<int>()) + r["host_visibility"].get<std::string>()] = r;
  const auto& sh = by.at("1visible");
  EXPECT_EQ(sh["user"], "root");
  EXPECT_TRUE(sh["peak_gpu_mem_mib"].is_null());  // the GPU memory is not the shell's
  EXPECT_EQ(sh["gpus"], nlohmann::json::array());
  const auto& foreign = by.at("1not_visible");
  EXPECT_EQ(foreign["user"], "");
  EXPECT_EQ(foreign["cmdline"], "");
  EXPECT_EQ(foreign["comm"], "python");
  EXPECT_FALSE(foreign["in_job"].get<bool>());
  EXPECT_TRUE(foreign["peak_rss_mib"].is_null());
  EXPECT_EQ(foreign["peak_gpu_mem_mib"], 7000.0);
  EXPECT_EQ(foreign["gpus"], nlohmann::json::array({0, 1}));
  EXPECT_EQ(by.at("9exited")["peak_gpu_mem_mib"], 300.0);
}

}  // namespace
}  // namespace trainmon::report
