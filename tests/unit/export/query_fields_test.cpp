// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <set>
#include <string_view>

#include <fmt/format.h>

#include "trainmon/core/units.h"
#include "trainmon/export/query_fields.h"
#include "unit/export/export_fixtures.h"

using namespace trainmon;
using namespace trainmon::exp;
using trainmon::testing::h200_snapshot;

namespace {
std::string row(const std::string& fields, const Snapshot& s, CsvOptions opt = {}) {
  auto q = parse_gpu_query(fields);
  EXPECT_TRUE(q.has_value()) << q.error();
  return csv_gpu_row(*q, opt, s, s.gpus.front());
}
}  // namespace

TEST(QueryFields, EverySupportedFieldMatchesTheH200IdleCapture) {
  const auto cap = trainmon::testing::capture_query_gpu(
      trainmon::testing::read_capture("linux-x86_64__nvidia-h200__590.48.01.txt"), "idle");
  ASSERT_FALSE(cap.empty()) << "capture not found";
  const Snapshot s = h200_snapshot();
  const CsvOptions opt;
  std::size_t compared = 0;
  for (const auto& f : gpu_fields()) {
    if (f.name == "timestamp") continue;
    GpuQuery q;
    q.fields.push_back(&f);
    const std::string header = csv_header(q, opt);
    auto it = cap.find(header);
    if (it == cap.end()) continue;  // a newer driver's field (kmd_version: 595+)
    // Read only with BackendOptions::collect_extended, which the fixture leaves unset; the e2e
    // golden test compares them against every capture through the fake driver.
    static const std::set<std::string_view> kExtended = {"display_attached",
                                                         "accounting.mode",
                                                         "accounting.buffer_size",
                                                         "driver_model.current",
                                                         "driver_model.pending",
                                                         "inforom.img",
                                                         "inforom.oem",
                                                         "inforom.ecc",
                                                         "inforom.pwr",
                                                         "inforom.checksum_validation",
                                                         "encoder.stats.sessionCount",
                                                         "encoder.stats.averageFps",
                                                         "encoder.stats.averageLatency",
                                                         "temperature.gpu.tlimit",
                                                         "power.draw.average",
                                                         "clocks_event_reasons_counters.sync_boost",
                                                         "fabric.state",
                                                         "fabric.status",
                                                         "fabric.cliqueId",
                                                         "fabric.clusterUuid"};
    // ... and so are the ECC counts by location and the SRAM split (ecc.errors.*, but the totals)
    const bool by_location = f.name.starts_with("ecc.errors.") && !f.name.ends_with(".total");
    if (kExtended.contains(f.name) || by_location) continue;
    EXPECT_EQ(csv_gpu_row(q, opt, s, s.gpus.front()), it->second) << f.name;
    ++compared;
  }
  EXPECT_GE(compared, 75u);
}

TEST(QueryFields, NoSourceFieldsKeepNvidiaSmiHeadersAndPrintNA) {
  auto q = parse_gpu_query("inforom.img,module.power.draw.average,fabric.state");
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(csv_header(*q, {}), "inforom.img, module.power.draw.average [W], fabric.state");
  const Snapshot s = h200_snapshot();
  EXPECT_EQ(csv_gpu_row(*q, {}, s, s.gpus.front()), "[N/A], [N/A], N/A");
}

TEST(QueryCsv, UnitsNoUnitsAndNoHeader) {
  const Snapshot s = h200_snapshot();
  EXPECT_EQ(row("memory.total,power.draw,utilization.gpu,clocks.sm", s), "143771 MiB, 77.71 W, 0 %, 345 MHz");
  CsvOptions nounits;
  nounits.units = false;
  EXPECT_EQ(row("memory.total,power.draw,utilization.gpu,clocks.sm,fan.speed", s, nounits),
            "143771, 77.71, 0, 345, [N/A]");
  auto q = parse_gpu_query("memory.used,temperature.gpu");
  ASSERT_TRUE(q.has_value());
  const std::vector<std::size_t> all{0};
  EXPECT_EQ(csv_query_gpu(*q, {}, s, all, true), "memory.used [MiB], temperature.gpu\n0 MiB, 28\n");
  EXPECT_EQ(csv_query_gpu(*q, nounits, s, all, true), "memory.used, temperature.gpu\n0, 28\n");
  CsvOptions noheader;
  noheader.header = false;
  EXPECT_EQ(csv_query_gpu(*q, noheader, s, all, true), "0 MiB, 28\n");
}

TEST(QueryCsv, AliasesPrintTheCanonicalHeader) {
  auto q = parse_gpu_query("gpu_name, gpu_bus_id,clocks_throttle_reasons.active,gpu.power.current_limit");
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(csv_header(*q, {}), "name, pci.bus_id, clocks_event_reasons.active, enforced.power.limit [W]");
  const Snapshot s = h200_snapshot();
  EXPECT_EQ(csv_gpu_row(*q, {}, s, s.gpus.front()),
            "NVIDIA H200, 00000000:83:00.0, 0x0000000000000001, 700.00 W");
}

TEST(QueryCsv, UnknownFieldIsNvidiaSmisMessage) {
  auto q = parse_gpu_query("memory.used,foo");
  ASSERT_FALSE(q.has_value());
  EXPECT_EQ(q.error(), "Field \"foo\" is not a valid field to query.");
  auto a = parse_app_query("pid,bar");
  ASSERT_FALSE(a.has_value());
  EXPECT_EQ(a.error(), "Field \"bar\" is not a valid field to query.");
}

TEST(QueryCsv, FormatOptions) {
  auto f = parse_csv_format("csv,noheader,nounits");
  ASSERT_TRUE(f.has_value());
  EXPECT_FALSE(f->header);
  EXPECT_FALSE(f->units);
  EXPECT_FALSE(parse_csv_format("xml").has_value());
  EXPECT_FALSE(parse_csv_format("noheader").has_value());
}

TEST(QueryCsv, ComputeAppsMatchTheH200LoadCapture) {
  Snapshot s = h200_snapshot();
  s.gpu_processes.push_back(trainmon::testing::gpu_process(10291, "/root/tools/memhog", 2566));
  s.gpu_processes.push_back(trainmon::testing::gpu_process(10293, "/root/tools/memhog", 1542));
  s.gpu_processes.push_back(trainmon::testing::gpu_process(10309, "./gpu_burn", 28234));
  auto graphics = trainmon::testing::gpu_process(1696, "gnome-shell", 10);
  graphics.type = 'G';
  s.gpu_processes.push_back(graphics);
  auto q = parse_app_query("gpu_name,gpu_bus_id,gpu_serial,gpu_uuid,pid,process_name,used_gpu_memory");
  ASSERT_TRUE(q.has_value());
  const std::vector<std::size_t> all{0};
  EXPECT_EQ(csv_query_apps(*q, {}, s, all, true),
            "gpu_name, gpu_bus_id, gpu_serial, gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n"
            "NVIDIA H200, 00000000:83:00.0, 0000000000000, GPU-00000000-0000-0000-0000-000000000000, 10291, "
            "/root/tools/memhog, 2566 MiB\n"
            "NVIDIA H200, 00000000:83:00.0, 0000000000000, GPU-00000000-0000-0000-0000-000000000000, 10293, "
            "/root/tools/memhog, 1542 MiB\n"
            "NVIDIA H200, 00000000:83:00.0, 0000000000000, GPU-00000000-0000-0000-0000-000000000000, 10309, "
            "./gpu_burn, 28234 MiB\n");
  auto alias = parse_app_query("name,used_memory");
  ASSERT_TRUE(alias.has_value());
  EXPECT_EQ(csv_header(*alias, {}), "process_name, used_gpu_memory [MiB]");
}

TEST(QueryCsv, FailureStatusesPrintNvidiaSmiWords) {
  Snapshot s = h200_snapshot();
  s.gpus[0].power_draw_mw = Reading<unsigned>::fail(ReadStatus::no_permission);
  s.gpus[0].utilization_gpu_pct = Reading<unsigned>::fail(ReadStatus::gpu_lost);
  s.gpus[0].clocks_sm_mhz = Reading<unsigned>::fail(ReadStatus::timeout);
  EXPECT_EQ(row("power.draw,utilization.gpu,clocks.sm", s),
            "[Insufficient Permissions], [GPU is lost], [Unknown Error]");
}

TEST(QueryCsv, HugeValuesFit) {
  Snapshot s = h200_snapshot();
  s.gpus[0].memory_total_bytes = Reading<std::uint64_t>::of(1ull << 50);  // 1 PiB
  s.gpus[0].power_draw_mw = Reading<unsigned>::of(1234567);
  s.gpus[0].index = 127;
  EXPECT_EQ(row("memory.total,power.draw,index", s), "1073741824 MiB, 1234.57 W, 127");
}

namespace {
/// Two H200s: GPU 0 at bus 83:00.0, GPU 1 with UUID GPU-11111111-... at bus C4:00.0.
Snapshot two_h200s() {
  Snapshot s = h200_snapshot();
  GpuSample second = trainmon::testing::h200_idle();
  auto info = std::make_shared<GpuStaticInfo>(*second.info);
  info->uuid = Reading<std::string>::of("GPU-11111111-2222-3333-4444-555555555555");
  info->pci_bus_id = Reading<std::string>::of("00000000:C4:00.0");
  second.info = info;
  second.index = 1;
  s.gpus.push_back(second);
  return s;
}
}  // namespace

TEST(QuerySelect, ByIndexUuidAndBusId) {
  const Snapshot s = two_h200s();
  EXPECT_EQ(*select_gpus(s, ""), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(*select_gpus(s, "1,0"), (std::vector<std::size_t>{1, 0}));
  EXPECT_EQ(*select_gpus(s, "GPU-1111"), (std::vector<std::size_t>{1}));
  EXPECT_EQ(*select_gpus(s, "c4:00.0"), (std::vector<std::size_t>{1}));
  EXPECT_EQ(*select_gpus(s, "00000000:83:00.0"), (std::vector<std::size_t>{0}));
  EXPECT_FALSE(select_gpus(s, "7").has_value());
  EXPECT_FALSE(select_gpus(s, "GPU-").has_value());  // ambiguous prefix
}

TEST(QuerySelect, SameGpuNamedTwiceIsListedOnceInFirstOrder) {
  const Snapshot s = two_h200s();
  EXPECT_EQ(*select_gpus(s, "0,0"), (std::vector<std::size_t>{0}));
  EXPECT_EQ(*select_gpus(s, "1,0,1,0"), (std::vector<std::size_t>{1, 0}));
  EXPECT_EQ(*select_gpus(s, "1,GPU-1111,c4:00.0,0"), (std::vector<std::size_t>{1, 0}));
  EXPECT_EQ(*select_gpus(s, "00000000:83:00.0,0"), (std::vector<std::size_t>{0}));
}

TEST(QueryHelp, ListsFieldsAndAliases) {
  const std::string help = help_query_gpu();
  EXPECT_NE(help.find("\"clocks_event_reasons.active\" or \"clocks_throttle_reasons.active\""),
            std::string::npos);
  EXPECT_NE(help.find("\"memory.used\"  [MiB]"), std::string::npos);
  EXPECT_NE(help.find("\"inforom.img\" or \"inforom.image\""), std::string::npos);
  EXPECT_NE(help_query_compute_apps().find("\"used_gpu_memory\" or \"used_memory\""), std::string::npos);
}

TEST(Units, Conversions) {
  EXPECT_EQ(mw_to_watts_2dp(631950), "631.95");
  EXPECT_EQ(mw_to_watts_2dp(77714), "77.71");
  EXPECT_EQ(mw_to_watts_2dp(700000), "700.00");
  EXPECT_EQ(mw_to_watts_2dp(1000000), "1000.00");
  EXPECT_EQ(bytes_to_mib(143771 * kMiB + kMiB - 1), 143771u);
  EXPECT_EQ(nvidia_smi_na_text(ReadStatus::not_supported), "[N/A]");
  EXPECT_EQ(path_basename("/root/tools/memhog"), "memhog");
  EXPECT_EQ(path_basename("./gpu_burn"), "gpu_burn");
  EXPECT_EQ(path_basename("python"), "python");
}

TEST(Units, TimestampFormats) {
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  EXPECT_EQ(nvidia_smi_timestamp(1'783'116'646'109'000'000), "2026/07/03 22:10:46.109");
  EXPECT_EQ(iso_local_time(1'783'116'646'109'000'000), "2026-07-03T22:10:46.109000");
}

TEST(Units, AsciiAndDisplayWidth) {
  EXPECT_EQ(to_ascii("52\xC2\xB0"
                     "C caf\xC3\xA9"),
            "52?C caf?");
  EXPECT_EQ(degree_sign(false), "");
  EXPECT_EQ(display_width("\x1b[1;31m52\xC2\xB0"
                          "C\x1b[0m"),
            4u);
  EXPECT_EQ(truncate_display("abcdef", 3), "abc");
  EXPECT_EQ(truncate_display("\x1b[31mabcdef\x1b[0m", 2), "\x1b[31mab\x1b[0m");
  EXPECT_EQ(truncate_display("\xC2\xB0\xC2\xB0\xC2\xB0", 2), "\xC2\xB0\xC2\xB0");
}
