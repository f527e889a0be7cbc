// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "trainmon/core/units.h"
#include "trainmon/export/status.h"
#include "trainmon/export/terminal.h"
#include "unit/export/export_fixtures.h"

using namespace trainmon;
using namespace trainmon::exp;
using trainmon::testing::gpu_process;
using trainmon::testing::h200_snapshot;

namespace {
const std::vector<std::size_t> kFirst{0};

Snapshot loaded_snapshot() {
  Snapshot s = h200_snapshot();
  auto& g = s.gpus[0];
  g.temperature_gpu_c = Reading<unsigned>::of(52);
  g.utilization_gpu_pct = Reading<unsigned>::of(100);
  g.memory_used_bytes = Reading<std::uint64_t>::of(32362 * trainmon::testing::kMiB);
  g.power_draw_mw = Reading<unsigned>::of(627400);
  s.gpu_processes.push_back(gpu_process(10291, "/root/tools/memhog", 2566));
  s.gpu_processes.push_back(gpu_process(10309, "./gpu_burn", 28234));
  // What the sampler's join leaves: 10291 matched to its local process, 10309 not visible here.
  s.gpu_processes[0].host = HostVisibility::visible;
  s.gpu_processes[1].host = HostVisibility::not_visible;
  ProcessSample p;
  p.pid = 10291;
  p.user = "alice";
  p.comm = "memhog";
  p.cmdline = "/root/tools/memhog 2560";
  p.rss_bytes = Reading<std::uint64_t>::of(5'000'000);
  p.cpu_pct = Reading<double>::of(12.5);
  s.processes.push_back(p);
  return s;
}
}  // namespace

TEST(StatusText, GpustatLayoutWithoutColour) {
  StatusOptions o;
  o.show_header = false;
  EXPECT_EQ(status_text(loaded_snapshot(), kFirst, o),
            "[0] NVIDIA H200 | 52\xC2\xB0"
            "C, 100 % | 32362 / 143771 MB | alice(2566M) --(28234M)\n");
  o.show_pid = true;
  o.show_cmd = true;
  o.show_power = true;
  o.show_fan = true;
  o.show_enc = o.show_dec = true;
  EXPECT_EQ(status_text(loaded_snapshot(), kFirst, o),
            "[0] NVIDIA H200 | 52\xC2\xB0"
            "C,  ?? %, 100 % (E:   0 %  D:   0 %),  627 / 700 W | 32362 / 143771 MB |"
            " memhog/10291(2566M) gpu_burn/10309(28234M)\n");
}

TEST(StatusText, GpustatOptionalColumns) {
  StatusOptions o;
  o.show_header = false;
  o.show_power = true;
  o.power_draw_only = true;  // -P draw: gpustat 1.1 prints the draw alone, without a unit
  EXPECT_EQ(status_text(loaded_snapshot(), kFirst, o),
            "[0] NVIDIA H200 | 52\xC2\xB0"
            "C, 100 %,  627 | 32362 / 143771 MB | alice(2566M) --(28234M)\n");
  o = {};
  o.show_header = false;
  o.show_dec = true;  // -e dec
  o.no_processes = true;
  EXPECT_EQ(status_text(loaded_snapshot(), kFirst, o),
            "[0] NVIDIA H200 | 52\xC2\xB0"
            "C, 100 % (D:   0 %) | 32362 / 143771 MB\n");
}

TEST(StatusText, GpunameWidthCutsFromTheLeftOrHidesTheName) {
  Snapshot s = loaded_snapshot();
  s.gpu_processes.clear();
  auto info = std::make_shared<GpuStaticInfo>(*s.gpus[0].info);
  info->name = Reading<std::string>::of("NVIDIA GeForce RTX 2080 SUPER");
  s.gpus[0].info = info;
  StatusOptions o;
  o.show_header = false;
  o.gpuname_width = 12;
  EXPECT_EQ(status_text(s, kFirst, o),
            "[0] \xE2\x80\xA6 2080 SUPER | 52\xC2\xB0"
            "C, 100 % | 32362 / 143771 MB |\n");
  o.gpuname_width = 40;  // wider than the name: padded
  EXPECT_EQ(status_text(s, kFirst, o).substr(0, 46), "[0] NVIDIA GeForce RTX 2080 SUPER            |");
  o.gpuname_width = 0;  // no name column
  EXPECT_EQ(status_text(s, kFirst, o),
            "[0]  52\xC2\xB0"
            "C, 100 % | 32362 / 143771 MB |\n");
  o.gpuname_width.reset();  // the longest name
  EXPECT_EQ(status_text(s, kFirst, o).substr(0, 35), "[0] NVIDIA GeForce RTX 2080 SUPER |");
  o.utf8 = false;
  o.gpuname_width = 5;
  EXPECT_EQ(status_text(s, kFirst, o).substr(0, 12), "[0] ~UPER | ");
}

TEST(StatusText, FullCommandLinesUnderTheirGpu) {
  Snapshot s = loaded_snapshot();
  ProcessSample p;
  p.pid = 10309;
  p.user = "bob";
  p.cmdline = "./gpu_burn -d 60";
  p.rss_bytes = Reading<std::uint64_t>::of(123'456'789);
  p.cpu_pct = Reading<double>::of(99.6);
  s.processes.push_back(p);
  s.gpu_processes[1].host = HostVisibility::visible;
  StatusOptions o;
  o.show_header = false;
  o.show_full_cmd = true;
  EXPECT_EQ(status_text(s, kFirst, o),
            "[0] NVIDIA H200 | 52\xC2\xB0"
            "C, 100 % | 32362 / 143771 MB | alice(2566M) bob(28234M)\n"
            " \xE2\x94\x9C\xE2\x94\x80  10291 (  12%, 4882KB): /root/tools/memhog 2560\n"
            " \xE2\x94\x94\xE2\x94\x80  10309 ( 100%,  117MB): ./gpu_burn -d 60\n");
  o.no_processes = true;  // --no-processes wins, as in gpustat
  EXPECT_EQ(status_text(s, kFirst, o),
            "[0] NVIDIA H200 | 52\xC2\xB0"
            "C, 100 % | 32362 / 143771 MB\n");
}

TEST(StatusText, ControlCharactersNeverReachTheTerminal) {
  // A process name from the driver (or argv) may hold ESC sequences: they would drive the terminal.
  Snapshot s = loaded_snapshot();
  s.gpu_processes[1].process_name = Reading<std::string>::of(
      "evil\x1b[2J\tname\xC2\x9B"
      "1m");
  StatusOptions o;
  o.show_header = false;
  o.show_cmd = true;
  const std::string text = status_text(s, kFirst, o);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\t'), std::string::npos) << text;
  EXPECT_EQ(text.find("\xC2\x9B"), std::string::npos) << text;
  EXPECT_NE(text.find("evil?[2J?name?1m"), std::string::npos) << text;
}

TEST(StatusText, AsciiLocaleAndHeader) {
  StatusOptions o;
  o.utf8 = false;
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  const std::string text = status_text(loaded_snapshot(), kFirst, o);
  EXPECT_EQ(text,
            "gpu-node-01     2026-07-03 22:10:46  590.48.01\n"
            "[0] NVIDIA H200 | 52C, 100 % | 32362 / 143771 MB | alice(2566M) --(28234M)\n");
  for (unsigned char c : text) EXPECT_LT(c, 0x80);
}

TEST(StatusText, ColoursOnlyWhenAskedAndByLevel) {
  StatusOptions o;
  o.show_header = false;
  EXPECT_EQ(status_text(loaded_snapshot(), kFirst, o).find('\x1b'), std::string::npos);
  o.color = true;
  const std::string c = status_text(loaded_snapshot(), kFirst, o);
  EXPECT_NE(c.find("\x1b[33m 52"), std::string::npos);      // warm: yellow
  EXPECT_NE(c.find("\x1b[1;32m100 %"), std::string::npos);  // busy: bold green
  EXPECT_EQ(temp_level(28), TempLevel::cool);
  EXPECT_EQ(temp_level(79), TempLevel::warm);
  EXPECT_EQ(temp_level(85), TempLevel::hot);
  Snapshot full = loaded_snapshot();
  full.gpus[0].memory_used_bytes = Reading<std::uint64_t>::of(140000 * trainmon::testing::kMiB);
  EXPECT_NE(status_text(full, kFirst, o).find("\x1b[1;31m140000"), std::string::npos);  // nearly full
}

TEST(StatusText, NarrowTerminalTruncatesNeverWraps) {
  StatusOptions o;
  o.columns = 20;
  o.color = true;
  const std::string text = status_text(loaded_snapshot(), kFirst, o);
  std::size_t lines = 0;
  std::size_t start = 0;
  for (auto nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', start)) {
    EXPECT_LE(display_width(std::string_view(text).substr(start, nl - start)), 20u);
    start = nl + 1;
    ++lines;
  }
  EXPECT_EQ(lines, 2u);
  o.color = false;
  o.show_header = false;
  o.columns = 40;
  EXPECT_EQ(status_text(loaded_snapshot(), kFirst, o),
            "[0] NVID | 52\xC2\xB0"
            "C, 100 % | 32362 / 143771 \n");
}

TEST(StatusText, LostGpuSaysSo) {
  Snapshot s = h200_snapshot();
  s.gpus[0].responsive = Reading<bool>::fail(ReadStatus::gpu_lost);
  StatusOptions o;
  o.show_header = false;
  EXPECT_EQ(status_text(s, kFirst, o), "[0] NVIDIA H200 | GPU gpu_lost |\n");
}

TEST(StatusJson, GpustatKeysAndUnits) {
  const auto doc = nlohmann::json::parse(status_json(loaded_snapshot(), kFirst, false));
  EXPECT_EQ(doc["schema_version"], kStatusSchemaVersion);
  EXPECT_EQ(doc["hostname"], "gpu-node-01");
  EXPECT_EQ(doc["driver_version"], "590.48.01");
  EXPECT_TRUE(doc["query_time"].is_string());
  const auto& g = doc["gpus"][0];
  EXPECT_EQ(g["index"], 0);
  EXPECT_EQ(g["name"], "NVIDIA H200");
  EXPECT_EQ(g["uuid"], "GPU-00000000-0000-0000-0000-000000000000");
  EXPECT_EQ(g["temperature.gpu"], 52);
  EXPECT_TRUE(g["fan.speed"].is_null());
  EXPECT_EQ(g["na_reasons"]["fan.speed"], "not_supported");
  EXPECT_EQ(g["utilization.gpu"], 100);
  EXPECT_EQ(g["utilization.enc"], 0);
  EXPECT_EQ(g["utilization.dec"], 0);
  EXPECT_EQ(g["power.draw"], 627);
  EXPECT_EQ(g["enforced.power.limit"], 700);
  EXPECT_EQ(g["memory.used"], 32362);
  EXPECT_EQ(g["memory.total"], 143771);
  EXPECT_EQ(g["clocks_event_reasons.active_names"], nlohmann::json::array({"gpu_idle"}));
  const auto& p = g["processes"][0];
  EXPECT_EQ(p["username"], "alice");
  EXPECT_EQ(p["command"], "memhog");
  EXPECT_EQ(p["full_command"], nlohmann::json::array({"/root/tools/memhog", "2560"}));
  EXPECT_EQ(p["gpu_memory_usage"], 2566);
  EXPECT_EQ(p["cpu_percent"], 12.5);
  EXPECT_EQ(p["cpu_memory_usage"], 5'000'000);
  EXPECT_EQ(p["pid"], 10291);
  const auto& q = g["processes"][1];
  EXPECT_TRUE(q["username"].is_null());
  EXPECT_EQ(q["na_reasons"]["username"], "not_visible");
  EXPECT_EQ(q["command"], "gpu_burn");
  EXPECT_FALSE(doc.contains("host_processes"));
  const auto all = nlohmann::json::parse(status_json(loaded_snapshot(), kFirst, true));
  EXPECT_EQ(all["host_processes"][0]["pid"], 10291);
}

TEST(Terminal, ColourDecision) {
  TerminalInfo tty;
  tty.is_tty = true;
  EXPECT_TRUE(use_color(ColorMode::automatic, tty));
  TerminalInfo pipe;
  EXPECT_FALSE(use_color(ColorMode::automatic, pipe));
  EXPECT_TRUE(use_color(ColorMode::always, pipe));
  tty.no_color_env = true;
  EXPECT_FALSE(use_color(ColorMode::automatic, tty));
  EXPECT_TRUE(use_color(ColorMode::always, tty));
  EXPECT_FALSE(use_color(ColorMode::never, TerminalInfo{true, 80, true, false, false}));
}

TEST(Terminal, LocaleAndColumns) {
  EXPECT_TRUE(locale_is_utf8("en_US.UTF-8"));
  EXPECT_TRUE(locale_is_utf8("C.utf8"));
  EXPECT_FALSE(locale_is_utf8("C"));
  EXPECT_FALSE(locale_is_utf8("POSIX"));
  EXPECT_EQ(parse_columns("132"), 132u);
  EXPECT_FALSE(parse_columns("abc").has_value());
  EXPECT_FALSE(parse_columns("0").has_value());
  EXPECT_FALSE(parse_columns(nullptr).has_value());
}

// 100+ GPUs (the fake driver holds 64, so this size is checked here): every GPU keeps its own whole
// line, the three-digit index included, and values far past today's (1 PB, 1500 W) print whole.
TEST(StatusText, HundredsOfGpusAndHugeValues) {
  Snapshot s = loaded_snapshot();
  s.gpu_processes.clear();
  const GpuSample base = s.gpus[0];
  std::vector<std::size_t> order;
  s.gpus.clear();
  for (unsigned i = 0; i < 128; ++i) {
    GpuSample g = base;
    g.index = i;
    s.gpus.push_back(g);
    order.push_back(i);
  }
  s.gpus[123].memory_total_bytes = Reading<std::uint64_t>::of(1ull << 50);
  s.gpus[123].memory_used_bytes = Reading<std::uint64_t>::of((1ull << 50) - (1ull << 30));
  s.gpus[123].power_draw_mw = Reading<unsigned>::of(1'512'000);
  s.gpu_processes.push_back(gpu_process(4194303, "python", 1024));
  s.gpu_processes.back().gpu_index = 123;
  StatusOptions o;
  o.show_header = false;
  o.show_power = true;
  o.show_pid = true;
  const std::string text = status_text(s, order, o);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 128);
  EXPECT_NE(text.find("[127] NVIDIA H200 | 52\xC2\xB0"
                      "C, 100 %,  627 / 700 W | 32362 / 143771 MB |\n"),
            std::string::npos);
  EXPECT_NE(text.find("[123] NVIDIA H200 | 52\xC2\xB0"
                      "C, 100 %,  1512 / 700 W | 1073740800 / 1073741824 MB | --/4194303(1024M)\n"),
            std::string::npos);
}

TEST(StatusAttribution, JobInTextOnlyWhenKnownAndEveryFieldInJson) {
  Snapshot s = loaded_snapshot();
  StatusOptions o;
  o.show_header = false;
  const std::string plain = status_text(s, kFirst, o);
  ProcessAttribution& a = s.processes[0].attribution;
  a.slurm_job_id = "42\n\x1b[2J";  // hostile: never raw on a terminal
  a.slurm_step = "0";
  a.slurm_partition = "gpu \"a\"\nb";
  a.rank = 3;
  a.sources = kAttributionEnviron;
  const std::string text = status_text(s, kFirst, o);
  EXPECT_NE(text.find("alice[slurm:42??[2J](2566M)"), std::string::npos) << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  o.show_full_cmd = true;
  EXPECT_NE(status_text(s, kFirst, o).find("): [slurm:42??[2J.0] /root/tools/memhog"), std::string::npos);
  const auto doc = nlohmann::json::parse(status_json(s, kFirst, false, -1));
  const auto& j = doc["gpus"][0]["processes"][0]["attribution"];
  EXPECT_EQ(j["job"], "slurm:42\n\x1b[2J");
  EXPECT_EQ(j["slurm_partition"], "gpu \"a\"\nb");
  EXPECT_EQ(j["rank"], 3);
  EXPECT_EQ(j["sources"], nlohmann::json::array({"environ"}));
  EXPECT_FALSE(j.contains("pod_uid"));
  EXPECT_FALSE(doc["gpus"][0]["processes"][1].contains("attribution"));  // not visible: no host process

  // Known only by the container the monitor itself runs in: not shown as a job (JSON keeps the data).
  Snapshot c = loaded_snapshot();
  c.host.own_container_id = std::string(64, 'a');
  c.processes[0].attribution.container_id = std::string(64, 'a');
  c.processes[0].attribution.sources = kAttributionCgroup;
  o.show_full_cmd = false;
  EXPECT_EQ(status_text(c, kFirst, o), plain);
  c.processes[0].attribution.container_id = std::string(64, 'b');
  EXPECT_NE(status_text(c, kFirst, o).find("alice[container:bbbbbbbbbbbb](2566M)"), std::string::npos);
}
