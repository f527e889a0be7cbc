// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cmath>

#include "trainmon/core/text_escape.h"

#include "trainmon/serve/metrics_text.h"
#include "unit/export/export_fixtures.h"

using namespace trainmon;
using namespace trainmon::serve;
using trainmon::testing::gpu_process;
using trainmon::testing::h200_snapshot;
using trainmon::testing::kMiB;

namespace {

const std::string kLabels0 =
    R"(gpu="0",UUID="GPU-00000000-0000-0000-0000-000000000000",pci_bus_id="00000000:83:00.0",)"
    R"(device="nvidia0",modelName="NVIDIA H200",Hostname="gpu-node-01",DCGM_FI_DRIVER_VERSION="590.48.01")";

const std::string kOwnLabels0 =
    R"(gpu="0",UUID="GPU-00000000-0000-0000-0000-000000000000",pci_bus_id="00000000:83:00.0",)"
    R"(device="nvidia0",Hostname="gpu-node-01")";

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.starts_with(line + "\n");
}

Snapshot loaded() {
  Snapshot s = h200_snapshot();
  auto& g = s.gpus[0];
  g.utilization_gpu_pct = Reading<unsigned>::of(87);
  g.memory_used_bytes = Reading<std::uint64_t>::of(32362 * kMiB);
  g.memory_free_bytes = Reading<std::uint64_t>::of(110000 * kMiB);
  g.power_draw_mw = Reading<unsigned>::of(627400);
  g.total_energy_mj = Reading<std::uint64_t>::of(123456789);
  g.temperature_gpu_c = Reading<unsigned>::of(52);
  g.gpm_sm_util_pct = Reading<double>::of(75.0);
  g.gpm_graphics_util_pct = Reading<double>::of(81.0);
  g.nvlink_data_kib_s = Reading<double>::of(2048000.0);
  g.violation_power_ns = Reading<std::uint64_t>::of(5'000'000);
  return s;
}

}  // namespace

TEST(MetricsText, DcgmNamesLabelsAndUnits) {
  auto text = render_metrics(loaded(), {}, {});
  EXPECT_TRUE(has_line(text, "# TYPE DCGM_FI_DEV_GPU_UTIL gauge")) << text;
  EXPECT_TRUE(has_line(text, "DCGM_FI_DEV_GPU_UTIL{" + kLabels0 + "} 87")) << text;
  EXPECT_TRUE(has_line(text, "DCGM_FI_DEV_FB_USED{" + kLabels0 + "} 32362"));                       // MiB
  EXPECT_TRUE(has_line(text, "DCGM_FI_DEV_FB_FREE{" + kLabels0 + "} 110000"));                      // MiB
  EXPECT_TRUE(has_line(text, "DCGM_FI_DEV_POWER_USAGE{" + kLabels0 + "} 627.4"));                   // W
  EXPECT_TRUE(has_line(text, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{" + kLabels0 + "} 123456789"));  // mJ
  EXPECT_TRUE(has_line(text, "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter"));
  EXPECT_TRUE(has_line(text, "DCGM_FI_DEV_GPU_TEMP{" + kLabels0 + "} 52"));
  EXPECT_TRUE(has_line(text, "DCGM_FI_DEV_SM_CLOCK{" + kLabels0 + "} 345"));
  EXPECT_TRUE(has_line(text, "DCGM_FI_PROF_SM_ACTIVE{" + kLabels0 + "} 0.75"));         // ratio
  EXPECT_TRUE(has_line(text, "DCGM_FI_PROF_GR_ENGINE_ACTIVE{" + kLabels0 + "} 0.81"));  // ratio
  EXPECT_TRUE(has_line(text, "# TYPE DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL gauge"));
  EXPECT_TRUE(has_line(text, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{" + kLabels0 + "} 2000"));  // MB/s
  EXPECT_TRUE(has_line(text, "DCGM_FI_DEV_POWER_VIOLATION{" + kLabels0 + "} 5000"));         // us
  EXPECT_TRUE(
      has_line(text, "DCGM_FI_DEV_XID_ERRORS{" + kLabels0 + R"(,err_code="0",err_msg="No Error"} 0)"));
  EXPECT_TRUE(
      has_line(text, "trainmon_gpu_memory_used_bytes{" + kOwnLabels0 + "} " + std::to_string(32362 * kMiB)))
      << "trainmon_* leave out the camelCase modelName";
  EXPECT_TRUE(text.ends_with("\n"));
}

TEST(MetricsText, NotAvailableReadingsAreOmittedNotZero) {
  auto s = loaded();
  s.gpus[0].utilization_gpu_pct = Reading<unsigned>::fail(ReadStatus::not_supported, 3);
  s.gpus[0].gpm_sm_util_pct = Reading<double>::fail(ReadStatus::not_supported);
  s.gpus[0].nvlink_data_kib_s = Reading<double>::fail(ReadStatus::not_supported);  // no NVLink
  auto text = render_metrics(s, {}, {});
  EXPECT_EQ(text.find("DCGM_FI_DEV_GPU_UTIL"), std::string::npos) << "a family with no sample is left out";
  EXPECT_EQ(text.find("DCGM_FI_PROF_SM_ACTIVE"), std::string::npos);
  EXPECT_EQ(text.find("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"), std::string::npos);
  EXPECT_NE(text.find("DCGM_FI_DEV_FB_USED{"), std::string::npos);
}

TEST(MetricsText, LostGpuHasOnlyUpZero) {
  auto s = loaded();
  s.gpus[0].responsive = Reading<bool>::fail(ReadStatus::gpu_lost, 15);
  auto text = render_metrics(s, {}, {});
  EXPECT_EQ(text.find("DCGM_FI_DEV_FB_USED{"), std::string::npos);
  EXPECT_TRUE(has_line(text, "trainmon_gpu_up{" + kOwnLabels0 + "} 0"));
}

TEST(MetricsText, ProcessSeriesFollowTheSnapshot) {
  auto s = loaded();
  s.gpu_processes.push_back(gpu_process(10291, "python", 2566));
  s.gpu_processes.push_back(gpu_process(10309, "ghost\"name", 100));
  auto text = render_metrics(s, {}, {});
  EXPECT_TRUE(has_line(
      text,
      R"(trainmon_process_gpu_memory_bytes{gpu="0",pid="10291",comm="python",Hostname="gpu-node-01"} )" +
          std::to_string(2566 * kMiB + 4096)))
      << text;
  EXPECT_NE(text.find(R"(comm="ghost\"name")"), std::string::npos);
  s.gpu_processes.erase(s.gpu_processes.begin());  // pid 10291 exited
  text = render_metrics(s, {}, {});
  EXPECT_EQ(text.find("pid=\"10291\""), std::string::npos) << "stale series dropped";
  EXPECT_NE(text.find("pid=\"10309\""), std::string::npos);
}

namespace {

/// The host process the GPU join linked to GPU process `pid` (HostVisibility::visible).
ProcessSample host_process(std::uint32_t pid, std::string user) {
  ProcessSample p;
  p.pid = pid;
  p.start_time_ticks = 4242;
  p.user = std::move(user);
  p.comm = "python";
  return p;
}

const std::string kProcKey0 =
    R"(gpu="0",UUID="GPU-00000000-0000-0000-0000-000000000000",pid="10291",Hostname="gpu-node-01")";

}  // namespace

TEST(MetricsText, GpuProcessInfoAndGaugesJoinByPid) {
  auto s = loaded();
  const std::string before = render_metrics(s, {}, {});
  EXPECT_EQ(before.find("trainmon_gpu_process_"), std::string::npos) << "no GPU process: no new family";

  auto gp = gpu_process(10291, "python", 2566);
  gp.sm_util_pct = Reading<unsigned>::of(37);
  gp.host = HostVisibility::visible;
  s.gpu_processes.push_back(gp);
  auto hp = host_process(10291, "alice");
  hp.attribution.slurm_job_id = "4242";
  hp.attribution.slurm_step = "0";
  hp.attribution.slurm_partition = "gpu";
  hp.attribution.rank = 3;
  s.processes.push_back(hp);
  // Not visible from here (another PID namespace): what the driver gave, no user, no job.
  auto foreign = gpu_process(77, "python", 100);
  foreign.host = HostVisibility::not_visible;
  s.gpu_processes.push_back(foreign);
  s.processes.push_back(host_process(77, "mallory"));  // same number, another process
  s.processes.back().attribution.slurm_job_id = "666";

  const auto text = render_metrics(s, {}, {});
  EXPECT_TRUE(has_line(text, "# TYPE trainmon_gpu_process_info gauge")) << text;
  EXPECT_TRUE(has_line(text, "trainmon_gpu_process_info{" + kProcKey0 +
                                 R"(,comm="python",user="alice",job_id="4242",step="0",partition="gpu",)"
                                 R"(account="",namespace="",pod="",pod_uid="",container="",container_id="",)"
                                 R"(rank="3"} 1)"))
      << text;
  EXPECT_TRUE(has_line(text,
                       R"(trainmon_gpu_process_info{gpu="0",UUID="GPU-00000000-0000-0000-0000-000000000000",)"
                       R"(pid="77",Hostname="gpu-node-01",comm="python",user="",job_id="",step="",)"
                       R"(partition="",account="",namespace="",pod="",pod_uid="",container="",)"
                       R"(container_id="",rank=""} 1)"))
      << "a process not joined keeps an info series without the local pid's user or job";
  EXPECT_EQ(text.find("666"), std::string::npos);
  EXPECT_EQ(text.find("mallory"), std::string::npos);
  EXPECT_TRUE(has_line(text, "# TYPE trainmon_gpu_process_memory_used_bytes gauge"));
  EXPECT_TRUE(has_line(text, "trainmon_gpu_process_memory_used_bytes{" + kProcKey0 + "} " +
                                 std::to_string(2566 * kMiB + 4096)));
  EXPECT_TRUE(has_line(text, "trainmon_gpu_process_sm_utilization_ratio{" + kProcKey0 + "} 0.37"));
  EXPECT_EQ(text.find("trainmon_gpu_process_sm_utilization_ratio{gpu=\"0\",UUID=\"GPU-00000000-0000-0000-"
                      "0000-000000000000\",pid=\"77\""),
            std::string::npos)
      << "N/A utilisation is left out, not 0";
  // Never a job label on the GPU's own series.
  for (std::size_t at = 0; (at = text.find("\nDCGM_FI_", at)) != std::string::npos; ++at) {
    const auto eol = text.find('\n', at + 1);
    EXPECT_EQ(text.substr(at, eol - at).find("job_id"), std::string::npos);
  }
  // The text before the new families is what it was without processes, but for the old family.
  const auto head = text.substr(0, text.find("# HELP trainmon_process_gpu_memory_bytes"));
  EXPECT_TRUE(before.starts_with(head));
}

TEST(MetricsText, GpuProcessHostileAttributionIsEscaped) {
  auto s = loaded();
  auto gp = gpu_process(5, "evil\"\n\\name", 1);
  gp.host = HostVisibility::visible;
  s.gpu_processes.push_back(gp);
  auto hp = host_process(5, "bob\"}\nx 1");
  hp.attribution.slurm_job_id = "1\\2\"3\n4";
  hp.attribution.pod_namespace = "ns";
  hp.attribution.pod_name = "p\"od";
  hp.attribution.container_name = "c\n";
  s.processes.push_back(hp);
  const auto text = render_metrics(s, {}, {});
  EXPECT_NE(text.find(R"(comm="evil\"\n\\name",user="bob\"}\nx 1",job_id="1\\2\"3\n4")"), std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(namespace="ns",pod="p\"od",pod_uid="",container="c\n")"), std::string::npos);
  // Every sample line still parses: name{labels} value, one per line.
  std::size_t lines = 0;
  for (std::size_t at = 0, eol; (eol = text.find('\n', at)) != std::string::npos; at = eol + 1) {
    const auto line = text.substr(at, eol - at);
    ++lines;
    if (line.starts_with("#")) continue;
    EXPECT_TRUE(line.starts_with("DCGM_FI_") || line.starts_with("trainmon_")) << line;
  }
  EXPECT_GT(lines, 10u);
}

TEST(MetricsText, EscapingAndLabelNames) {
  EXPECT_EQ(text::prometheus_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(text::prometheus_help("x\\y\nz\""), "x\\\\y\\nz\"");
  EXPECT_EQ(text::prometheus_label_value("caf\xC3\xA9 \xE2\x82\xAC"), "caf\xC3\xA9 \xE2\x82\xAC")
      << "valid UTF-8 kept";
  EXPECT_EQ(text::prometheus_label_value("py\xFFthon\xC3"), "py\xEF\xBF\xBDthon\xEF\xBF\xBD");
  EXPECT_EQ(text::prometheus_label_value("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD")
      << "surrogates";
  EXPECT_EQ(text::prometheus_label_value("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD") << "overlong";
  EXPECT_EQ(text::prometheus_label_name("SLURM_JOB_ID"), "slurm_job_id");
  EXPECT_EQ(text::prometheus_label_name("team.name-x"), "team_name_x");
  EXPECT_EQ(text::prometheus_label_name("9lives"), "_9lives");
  EXPECT_EQ(text::prometheus_label_name("__reserved"), "_reserved");
  auto s = loaded();
  s.host.hostname = "we\"ird\nhost";
  ExporterState st;
  st.labels = {{"SLURM_JOB_ID", "4242"}, {"team", "vision"}};
  auto text = render_metrics(s, {}, st);
  EXPECT_NE(text.find(R"(Hostname="we\"ird\nhost")"), std::string::npos);
  EXPECT_NE(
      text.find(R"(trainmon_labels_info{Hostname="we\"ird\nhost",slurm_job_id="4242",team="vision"} 1)"),
      std::string::npos)
      << text;
}

TEST(MetricsText, FindingsXidAndExporterHealth) {
  auto s = loaded();
  auto f = diagnose::make_finding("D4", diagnose::Severity::warning, 10, 20);
  f.gpus = {0};
  std::vector<diagnose::Finding> active{f};
  ExporterState st;
  st.ticks_total = 7;
  st.run_id = 3;
  st.last_xid = {{0, 79}};
  auto text = render_metrics(s, active, st);
  EXPECT_TRUE(has_line(text, R"(trainmon_findings_active{Hostname="gpu-node-01",severity="warning"} 1)"))
      << text;
  EXPECT_TRUE(has_line(text, R"(trainmon_findings_active{Hostname="gpu-node-01",severity="critical"} 0)"));
  EXPECT_NE(text.find(R"(trainmon_finding_active{Hostname="gpu-node-01",code="D4",slug=")"),
            std::string::npos);
  EXPECT_TRUE(has_line(text, "DCGM_FI_DEV_XID_ERRORS{" + kLabels0 +
                                 R"(,err_code="79",err_msg="GPU has fallen off the bus"} 79)"))
      << text;
  // The counter beside the gauge: every GPU has one (0 without an Xid), a repeat of the same Xid counts.
  st.xid_events = {{0, 2}};
  text = render_metrics(s, active, st);
  EXPECT_NE(text.find("# TYPE trainmon_gpu_xid_errors_total counter"), std::string::npos);
  const auto at = text.find("\ntrainmon_gpu_xid_errors_total{gpu=\"0\"");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string line = text.substr(at + 1, text.find('\n', at + 1) - at - 1);
  EXPECT_NE(line.find("Hostname=\"gpu-node-01\""), std::string::npos) << line;
  EXPECT_TRUE(line.ends_with("} 2")) << line;
  EXPECT_TRUE(has_line(text, R"(trainmon_exporter_ticks_total{Hostname="gpu-node-01"} 7)"));
  EXPECT_TRUE(has_line(text, R"(trainmon_exporter_recording{Hostname="gpu-node-01"} 1)"));
}

TEST(MetricsText, EveryFamilyHasHelpAndTypeOnce) {
  auto text = render_metrics(loaded(), {}, {});
  std::size_t pos = 0;
  std::map<std::string, int> types;
  while ((pos = text.find("# TYPE ", pos)) != std::string::npos) {
    auto end = text.find(' ', pos + 7);
    ++types[text.substr(pos + 7, end - pos - 7)];
    pos = end;
  }
  EXPECT_GT(types.size(), 20u);
  for (const auto& [name, n] : types) {
    EXPECT_EQ(n, 1) << name;
    EXPECT_NE(text.find("# HELP " + name + " "), std::string::npos) << name;
  }
}

namespace {

/// The value of the sample `name{labels}` in `text`; NaN when absent.
double sample_value(const std::string& text, const std::string& name, const std::string& labels) {
  const std::string key = name + "{" + labels + "} ";
  const auto at = text.find("\n" + key);
  if (at == std::string::npos) return std::nan("");
  return std::stod(text.substr(at + 1 + key.size()));
}

}  // namespace

TEST(MetricsText, CountersNeverGoDownAcrossADriverReload) {
  ExporterState st;
  const std::uint64_t ecc[] = {2, 5, 0, 1};  // the volatile count restarts at a driver reload
  const std::uint64_t energy[] = {1000, 4000, 10, 510};
  std::vector<double> exported_ecc, exported_energy, exported_rx;
  for (int i = 0; i < 4; ++i) {
    Snapshot s = loaded();
    s.gpus[0].ecc_uncorrected_volatile = Reading<std::uint64_t>::of(ecc[i]);
    s.gpus[0].total_energy_mj = Reading<std::uint64_t>::of(energy[i]);
    NetSample n;
    n.name = "eth0";
    n.rx_bytes_total = i == 2 ? 100 : 1'000'000 + static_cast<std::uint64_t>(i);  // interface re-created
    s.host.nets = {n};
    follow_counters(s, st.counters);
    const auto text = render_metrics(s, {}, st);
    exported_ecc.push_back(sample_value(text, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", kLabels0));
    exported_energy.push_back(sample_value(text, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", kLabels0));
    exported_rx.push_back(sample_value(text, "trainmon_host_network_receive_bytes_total",
                                       R"(Hostname="gpu-node-01",device="eth0")"));
  }
  EXPECT_EQ(exported_ecc, (std::vector<double>{2, 5, 5, 6}));
  EXPECT_EQ(exported_energy, (std::vector<double>{1000, 4000, 4010, 4510}));
  EXPECT_EQ(exported_rx, (std::vector<double>{1'000'000, 1'000'001, 1'000'101, 2'000'004}));
  // A reload onto another driver version: DCGM_FI_DRIVER_VERSION changes, so it is a new series (as
  // dcgm-exporter's), starting from its own reading; the old label set is no longer exported.
  {
    Snapshot s = loaded();
    s.driver.driver_version = Reading<std::string>::of("595.10");
    s.gpus[0].ecc_uncorrected_volatile = Reading<std::uint64_t>::of(1);
    follow_counters(s, st.counters);
    const auto text = render_metrics(s, {}, st);
    std::string labels = kLabels0;
    labels.replace(labels.find("590.48.01"), 9, "595.10");
    EXPECT_EQ(sample_value(text, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", labels), 1);
    EXPECT_TRUE(std::isnan(sample_value(text, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", kLabels0)));
    // ... and it never goes down either
    s.gpus[0].ecc_uncorrected_volatile = Reading<std::uint64_t>::of(0);
    follow_counters(s, st.counters);
    EXPECT_EQ(sample_value(render_metrics(s, {}, st), "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", labels), 1);
  }
  // gauges are left as read
  Snapshot s = loaded();
  follow_counters(s, st.counters);
  EXPECT_TRUE(has_line(render_metrics(s, {}, st), "DCGM_FI_DEV_POWER_USAGE{" + kLabels0 + "} 627.4"));
}

TEST(MetricsText, CounterSeriesThatGoAwayAreForgotten) {
  CounterState c;
  c.forget_after_ticks = 10;
  Snapshot s = loaded();
  follow_counters(s, c);
  const auto with_gpu = c.series.size();
  EXPECT_GT(with_gpu, 0u);
  s.gpus.clear();
  for (int i = 0; i < 200; ++i) follow_counters(s, c);
  EXPECT_LT(c.series.size(), with_gpu);
}

TEST(MetricsText, MigEverySeriesPerGpuInstanceAndUnknownXid) {
  auto s = loaded();
  auto& g = s.gpus[0];
  for (unsigned i = 0; i < 3; ++i) {
    MigDeviceSample m;
    m.index = i;
    // rows 1 and 2: two compute instances of GPU instance 5 (one series for them)
    m.gpu_instance_id = Reading<unsigned>::of(i == 0 ? 1u : 5u);
    m.compute_instance_id = Reading<unsigned>::of(i == 2 ? 1u : 0u);
    m.name = Reading<std::string>::of(i == 0 ? "NVIDIA H200 MIG 3g.71gb" : "NVIDIA H200 MIG 1g.18gb");
    m.memory_used_bytes = Reading<std::uint64_t>::of((i == 0 ? 1000 : 20) * kMiB);
    m.memory_free_bytes = Reading<std::uint64_t>::of((i == 0 ? 70000 : 18000) * kMiB);
    if (i == 0) m.gpm_graphics_util_pct = Reading<double>::of(40.0);
    g.mig_devices.push_back(m);
  }
  ExporterState st;
  st.last_xid = {{0, 100000}};
  auto text = render_metrics(s, {}, st);
  const std::string base =
      R"(gpu="0",UUID="GPU-00000000-0000-0000-0000-000000000000",pci_bus_id="00000000:83:00.0",)"
      R"(device="nvidia0",modelName="NVIDIA H200",)";
  const std::string tail = R"(Hostname="gpu-node-01",DCGM_FI_DRIVER_VERSION="590.48.01"})";
  const std::string gi1 = base + R"(GPU_I_PROFILE="3g.71gb",GPU_I_ID="1",)" + tail;
  const std::string gi5 = base + R"(GPU_I_PROFILE="1g.18gb",GPU_I_ID="5",)" + tail;
  EXPECT_TRUE(has_line(text, "DCGM_FI_DEV_FB_USED{" + gi1 + " 1000")) << text;
  EXPECT_TRUE(has_line(text, "DCGM_FI_DEV_FB_FREE{" + gi5 + " 18000"));
  EXPECT_FALSE(has_line(text, "DCGM_FI_DEV_FB_USED{" + kLabels0 + "} 32362"))
      << "on a MIG GPU the instances replace the whole GPU's series (sums stay right)";
  // dcgm-exporter repeats the device-level fields on each GPU instance, and has no GPU-wide series
  EXPECT_TRUE(has_line(text, "DCGM_FI_DEV_GPU_TEMP{" + gi1 + " 52"));
  EXPECT_TRUE(has_line(text, "DCGM_FI_DEV_GPU_TEMP{" + gi5 + " 52"));
  EXPECT_EQ(text.find("DCGM_FI_DEV_GPU_TEMP{" + kLabels0), std::string::npos);
  EXPECT_TRUE(has_line(text, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{" + gi5 + " 123456789"));
  // GPM: each instance's own (nvmlGpmMigSampleGet); instance 5 has none, so no sample
  EXPECT_TRUE(has_line(text, "DCGM_FI_PROF_GR_ENGINE_ACTIVE{" + gi1 + " 0.4"));
  EXPECT_EQ(text.find("DCGM_FI_PROF_GR_ENGINE_ACTIVE{" + gi5), std::string::npos);
  EXPECT_EQ(text.find("DCGM_FI_PROF_GR_ENGINE_ACTIVE{" + kLabels0), std::string::npos);
  // one series per GPU instance, not per compute instance
  std::size_t n = 0;
  for (auto at = text.find("DCGM_FI_DEV_GPU_TEMP{" + gi5); at != std::string::npos;
       at = text.find("DCGM_FI_DEV_GPU_TEMP{" + gi5, at + 1))
    ++n;
  EXPECT_EQ(n, 1u);
  EXPECT_TRUE(has_line(text, "DCGM_FI_DEV_XID_ERRORS{" + gi5.substr(0, gi5.size() - 1) +
                                 R"(,err_code="100000",err_msg="Unknown Error"} 100000)"));
  EXPECT_TRUE(has_line(text, "trainmon_gpu_up{" + kOwnLabels0 + "} 1")) << "trainmon_* stay per GPU";
}
