// SPDX-License-Identifier: Apache-2.0
// Writes a synthetic long run into a store for bench/compare_report_render.sh (not a benchmark
// itself): GPUS busy GPUs for HOURS at 1 s (every GPU column the report draws, six high-resolution
// utilisation samples per tick with a starvation dip every 10 minutes), the host, one job process
// per GPU, an epoch every hour, and a D2 finding on GPU 1 for the middle hour.
//   report_synth_run DB [HOURS=72] [GPUS=8]      prints the run id
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "trainmon/diagnose/train_message.h"
#include "trainmon/ipc/train_channel.h"
#include "trainmon/store/series_fields.h"
#include "trainmon/store/store.h"

namespace {

using namespace trainmon;
using store::SeriesKind;

/// Builds rows by column name in physical units (scaled as the store expects).
class RowBuilder {
 public:
  explicit RowBuilder(SeriesKind kind) : kind_(kind), row_(store::fields_of(kind).size(), store::kNull) {}
  RowBuilder& set(const char* name, double value) {
    auto i = store::field_index(kind_, name);
    if (!i) {
      std::fprintf(stderr, "no column %s\n", name);
      std::exit(2);
    }
    row_[*i] = static_cast<std::int64_t>(std::llround(value * store::fields_of(kind_)[*i].scale));
    return *this;
  }
  const std::vector<std::int64_t>& row() const { return row_; }

 private:
  SeriesKind kind_;
  std::vector<std::int64_t> row_;
};

template <class T>
T check(Expected<T> r, const char* what) {
  if (!r) {
    std::fprintf(stderr, "%s: %s\n", what, r.error().message.c_str());
    std::exit(1);
  }
  return std::move(*r);
}

void check(Expected<void> r, const char* what) {
  if (!r) {
    std::fprintf(stderr, "%s: %s\n", what, r.error().message.c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: report_synth_run DB [HOURS] [GPUS]\n");
    return 2;
  }
  const double hours = argc > 2 ? std::atof(argv[2]) : 72;
  const unsigned gpus = argc > 3 ? static_cast<unsigned>(std::atoi(argv[3])) : 8;
  const auto ticks = static_cast<std::int64_t>(hours * 3600);
  auto st = check(store::Store::open(argv[1], store::OpenMode::read_write), "open");
  const std::int64_t start_ms = 1'700'000'000'000;
  store::RunInfo run;
  run.name = "synthetic-3d";
  run.command = {"torchrun", "--nproc-per-node", std::to_string(gpus), "train.py"};
  run.user = "bench";
  run.host = "node-a";
  run.start_unix_ns = start_ms * 1'000'000;
  for (unsigned g = 0; g < gpus; ++g) {
    run.gpus.push_back({g, "GPU-" + std::to_string(g), "NVIDIA H200", "", 150'754'820'096, 700'000, true});
  }
  const auto id = check(st.create_run(run), "create_run");

  std::vector<std::int64_t> gpu_s, hr_s, proc_s, gproc_s;
  for (unsigned g = 0; g < gpus; ++g) {
    store::SeriesInfo si;
    si.run_id = id;
    si.gpu_index = g;
    si.kind = SeriesKind::gpu;
    gpu_s.push_back(check(st.create_series(si), "series"));
    si.kind = SeriesKind::gpu_util_hr;
    hr_s.push_back(check(st.create_series(si), "series"));
    store::SeriesInfo pi;
    pi.run_id = id;
    pi.kind = SeriesKind::process;
    pi.pid = 1000 + g;
    pi.comm = "python3";
    pi.cmdline = "python3 train.py --local-rank " + std::to_string(g);
    pi.in_job = true;
    pi.ppid = 999;
    proc_s.push_back(check(st.create_series(pi), "series"));
    pi.kind = SeriesKind::gpu_process;
    pi.gpu_index = g;
    gproc_s.push_back(check(st.create_series(pi), "series"));
  }
  store::SeriesInfo hi;
  hi.run_id = id;
  hi.kind = SeriesKind::host;
  const auto host_s = check(st.create_series(hi), "series");

  const std::size_t cg = store::fields_of(SeriesKind::gpu).size(),
                    ch = store::fields_of(SeriesKind::host).size(),
                    cp = store::fields_of(SeriesKind::process).size(),
                    cgp = store::fields_of(SeriesKind::gpu_process).size();
  std::vector<store::Chunk> gc(gpus), hc(gpus), pc(gpus), gpc(gpus);
  for (unsigned g = 0; g < gpus; ++g) {
    gc[g].columns = cg;
    hc[g].columns = 1;
    pc[g].columns = cp;
    gpc[g].columns = cgp;
  }
  store::Chunk host;
  host.columns = ch;
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 2);
  check(st.begin(), "begin");
  for (std::int64_t t = 0; t < ticks; ++t) {
    const std::int64_t t_ms = start_ms + t * 1000;
    const bool dip = t % 600 < 5;  // a data-loader stall every 10 minutes
    for (unsigned g = 0; g < gpus; ++g) {
      const bool idle_rank = g == 1 && t > ticks / 2 - 1800 && t < ticks / 2 + 1800;
      const double util = idle_rank ? 8 : dip ? 20 : std::clamp(88 + noise(rng), 0.0, 100.0);
      const double mem = 80e9 + static_cast<double>(t % 3600) * 2e6;
      RowBuilder r(SeriesKind::gpu);
      r.set("responsive", 1)
          .set("memory_total_bytes", 150'754'820'096)
          .set("memory_used_bytes", mem)
          .set("memory_reserved_bytes", 520'093'696)
          .set("utilization_gpu_pct", std::round(util))
          .set("utilization_memory_pct", std::round(util * 0.45))
          .set("temperature_gpu_c", std::round(62 + noise(rng) / 2))
          .set("temperature_slowdown_c", 87)
          .set("power_draw_mw", 550'000 + noise(rng) * 5'000)
          .set("enforced_power_limit_mw", 700'000)
          .set("clocks_sm_mhz", t % 7200 < 60 ? 1500 : 1980)
          .set("clocks_max_sm_mhz", 1980)
          .set("clocks_event_reasons_active", t % 7200 < 60 ? 0x4 : 0);
      gc[g].append(t_ms, r.row());
      for (int k = 0; k < 6; ++k) {
        hc[g].append(t_ms - 1000 + k * 166, {static_cast<std::int64_t>(dip || k % 3 == 0 ? 0 : util)});
      }
      RowBuilder p(SeriesKind::process);
      p.set("rss_bytes", 6e9 + static_cast<double>(t) * 1000)
          .set("cpu_time_s", static_cast<double>(t) * 0.9)
          .set("cpu_pct", 90)
          .set("ppid", 999);
      pc[g].append(t_ms, p.row());
      RowBuilder gp(SeriesKind::gpu_process);
      gp.set("used_memory_bytes", mem - 1e9).set("host_visibility", 1);
      gpc[g].append(t_ms, gp.row());
      if (gc[g].rows() == 60) {
        check(st.insert_chunk(gpu_s[g], gc[g]), "chunk");
        check(st.insert_chunk(hr_s[g], hc[g]), "chunk");
        check(st.insert_chunk(proc_s[g], pc[g]), "chunk");
        check(st.insert_chunk(gproc_s[g], gpc[g]), "chunk");
        gc[g].clear();
        hc[g].clear();
        pc[g].clear();
        gpc[g].clear();
      }
    }
    RowBuilder h(SeriesKind::host);
    h.set("cpu_busy_pct", std::clamp(45 + noise(rng), 0.0, 100.0))
        .set("cpu_iowait_pct", 2)
        .set("cpu_max_core_busy_pct", 98)
        .set("cpu_count_online", 64)
        .set("memory_total_bytes", 2.0e12)
        .set("memory_available_bytes", 1.5e12 - static_cast<double>(t) * 1e5)
        .set("memory_cached_bytes", 3e11)
        .set("disk_read_bytes_per_s", dip ? 2e9 : 2e8);
    host.append(t_ms, h.row());
    if (host.rows() == 60) {
      check(st.insert_chunk(host_s, host), "chunk");
      host.clear();
    }
    if (t % 3600 == 3599) {
      diagnose::TrainMessage m;
      m.type = diagnose::EventType::epoch_end;
      m.time_unix_s = static_cast<double>(t_ms) / 1000.0;
      m.epoch = t / 3600;
      m.rank = 0;
      check(st.insert_train_event(id, ipc::to_store_event(m, static_cast<std::int64_t>(m.time_unix_s * 1e9))),
            "train event");
      check(st.commit(), "commit");
      check(st.begin(), "begin");
    }
  }
  for (unsigned g = 0; g < gpus; ++g) {
    if (gc[g].rows()) {
      check(st.insert_chunk(gpu_s[g], gc[g]), "chunk");
      check(st.insert_chunk(hr_s[g], hc[g]), "chunk");
      check(st.insert_chunk(proc_s[g], pc[g]), "chunk");
      check(st.insert_chunk(gproc_s[g], gpc[g]), "chunk");
    }
  }
  if (host.rows()) check(st.insert_chunk(host_s, host), "chunk");
  check(st.commit(), "commit");
  auto f = diagnose::make_finding("D2", diagnose::Severity::warning, static_cast<double>(ticks / 2 - 1800),
                                  static_cast<double>(ticks / 2 + 1800));
  f.gpus = {1};
  f.evidence = "GPU 1 at 8 % while the other ranks are at 88 %";
  f.advice = "check rank 1's data shard and input pipeline";
  check(st.insert_findings(id, {f}), "findings");
  check(st.finish_run(id, store::RunEnd{(start_ms + ticks * 1000) * 1'000'000, "exited", 0, {}, ""}),
        "finish");
  std::printf("%lld\n", static_cast<long long>(id));
  return 0;
}
