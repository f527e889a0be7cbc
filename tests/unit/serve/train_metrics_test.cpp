// SPDX-License-Identifier: Apache-2.0
// serve's training metrics from live state documents (render_train_metrics, docs/serve.md).
#include <gtest/gtest.h>

#include <unistd.h>

#include <fmt/format.h>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "trainmon/ipc/run_state_file.h"
#include "trainmon/serve/metrics_text.h"
#include "trainmon/serve/serve_state.h"
#include "unit/export/export_fixtures.h"
#include "unit/recorder/train_synth.h"

namespace trainmon::serve {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.starts_with(line + "\n");
}

/// The value of the sample `name{labels}`; NaN when there is none.
double value(const std::string& text, const std::string& sample) {
  const auto at = text.find("\n" + sample + " ");
  if (at == std::string::npos) return NAN;
  return std::stod(text.substr(at + sample.size() + 2));
}

ipc::LiveRunState live_run() {
  ipc::RunStateHeader h;
  h.run_id = 12;
  h.name = "train.py";
  h.pid = 99;
  h.host = "node-a";
  h.start_unix_s = 1'718'000'000.0;
  h.labels = {{"SLURM_JOB_ID", "77"}, {"RANK", "9"}};  // RANK: ours wins
  auto s = ipc::parse_run_state(ipc::run_state_json(h, testing::two_rank_series(), 10.5, {}));
  EXPECT_TRUE(s);
  return *s;
}

const std::string kRank0 =
    R"(Hostname="node-a",run_id="12",run="train.py",rank="0",local_rank="0",node_rank="0",gpu="0",)"
    R"(slurm_job_id="77")";
const std::string kRank1 =
    R"(Hostname="node-a",run_id="12",run="train.py",rank="1",local_rank="1",node_rank="0",gpu="1",)"
    R"(slurm_job_id="77")";

TEST(TrainMetrics, HostnameOverrideNamesEveryRank) {
  const std::vector<ipc::LiveRunState> runs{live_run()};
  const std::string m = render_train_metrics(runs, "gpu-node-07");
  auto renamed = [](std::string l) { return l.replace(l.find("node-a"), 6, "gpu-node-07"); };
  EXPECT_NEAR(value(m, "trainmon_train_steps_total{" + renamed(kRank0) + "}"), 100, 1e-6) << m;
  EXPECT_NEAR(value(m, "trainmon_train_steps_total{" + renamed(kRank1) + "}"), 50, 1e-6) << m;
  EXPECT_EQ(m.find("node-a"), std::string::npos) << m;
}

TEST(TrainMetrics, PerRankCountersSummaryAndLastStep) {
  const std::vector<ipc::LiveRunState> runs{live_run()};
  const std::string m = render_train_metrics(runs);
  EXPECT_TRUE(has_line(m, "# TYPE trainmon_train_steps_total counter")) << m;
  EXPECT_NEAR(value(m, "trainmon_train_steps_total{" + kRank0 + "}"), 100, 1e-6) << m;
  EXPECT_NEAR(value(m, "trainmon_train_steps_total{" + kRank1 + "}"), 50, 1e-6) << m;
  EXPECT_NEAR(value(m, "trainmon_train_samples_total{" + kRank0 + "}"), 800, 1e-6) << m;
  EXPECT_NEAR(value(m, "trainmon_train_samples_total{" + kRank1 + "}"), 400, 1e-6) << m;
  EXPECT_NEAR(value(m, "trainmon_train_data_wait_seconds_total{" + kRank1 + "}"), 5, 1e-6) << m;
  EXPECT_NEAR(value(m, "trainmon_train_last_step_timestamp_seconds{" + kRank0 + "}"), 1718000010, 1e-3) << m;
  EXPECT_TRUE(has_line(m, "# TYPE trainmon_train_step_seconds summary")) << m;
  EXPECT_NEAR(value(m, "trainmon_train_step_seconds{" + kRank1 + R"(,quantile="0.5"})"), 0.2, 1e-6) << m;
  EXPECT_NEAR(value(m, "trainmon_train_step_seconds{" + kRank0 + R"(,quantile="0.9"})"), 0.1, 1e-6) << m;
  EXPECT_NEAR(value(m, "trainmon_train_step_seconds{" + kRank1 + R"(,quantile="0.99"})"), 0.2, 1e-6) << m;
  EXPECT_NEAR(value(m, "trainmon_train_step_seconds_sum{" + kRank1 + "}"), 10, 1e-6) << m;
  EXPECT_NEAR(value(m, "trainmon_train_step_seconds_count{" + kRank1 + "}"), 50, 1e-6) << m;
  // every family once
  for (const char* f : {"trainmon_train_steps_total", "trainmon_train_samples_total",
                        "trainmon_train_data_wait_seconds_total", "trainmon_train_step_seconds",
                        "trainmon_train_last_step_timestamp_seconds"}) {
    const std::string type = std::string("# TYPE ") + f + " ";
    EXPECT_EQ(m.find(type), m.rfind(type)) << f;
  }
}

TEST(TrainMetrics, CollectiveWaitAndEnergyPerRank) {
  // rank 1 a protocol v3 sender (its collective wait through the live state document), rank 0 an older one
  auto series = testing::two_rank_series();
  double total = 0;
  for (auto& w : series.ranks[1].rows) {
    w.comm.sum = static_cast<float>(w.steps * 0.05);
    total += w.comm.sum;
    w.total_comm_s = total;
  }
  ipc::RunStateHeader h;
  h.run_id = 12;
  h.name = "train.py";
  h.host = "node-a";
  h.start_unix_s = 1'718'000'000.0;
  h.labels = {{"SLURM_JOB_ID", "77"}};
  auto parsed = ipc::parse_run_state(ipc::run_state_json(h, series, 10.5, {}));
  ASSERT_TRUE(parsed);
  auto run = *parsed;
  EXPECT_NEAR(run.ranks[1].total_comm_s, 2.5, 1e-6);
  EXPECT_NEAR(run.ranks[1].comm_share, 0.25, 1e-6);  // recent: 50 ms of each 200-ms step
  EXPECT_TRUE(std::isnan(run.ranks[0].total_comm_s));
  run.ranks[1].energy_j = 42.5;  // serve fills it from the GPU samples
  const std::vector<ipc::LiveRunState> runs{run};
  const std::string m = render_train_metrics(runs);
  EXPECT_TRUE(has_line(m, "# TYPE trainmon_train_collective_wait_seconds_total counter")) << m;
  EXPECT_NEAR(value(m, "trainmon_train_collective_wait_seconds_total{" + kRank1 + "}"), 2.5, 1e-6) << m;
  EXPECT_EQ(m.find("trainmon_train_collective_wait_seconds_total{" + kRank0), std::string::npos) << m;
  EXPECT_TRUE(has_line(m, "# TYPE trainmon_train_energy_joules_total counter")) << m;
  EXPECT_NE(m.find("A GPU shared with other ranks or programs counts whole"), std::string::npos) << m;
  EXPECT_NEAR(value(m, "trainmon_train_energy_joules_total{" + kRank1 + "}"), 42.5, 1e-9) << m;
  // neither family without a figure
  const std::vector<ipc::LiveRunState> old{live_run()};
  EXPECT_EQ(render_train_metrics(old).find("collective_wait"), std::string::npos);
  EXPECT_EQ(render_train_metrics(old).find("energy"), std::string::npos);
}

TEST(TrainMetrics, UnknownFiguresHaveNoSampleAndNoTrainingNoFamilies) {
  auto run = live_run();
  run.ranks[1].total_samples = NAN;  // a loop that gives no batch size
  run.ranks[1].step_p50_s = run.ranks[1].step_p90_s = run.ranks[1].step_p99_s = NAN;  // no recent step
  run.ranks[1].gpu = -1;
  run.ranks[1].rank = -1;
  run.ranks[1].pid = 4101;
  const std::vector<ipc::LiveRunState> runs{run};
  const std::string m = render_train_metrics(runs);
  const std::string pid_labels =
      R"(Hostname="node-a",run_id="12",run="train.py",rank="",local_rank="1",node_rank="0",pid="4101",)"
      R"(slurm_job_id="77")";
  EXPECT_EQ(m.find("trainmon_train_samples_total{" + pid_labels), std::string::npos) << m;
  EXPECT_NEAR(value(m, "trainmon_train_steps_total{" + pid_labels + "}"), 50, 1e-6) << m;
  EXPECT_EQ(m.find("trainmon_train_step_seconds{" + pid_labels), std::string::npos) << m;
  EXPECT_NEAR(value(m, "trainmon_train_step_seconds_count{" + pid_labels + "}"), 50, 1e-6) << m;
  EXPECT_EQ(m.find("NaN"), std::string::npos);

  ipc::LiveRunState idle;
  idle.run_id = 3;
  EXPECT_EQ(render_train_metrics(std::vector<ipc::LiveRunState>{idle}), "");
  EXPECT_EQ(render_train_metrics({}), "");
}

TEST(TrainMetrics, PhaseIsAStateSetWithItsStart) {
  auto run = live_run();
  run.ranks[0].phase = "idle";  // an evaluation pass: the rules keep the job's hang alert quiet
  run.ranks[0].phase_since_unix_s = 1700000123.5;
  run.labels = {{"phase", "x"}};  // a run label of that name does not clash with ours
  const std::vector<ipc::LiveRunState> runs{run};
  const std::string m = render_train_metrics(runs, "n1");
  for (const char* p : {"data", "compute", "idle"}) {
    const auto at = m.find(fmt::format("phase=\"{}\"}} ", p));
    ASSERT_NE(at, std::string::npos) << p << "\n" << m;
    EXPECT_EQ(m.substr(m.find(' ', at) + 1, 1), std::string_view(p) == "idle" ? "1" : "0") << p;
  }
  EXPECT_EQ(m.find(R"(phase="x")"), std::string::npos) << m;
  EXPECT_NE(m.find("trainmon_train_phase_since_timestamp_seconds{"), std::string::npos);
  EXPECT_NE(m.find("} 1700000123.5\n"), std::string::npos) << m;
  // A phase the package did not report: no phase series at all.
  for (auto& r : run.ranks) r.phase = "unknown";
  const std::vector<ipc::LiveRunState> none{run};
  EXPECT_EQ(render_train_metrics(none, "n1").find("trainmon_train_phase"), std::string::npos);
}

TEST(TrainMetrics, NamesHostsAndLabelsFromTheJobAreEscaped) {
  auto run = live_run();
  run.name = "a\"b\\c\nd";                         // the run's name (the user's command)
  run.ranks[0].host = "h\x1b[31m\xff";             // from the training process
  run.labels = {{"bad key\n", "v\"1\n# TYPE x"}};  // a label name that is not one, a value with a newline
  const std::vector<ipc::LiveRunState> runs{run};
  const std::string m = render_train_metrics(runs);
  EXPECT_EQ(m.find('\x1b'), std::string::npos) << m;
  EXPECT_EQ(m.find('\xff'), std::string::npos) << m;
  EXPECT_NE(m.find(R"(run="a\"b\\c\nd")"), std::string::npos) << m;
  EXPECT_NE(m.find(R"(bad_key_="v\"1\n# TYPE x")"), std::string::npos) << m;
  EXPECT_NE(m.find("Hostname=\"h?[31m\xEF\xBF\xBD\""), std::string::npos) << m;
  // every line is a comment or a sample of ours: nothing from the job starts a line
  std::size_t at = 0;
  while (at < m.size()) {
    const auto end = m.find('\n', at);
    const std::string line = m.substr(at, end - at);
    EXPECT_TRUE(line.starts_with("# HELP trainmon_train_") || line.starts_with("# TYPE trainmon_train_") ||
                line.starts_with("trainmon_train_"))
        << line;
    at = end == std::string::npos ? m.size() : end + 1;
  }
}

TEST(TrainMetrics, ServeReadsTheLiveRunsEachTick) {
  std::string base = (std::filesystem::temp_directory_path() / "trainmon-serve-XXXXXX").string();
  ASSERT_TRUE(::mkdtemp(base.data()));
  const std::string dir = base + "/trainmon/runs";
  ServeState st({}, 10, dir);
  auto snap = testing::h200_snapshot();
  diagnose::TickContext ctx{snap, {}, 0, 1.0};
  st.on_tick(ctx);
  EXPECT_EQ(st.train_json(), "[]");
  EXPECT_EQ(st.metrics_text().find("trainmon_train_"), std::string::npos);
  {
    ipc::RunStateHeader h;
    h.run_id = 12;
    h.name = "train.py";
    h.pid = static_cast<std::uint32_t>(::getpid());
    h.start_unix_s = 1'718'000'000.0;
    auto f = ipc::RunStateFile::create(h, dir);
    ASSERT_TRUE(f) << f.error().message;
    ASSERT_TRUE(f->write(testing::two_rank_series(), 10.5, {}));
    snap.time_unix_ns += 1'000'000'000;
    st.on_tick(ctx);
    const auto j = nlohmann::json::parse(st.train_json());
    ASSERT_EQ(j.size(), 1u);
    EXPECT_EQ(j[0]["run_id"], 12);
    EXPECT_EQ(j[0]["train"]["ranks"].size(), 2u);
    const std::string m = st.metrics_text();
    EXPECT_NEAR(
        value(
            m,
            "trainmon_train_steps_total{" +
                std::string(
                    R"(Hostname="node-a",run_id="12",run="train.py",rank="1",local_rank="1",node_rank="0",gpu="1")") +
                "}"),
        50, 1e-9)
        << m;
    // rank 0's GPU0 used 7 J since serve first saw the rank (NVML's counter in mJ); rank 1's GPU1 is
    // not in the samples: no energy for it
    snap.gpus[0].total_energy_mj = Reading<std::uint64_t>::of(1'000'000);
    st.on_tick(ctx);
    snap.gpus[0].total_energy_mj = Reading<std::uint64_t>::of(1'007'000);
    st.on_tick(ctx);
    const std::string e = st.metrics_text();
    EXPECT_NEAR(
        value(e, "trainmon_train_energy_joules_total{" +
                     std::string(R"(Hostname="node-a",run_id="12",run="train.py",rank="0",local_rank="0",)"
                                 R"(node_rank="0",gpu="0")") +
                     "}"),
        7, 1e-9)
        << e;
    EXPECT_EQ(
        e.find(R"(trainmon_train_energy_joules_total{Hostname="node-a",run_id="12",run="train.py",rank="1")"),
        std::string::npos)
        << e;
  }
  // the run ended (its file is gone): its series go with the next tick
  st.on_tick(ctx);
  EXPECT_EQ(st.train_json(), "[]");
  EXPECT_EQ(st.metrics_text().find("trainmon_train_"), std::string::npos);
  std::filesystem::remove_all(base);
}

}  // namespace
}  // namespace trainmon::serve
