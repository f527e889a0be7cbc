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
  EXPECT_EQ(dmon_header(dmon_opts("v")), "# gpu  pviol  tviol \n# Idx      %   bool \n");
  EXPECT_EQ(dmon_rows(dmon_opts("v"), cur, &prev, kFirst), "    0     50      0 \n");
  cur.gpus[0].violation_thermal_ns = Reading<std::uint64_t>::of(1000);
  EXPECT_EQ(dmon_rows(dmon_opts("v"), cur, &prev, kFirst), "    0     50      1 \n");
  // First sample: nvidia-smi prints 0 for readable counters; unreadable ones print '-'.
  EXPECT_EQ(dmon_rows(dmon_opts("v"), cur, nullptr, kFirst), "    0      0      0 \n");
  cur.gpus[0].violation_power_ns = Reading<std::uint64_t>::fail(ReadStatus::not_supported);
  EXPECT_EQ(dmon_rows(dmon_opts("v"), cur, &prev, kFirst), "    0      -      1 \n");
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
  // Published nvidia-smi 590 `dmon -o DT` / `-o T` lines (12-wide date and time, 4-wide index).
  EXPECT_EQ(dmon_header(*dt),
            "#Date        Time         gpu    pwr  gtemp  mtemp \n"
            "#YYYYMMDD    HH:MM:SS     Idx      W      C      C \n");
  EXPECT_EQ(dmon_rows(*dt, h200_snapshot(), nullptr, kFirst),
            " 20260703    22:10:46       0     77     28     32 \n");
  auto t = parse_date_time("T", dmon_opts("p"));
  EXPECT_EQ(dmon_header(*t),
            "#Time         gpu    pwr  gtemp  mtemp \n"
            "#HH:MM:SS     Idx      W      C      C \n");
  EXPECT_EQ(dmon_rows(*t, h200_snapshot(), nullptr, kFirst), " 22:10:46       0     77     28     32 \n");
  auto d = parse_date_time("D", dmon_opts("p"));
  EXPECT_EQ(dmon_header(*d).substr(0, 20), "#Date         gpu   ");
  EXPECT_EQ(dmon_rows(*d, h200_snapshot(), nullptr, kFirst), " 20260703       0     77     28     32 \n");
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
  s.gpu_processes[0].enc_util_pct = Reading<unsigned>::of(0);  // a sampled zero prints 0 (no sample: '-')
  s.gpu_processes[0].dec_util_pct = Reading<unsigned>::of(0);
  EXPECT_EQ(pmon_rows(o, s, kFirst),
            "    0      10291     C      -      -      -      -      -      -    memhog         \n"
            "    0      10309     C     99      7      0      0      -      -    gpu_burn       \n");
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
  // Published nvidia-smi 590 `pmon -s um` header: the groups in the order given.
  EXPECT_EQ(pmon_header(o),
            "# gpu         pid   type     sm    mem    enc    dec    jpg    ofa     fb   ccpm    command \n"
            "# Idx           #    C/G      %      %      %      %      %      %     MB     MB    name \n");
  Snapshot s = h200_snapshot();
  s.gpu_processes.push_back(gpu_process(10291, "/root/tools/memhog", 2566));
  EXPECT_EQ(
      pmon_rows(o, s, kFirst),
      "    0      10291     C      -      -      -      -      -      -   2566      -    memhog         \n");
  o.format = MonitorFormat::json;
  auto obj = nlohmann::json::parse(pmon_rows(o, s, kFirst));
  EXPECT_EQ(obj["pid"], 10291);
  EXPECT_EQ(obj["fb"], 2566);
  EXPECT_TRUE(obj["sm"].is_null());
  EXPECT_EQ(obj["command"], "memhog");
  o.format = MonitorFormat::csv;
  EXPECT_EQ(pmon_rows(o, s, kFirst), "0, 10291, C, -, -, -, -, -, -, 2566, -, memhog\n");
}

// Header and units lines of every dmon metric group, as nvidia-smi 590 prints them (published
// `nvidia-smi dmon --select=pucvmet` output); groups in the order -s gives them.
TEST(DmonFormat, EveryGroupsHeaderAndUnits) {
  struct Case {
    const char* groups;
    const char* names;
    const char* units;
  };
  const Case cases[] = {
      {"p", "# gpu    pwr  gtemp  mtemp \n", "# Idx      W      C      C \n"},
      {"u", "# gpu     sm    mem    enc    dec    jpg    ofa \n",
       "# Idx      %      %      %      %      %      % \n"},
      {"c", "# gpu   mclk   pclk \n", "# Idx    MHz    MHz \n"},
      {"v", "# gpu  pviol  tviol \n", "# Idx      %   bool \n"},
      {"m", "# gpu     fb   bar1   ccpm \n", "# Idx     MB     MB     MB \n"},
      {"e", "# gpu  sbecc  dbecc    pci \n", "# Idx   errs   errs   errs \n"},
      {"t", "# gpu  rxpci  txpci \n", "# Idx   MB/s   MB/s \n"},
      {"ct", "# gpu   mclk   pclk  rxpci  txpci \n", "# Idx    MHz    MHz   MB/s   MB/s \n"},
      {"tc", "# gpu  rxpci  txpci   mclk   pclk \n", "# Idx   MB/s   MB/s    MHz    MHz \n"},
      {"pp", "# gpu    pwr  gtemp  mtemp \n", "# Idx      W      C      C \n"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.groups);
    ASSERT_TRUE(parse_dmon_groups(c.groups).has_value());
    EXPECT_EQ(dmon_header(dmon_opts(c.groups)), std::string(c.names) + c.units);
  }
  const std::string all = dmon_header(dmon_opts("pucvmet"));
  EXPECT_EQ(all,
            "# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa   mclk   pclk  pviol  tviol"
            "     fb   bar1   ccpm  sbecc  dbecc    pci  rxpci  txpci \n"
            "# Idx      W      C      C      %      %      %      %      %      %    MHz    MHz      %   bool"
            "     MB     MB     MB   errs   errs   errs   MB/s   MB/s \n");
  // Every row has the header's width, whatever is missing.
  Snapshot s = h200_snapshot();
  const std::string row = dmon_rows(dmon_opts("pucvmet"), s, nullptr, kFirst);
  EXPECT_EQ(row.size(), all.find('\n') + 1);
  MonitorOptions dt = *parse_date_time("DT", dmon_opts("pucvmet"));
  EXPECT_EQ(dmon_header(dt).substr(0, 50), "#Date        Time         gpu    pwr  gtemp  mtemp");
}

// JSON rows' `time` is RFC 3339 with the zone's offset (a pmon row read on another machine is one
// instant): the capture's 22:10:46.109 UTC in UTC and eight hours east ("CST-8": POSIX TZ, no tzdata).
TEST(PmonFormat, JsonTimeCarriesTheOffset) {
  Snapshot s = h200_snapshot();
  s.gpu_processes.push_back(gpu_process(10291, "/root/tools/memhog", 2566));
  MonitorOptions o;
  o.groups = *parse_pmon_groups("m");
  o.format = MonitorFormat::json;
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  EXPECT_EQ(nlohmann::json::parse(pmon_rows(o, s, kFirst))["time"], "2026-07-03T22:10:46.109000+00:00");
  ::setenv("TZ", "CST-8", 1);
  ::tzset();
  EXPECT_EQ(nlohmann::json::parse(pmon_rows(o, s, kFirst))["time"], "2026-07-04T06:10:46.109000+08:00");
  MonitorOptions d = dmon_opts("p");
  d.format = MonitorFormat::json;
  EXPECT_EQ(nlohmann::json::parse(dmon_rows(d, s, nullptr, kFirst))["time"],
            "2026-07-04T06:10:46.109000+08:00");
  ::setenv("TZ", "UTC", 1);
  ::tzset();
}

TEST(PmonFormat, GroupsDateTimeAndBothLists) {
  MonitorOptions o = *parse_date_time("DT", MonitorOptions{});
  o.groups = "um";
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  // Published nvidia-smi 590 `pmon --select=um --options=DT` header lines.
  EXPECT_EQ(pmon_header(o),
            "#Date        Time         gpu         pid   type     sm    mem    enc    dec    jpg    ofa     "
            "fb   ccpm"
            "    command \n"
            "#YYYYMMDD    HH:MM:SS     Idx           #    C/G      %      %      %      %      %      %     "
            "MB     MB"
            "    name \n");
  Snapshot s = h200_snapshot();
  EXPECT_EQ(
      pmon_rows(o, s, kFirst),
      " 20260703    22:10:46       0          -     -      -      -      -      -      -      -      -      -"
      "    -              \n");
  MonitorOptions m;
  m.groups = "m";
  EXPECT_EQ(pmon_header(m),
            "# gpu         pid   type     fb   ccpm    command \n# Idx           #    C/G     MB     MB    "
            "name \n");
  s.gpu_processes.push_back(gpu_process(3082096, "/usr/bin/gnome-remote-desktop-daemon", 0));
  s.gpu_processes.back().compute_and_graphics = true;
  // C+G type, a 0 MiB process prints 0 (not '-'), the name is cut to 15 columns.
  EXPECT_EQ(pmon_rows(m, s, kFirst), "    0    3082096   C+G      0      -    gnome-remote-de\n");
}

// GPU index 123 (the fake driver holds 64 GPUs, so 100+ is checked here) and a 7-digit pid keep
// pmon's columns; a 1 PB frame buffer still leaves a space between cells.
TEST(PmonFormat, HundredPlusGpusAndHugeValues) {
  MonitorOptions o;
  o.groups = "um";
  Snapshot s = h200_snapshot();
  s.gpus[0].index = 123;
  s.gpu_processes.push_back(gpu_process(4194303, "python", (1ull << 30) - 1024));
  s.gpu_processes.back().gpu_index = 123;
  s.gpu_processes.back().sm_util_pct = Reading<unsigned>::of(100);
  EXPECT_EQ(pmon_rows(o, s, kFirst),
            "  123    4194303     C    100      -      -      -      -      - 1073740800      -    python   "
            "      \n");
}
