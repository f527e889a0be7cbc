// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "trainmon/export/monitor_format.h"
#include "unit/export/export_fixtures.h"

using namespace trainmon;
using namespace trainmon::exp;
using trainmon::testing::gpu_process;
using trainmon::testing::h200_snapshot;

namespace {
MonitorOptions dmon_opts(std::string groups = "puc") {
  MonitorOptions o;
  o.groups = std::move(groups);
  return o;
}
const std::vector<std::size_t> kFirst{0};
}  // namespace

TEST(DmonFormat, HeaderAndIdleRowMatchTheH200Capture) {
  EXPECT_EQ(dmon_header(dmon_opts()),
            "# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa   mclk   pclk \n"
            "# Idx      W      C      C      %      %      %      %      %      %    MHz    MHz \n");
  const Snapshot s = h200_snapshot();
  EXPECT_EQ(dmon_rows(dmon_opts(), s, nullptr, kFirst),
            "    0     77     28     32      0      0      0      0      0      0   3201    345 \n");
}

TEST(DmonFormat, MissingValuesPrintDash) {
  Snapshot s = h200_snapshot();
  s.gpus[0].temperature_memory_c = Reading<unsigned>::fail(ReadStatus::not_supported);
  s.gpus[0].utilization_gpu_pct = Reading<unsigned>::fail(ReadStatus::not_supported);
  EXPECT_EQ(dmon_rows(dmon_opts("pu"), s, nullptr, kFirst),
            "    0     77     28      -      -      0      0      0      0      0 \n");
}

TEST(DmonFormat, WideValuesKeepColumns) {
  Snapshot s = h200_snapshot();
  s.gpus[0].power_draw_mw = Reading<unsigned>::of(1'250'000);
  s.gpus[0].index = 123;
  const std::string line = dmon_rows(dmon_opts("p"), s, nullptr, kFirst);
  EXPECT_EQ(line, "  123   1250     28     32 \n");
}

TEST(DmonFormat, ViolationPercentOverTheInterval) {
  Snapshot prev = h200_snapshot();
  Snapshot cur = h200_snapshot();
  prev.gpus[0].violation_power_ns = Reading<std::uint64_t>::of(0);
  cur.gpus[0].violation_power_ns = Reading<std::uint64_t>::of(500'000'000);
  prev.gpus[0].violation_thermal_ns = Reading<std::uint64_t>::of(0);
  cur.gpus[0].violation_thermal_ns = Reading<std::uint64_t>::of(0);
  cur.monotonic_ns = prev.monotonic_ns + 1'000'000'000;
  EXPECT_EQ(dmon_header(dmon_opts("v")), "# gpu  pviol  tviol \n# Idx      %      % \n");
  EXPECT_EQ(dmon_rows(dmon_opts("v"), cur, &prev, kFirst), "    0     50      0 \n");
  EXPECT_EQ(dmon_rows(dmon_opts("v"), cur, nullptr, kFirst), "    0      -      - \n");
}

TEST(DmonFormat, JsonAndCsv) {
  const Snapshot s = h200_snapshot();
  MonitorOptions j = dmon_opts("pu");
  j.format = MonitorFormat::json;
  EXPECT_EQ(dmon_header(j), "");
  auto obj = nlohmann::json::parse(dmon_rows(j, s, nullptr, kFirst));
  EXPECT_EQ(obj["gpu"], 0);
  EXPECT_EQ(obj["pwr"], 77);
  EXPECT_EQ(obj["sm"], 0);
  MonitorOptions c = dmon_opts("p");
  c.format = MonitorFormat::csv;
  EXPECT_EQ(dmon_header(c), "gpu, pwr [W], gtemp [C], mtemp [C]\n");
  EXPECT_EQ(dmon_rows(c, s, nullptr, kFirst), "0, 77, 28, 32\n");
}

TEST(DmonFormat, GroupsAndDateTimeOptions) {
  EXPECT_EQ(*parse_dmon_groups(""), "puc");
  EXPECT_FALSE(parse_dmon_groups("px").has_value());
  auto dt = parse_date_time("DT", dmon_opts("p"));
  ASSERT_TRUE(dt.has_value());
  EXPECT_FALSE(parse_date_time("X", dmon_opts()).has_value());
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  const std::string header = dmon_header(*dt);
  EXPECT_EQ(header,
            "#Date     Time       gpu    pwr  gtemp  mtemp \n"
            "#YYYYMMDD HH:MM:SS   Idx      W      C      C \n");
  EXPECT_EQ(dmon_rows(*dt, h200_snapshot(), nullptr, kFirst),
            " 20260703 22:10:46     0     77     28     32 \n");
}

TEST(PmonFormat, HeaderAndRowsMatchTheH200LoadCapture) {
  MonitorOptions o;
  o.groups = "u";
  EXPECT_EQ(pmon_header(o),
            "# gpu         pid   type     sm    mem    enc    dec    jpg    ofa    command \n"
            "# Idx           #    C/G      %      %      %      %      %      %    name \n");
  Snapshot s = h200_snapshot();
  s.gpu_processes.push_back(gpu_process(10309, "./gpu_burn", 28234));
  s.gpu_processes.push_back(gpu_process(10291, "/root/tools/memhog", 2566));
  s.gpu_processes[0].sm_util_pct = Reading<unsigned>::of(99);
  s.gpu_processes[0].mem_util_pct = Reading<unsigned>::of(7);
  EXPECT_EQ(pmon_rows(o, s, kFirst),
            "    0      10291     C      -      -      -      -      -      -    memhog         \n"
            "    0      10309     C     99      7      -      -      -      -    gpu_burn       \n");
}

TEST(PmonFormat, IdleGpuAndSevenDigitPid) {
  MonitorOptions o;
  o.groups = "u";
  Snapshot s = h200_snapshot();
  EXPECT_EQ(pmon_rows(o, s, kFirst),
            "    0          -     -      -      -      -      -      -      -    -              \n");
  s.gpu_processes.push_back(gpu_process(4194303, "python", 100));
  s.gpu_processes.back().type = 'G';
  EXPECT_EQ(pmon_rows(o, s, kFirst),
            "    0    4194303     G      -      -      -      -      -      -    python         \n");
}

TEST(PmonFormat, MemoryGroupAndMachineFormats) {
  MonitorOptions o;
  o.groups = *parse_pmon_groups("um");
  EXPECT_FALSE(parse_pmon_groups("x").has_value());
  EXPECT_EQ(pmon_header(o).substr(0, 52), "# gpu         pid   type     fb   ccpm     sm    mem");
  Snapshot s = h200_snapshot();
  s.gpu_processes.push_back(gpu_process(10291, "/root/tools/memhog", 2566));
  EXPECT_EQ(
      pmon_rows(o, s, kFirst),
      "    0      10291     C   2566      -      -      -      -      -      -      -    memhog         \n");
  o.format = MonitorFormat::json;
  auto obj = nlohmann::json::parse(pmon_rows(o, s, kFirst));
  EXPECT_EQ(obj["pid"], 10291);
  EXPECT_EQ(obj["fb"], 2566);
  EXPECT_TRUE(obj["sm"].is_null());
  EXPECT_EQ(obj["command"], "memhog");
  o.format = MonitorFormat::csv;
  EXPECT_EQ(pmon_rows(o, s, kFirst), "0, 10291, C, 2566, -, -, -, -, -, -, -, memhog\n");
}
