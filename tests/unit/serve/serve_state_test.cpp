// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "trainmon/serve/serve_state.h"
#include "unit/export/export_fixtures.h"

using namespace trainmon;
using namespace trainmon::serve;
using trainmon::testing::h200_snapshot;
using trainmon::testing::kMiB;

TEST(ServeState, BeforeTheFirstTick) {
  ServeState st({});
  auto m = st.metrics_text();
  EXPECT_NE(m.find("trainmon_exporter_ticks_total{Hostname=\"\"} 0"), std::string::npos) << m;
  EXPECT_EQ(m.find("DCGM_FI_"), std::string::npos);
  auto j = nlohmann::json::parse(st.snapshot_json());
  EXPECT_TRUE(j["status"].is_null());
  EXPECT_EQ(j["gpu_health"], nlohmann::json::array());
  EXPECT_EQ(nlohmann::json::parse(st.history_json(60))["t"].size(), 0u);
}

TEST(ServeState, TicksFeedMetricsSnapshotAndHistory) {
  ServeState st({{"SLURM_JOB_ID", "77"}}, 3);
  diagnose::StartContext start;
  start.tool = "serve";
  start.run_id = 5;
  start.db_path = "/tmp/x.db";
  st.on_start(start);
  auto snap = h200_snapshot();
  for (int i = 0; i < 5; ++i) {
    snap.time_unix_ns = 1'700'000'000'000'000'000 + i * 1'000'000'000LL;
    snap.monotonic_ns = 9'000'000'000 + i * 1'000'000'000LL;  // the tick interval's clock
    snap.gpus[0].utilization_gpu_pct = Reading<unsigned>::of(10u * static_cast<unsigned>(i));
    snap.gpus[0].memory_used_bytes = Reading<std::uint64_t>::of(1024 * kMiB);
    if (i == 3) {
      GpuEvent ev;
      ev.gpu_index = 0;
      ev.event_type = 0x8;
      ev.xid = 48;
      ev.time_unix_ns = snap.time_unix_ns - 200'000'000;
      snap.events = {ev};
    } else {
      snap.events.clear();
    }
    std::vector<diagnose::Finding> findings;
    if (i == 4) findings.push_back(diagnose::make_finding("D6", diagnose::Severity::warning, 1, 4));
    diagnose::TickContext ctx{snap, findings, 5, static_cast<double>(i)};
    st.on_tick(ctx);
  }
  EXPECT_EQ(st.ticks(), 5u);
  EXPECT_EQ(st.run_id(), 5);
  EXPECT_EQ(st.db_path(), "/tmp/x.db");
  auto m = st.metrics_text();
  EXPECT_NE(
      m.find("modelName=\"NVIDIA H200\",Hostname=\"gpu-node-01\",DCGM_FI_DRIVER_VERSION=\"590.48.01\"} 40\n"),
      std::string::npos)
      << m;
  EXPECT_NE(m.find("DCGM_FI_DEV_XID_ERRORS{gpu=\"0\""), std::string::npos);
  EXPECT_NE(m.find("} 48\n"), std::string::npos) << "the last Xid stays after its tick";
  EXPECT_NE(m.find("slurm_job_id=\"77\""), std::string::npos);
  EXPECT_NE(m.find("trainmon_exporter_tick_interval_seconds{Hostname=\"gpu-node-01\"} 1\n"),
            std::string::npos);
  EXPECT_EQ(st.metrics_text(), m) << "cached within a tick";

  auto j = nlohmann::json::parse(st.snapshot_json());
  EXPECT_EQ(j["run_id"], 5);
  EXPECT_EQ(j["status"]["gpus"][0]["utilization.gpu"], 40);
  ASSERT_EQ(j["findings"].size(), 1u);
  EXPECT_EQ(j["findings"][0]["code"], "D6");
  // gpu_health: what the status document lacks (aggregate ECC, the last Xid since start)
  ASSERT_EQ(j["gpu_health"].size(), snap.gpus.size());
  const auto& gh = j["gpu_health"][0];
  EXPECT_EQ(gh["index"], 0);
  EXPECT_EQ(gh["ecc.errors.uncorrected.aggregate.total"], 0);
  ASSERT_TRUE(gh["xid"].is_object()) << gh;
  EXPECT_EQ(gh["xid"]["code"], 48);
  EXPECT_EQ(gh["xid"]["events"], 1);
  EXPECT_EQ(gh["xid"]["severity"], "critical");
  EXPECT_EQ(gh["xid"]["meaning"], "Double-bit ECC error (uncorrectable memory error)");
  EXPECT_EQ(gh["xid"]["time_unix_ns"], 1'700'000'000'000'000'000 + 3'000'000'000LL - 200'000'000);
  if (snap.gpus.size() > 1) {
    EXPECT_TRUE(j["gpu_health"][1]["xid"].is_null());
  }

  auto h = nlohmann::json::parse(st.history_json(3600));
  ASSERT_EQ(h["t"].size(), 3u) << "the ring keeps 3 rows";
  EXPECT_EQ(h["gpus"][0]["util_gpu_pct"], nlohmann::json({20.0, 30.0, 40.0}));
  EXPECT_EQ(h["gpus"][0]["mem_used_mib"][2], 1024.0);
  h = nlohmann::json::parse(st.history_json(1.5));
  EXPECT_EQ(h["t"].size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(st.findings_json()).size(), 1u);
}

TEST(ServeState, HealthFollowsTheAgeOfTheLastSample) {
  ServeState st({});
  constexpr std::int64_t t0 = 5'000'000'000'000;  // CLOCK_MONOTONIC: the age ignores wall-clock steps
  EXPECT_EQ(st.health_problem(t0, 10), "no sample yet");
  auto snap = h200_snapshot();
  snap.monotonic_ns = t0;
  snap.time_unix_ns = 1'700'000'000'000'000'000;
  diagnose::TickContext ctx{snap, {}, 0, 0};
  st.on_tick(ctx);
  EXPECT_EQ(st.health_problem(t0 + 2'000'000'000, 10), "");
  EXPECT_EQ(st.health_problem(t0 + 10'000'000'000, 10), "") << "exactly the limit is still fresh";
  EXPECT_EQ(st.health_problem(t0 + 42'000'000'000, 10), "last sample 42 s ago");
}
