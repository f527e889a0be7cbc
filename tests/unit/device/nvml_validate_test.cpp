// SPDX-License-Identifier: Apache-2.0
// The pure value checks (nvml_validate): sentinels, impossible values, strings, process layouts.
#include "device/nvml/nvml_validate.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "device/nvml/nvml_api.h"
#include "trainmon/diagnose/series.h"

namespace trainmon::nvml {
namespace {

TEST(NvmlValidate, AllOnesSentinelsAreNotAvailable) {
  EXPECT_EQ(checked_u32(0xFFFFFFFFu).status, ReadStatus::not_available);
  EXPECT_EQ(checked_u64(~0ull).status, ReadStatus::not_available);
  EXPECT_EQ(checked_percent(0xFFFFFFFFu).status, ReadStatus::not_available);
  EXPECT_EQ(checked_temperature(0xFFFFFFFFu).status, ReadStatus::not_available);
  EXPECT_EQ(checked_power(0xFFFFFFFFu).status, ReadStatus::not_available);
  EXPECT_EQ(checked_power_limit(0xFFFFFFFFu).status, ReadStatus::not_available);
  EXPECT_EQ(checked_counter(~0ull, std::nullopt).status, ReadStatus::not_available);
  EXPECT_EQ(checked_u32(0xFFFFFFFFu).value, 0u);  // never the huge number
  EXPECT_EQ(checked_u32(1410).value, 1410u);
  EXPECT_EQ(checked_u64(42).value, 42u);
}

TEST(NvmlValidate, PercentAbove100IsInvalid) {
  EXPECT_EQ(checked_percent(100).value, 100u);
  EXPECT_TRUE(checked_percent(0).ok());
  EXPECT_EQ(checked_percent(101).status, ReadStatus::invalid_value);
  EXPECT_EQ(checked_percent(250).status, ReadStatus::invalid_value);
  EXPECT_EQ(checked_percent(250).value, 0u);
}

TEST(NvmlValidate, TemperatureAndPowerPlausibility) {
  EXPECT_EQ(checked_temperature(64).value, 64u);
  EXPECT_EQ(checked_temperature(250).status, ReadStatus::invalid_value);
  // GPUs shut down at 90-105 °C: 150 °C and above cannot be a running card's reading, the same bound
  // as the diagnosis applies to stored values (one rule in every view)
  EXPECT_EQ(static_cast<float>(kGpuTemperatureImpossibleC), diagnose::kImpossibleGpuTempC);
  EXPECT_EQ(checked_temperature(105).value, 105u);
  EXPECT_EQ(checked_temperature(149).value, 149u);
  EXPECT_EQ(checked_temperature(150).status, ReadStatus::invalid_value);
  EXPECT_EQ(checked_temperature(180).status, ReadStatus::invalid_value);
  EXPECT_EQ(checked_power(560000).value, 560000u);
  EXPECT_EQ(checked_power(20'000'000).status, ReadStatus::invalid_value);
}

TEST(NvmlValidate, PowerLimitOfZeroIsInvalid) {
  EXPECT_EQ(checked_power_limit(0).status, ReadStatus::invalid_value);
  EXPECT_EQ(checked_power_limit(700000).value, 700000u);
}

TEST(NvmlValidate, PstateUnknownIsNotAvailable) {
  EXPECT_EQ(checked_pstate(0).value, 0u);
  EXPECT_EQ(checked_pstate(15).value, 15u);
  EXPECT_EQ(checked_pstate(32).status, ReadStatus::not_available);  // NVML_PSTATE_UNKNOWN
}

TEST(NvmlValidate, CounterGoingBackwardsIsInvalid) {
  EXPECT_EQ(checked_counter(100, std::nullopt).value, 100u);
  EXPECT_EQ(checked_counter(100, 100).value, 100u);
  EXPECT_EQ(checked_counter(101, 100).value, 101u);
  EXPECT_EQ(checked_counter(99, 100).status, ReadStatus::invalid_value);
}

TEST(NvmlValidate, MemoryUsedAboveTotalIsInvalid) {
  auto m = checked_memory(1000, 100, 1200, 0);
  EXPECT_EQ(m.total.value, 1000u);
  EXPECT_EQ(m.used.status, ReadStatus::invalid_value);
  EXPECT_EQ(m.reserved.value, 100u);
  EXPECT_EQ(m.free.value, 0u);

  auto ok = checked_memory(1000, 50, 600, 350);
  EXPECT_EQ(ok.used.value, 600u);
  EXPECT_EQ(ok.free.value, 350u);

  auto v1 = checked_memory(1000, std::nullopt, 600, 400);
  EXPECT_EQ(v1.reserved.status, ReadStatus::not_supported);
  EXPECT_EQ(v1.used.value, 600u);

  auto free_wrapped = checked_memory(1000, 0, 10, ~0ull - 5);  // free underflowed in the driver
  EXPECT_EQ(free_wrapped.free.status, ReadStatus::invalid_value);

  // each part fits, their sum does not: neither is believable
  auto sum = checked_memory(1000, 400, 700, 0);
  EXPECT_EQ(sum.used.status, ReadStatus::invalid_value);
  EXPECT_EQ(sum.reserved.status, ReadStatus::invalid_value);
  auto full = checked_memory(1000, 300, 700, 0);  // exactly full is possible
  EXPECT_EQ(full.used.value, 700u);
  EXPECT_EQ(full.reserved.value, 300u);
}

TEST(NvmlValidate, MemoryTotalZeroOrSentinelIsNotAvailable) {
  EXPECT_EQ(checked_memory(0, 0, 0, 0).total.status, ReadStatus::not_available);
  auto m = checked_memory(~0ull, std::nullopt, ~0ull, 5);
  EXPECT_EQ(m.total.status, ReadStatus::not_available);
  EXPECT_EQ(m.used.status, ReadStatus::not_available);
  EXPECT_EQ(m.free.value, 5u);
}

TEST(NvmlValidate, StringsMustBeTerminatedAndUtf8) {
  const char good[16] = "NVIDIA H100";
  EXPECT_EQ(checked_string(good, sizeof good).value, "NVIDIA H100");

  char unterminated[8];
  std::memset(unterminated, 'A', sizeof unterminated);
  auto r = checked_string(unterminated, sizeof unterminated);
  EXPECT_EQ(r.status, ReadStatus::invalid_value);
  EXPECT_EQ(r.value, "");

  const char empty[4] = "";
  EXPECT_EQ(checked_string(empty, sizeof empty).status, ReadStatus::not_available);

  const char bad_utf8[] = "GPU-\xff\xfe";
  EXPECT_EQ(checked_string(bad_utf8, sizeof bad_utf8).status, ReadStatus::invalid_value);
  const char umlaut[] = "Gr\xc3\xbc\xc3\x9f";  // "Grüß"
  EXPECT_EQ(checked_string(umlaut, sizeof umlaut).value, "Gr\xc3\xbc\xc3\x9f");
  // the terminator must lie inside the buffer, bytes after it are ignored
  const char trailing[12] = {'a', 'b', '\0', '\xff', '\xff'};
  EXPECT_EQ(checked_string(trailing, sizeof trailing).value, "ab");
}

TEST(NvmlValidate, Utf8EdgeCases) {
  EXPECT_TRUE(valid_utf8("plain"));
  EXPECT_TRUE(valid_utf8("\xe2\x82\xac"));       // €
  EXPECT_TRUE(valid_utf8("\xf0\x9f\x98\x80"));   // U+1F600
  EXPECT_FALSE(valid_utf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(valid_utf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(valid_utf8("\xe2\x82"));          // truncated
  EXPECT_FALSE(valid_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(valid_utf8("\x80"));              // lone continuation byte
}

std::vector<unsigned char> bytes_v2(const std::vector<nvmlProcessInfo_v2_t>& v,
                                    std::size_t extra_entries = 4) {
  std::vector<unsigned char> b((v.size() + extra_entries) * 32, 0);
  std::memcpy(b.data(), v.data(), v.size() * sizeof(nvmlProcessInfo_v2_t));
  return b;
}

std::vector<unsigned char> bytes_535(const std::vector<nvmlProcessInfo_535_t>& v,
                                     std::size_t extra_entries = 4) {
  std::vector<unsigned char> b((v.size() + extra_entries) * 32, 0);
  std::memcpy(b.data(), v.data(), v.size() * sizeof(nvmlProcessInfo_535_t));
  return b;
}

TEST(NvmlValidate, DetectsThe24ByteLayout) {
  auto b = bytes_v2({{4242, 1ull << 30, 0xFFFFFFFFu, 0xFFFFFFFFu},
                     {4243, 2ull << 30, 0xFFFFFFFFu, 0xFFFFFFFFu},
                     {4244, 3ull << 30, 0xFFFFFFFFu, 0xFFFFFFFFu}});
  EXPECT_EQ(detect_process_stride(b.data(), b.size(), 3), std::optional<std::size_t>(24));
  auto p = parse_processes(b.data(), b.size(), 3, 24);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[2].pid, 4244u);
  EXPECT_EQ(p[2].used_memory, 3ull << 30);
}

TEST(NvmlValidate, DetectsThe535Layout) {
  auto b = bytes_535(
      {{4242, 1ull << 30, 0xFFFFFFFFu, 0xFFFFFFFFu, 0}, {4243, 2ull << 30, 0xFFFFFFFFu, 0xFFFFFFFFu, 0}});
  // read as 24-byte entries the second pid is the first entry's usedGpuCcProtectedMemory (0)
  EXPECT_FALSE(plausible_processes(parse_processes(b.data(), b.size(), 2, 24)));
  EXPECT_EQ(detect_process_stride(b.data(), b.size(), 2), std::optional<std::size_t>(32));
  auto p = parse_processes(b.data(), b.size(), 2, 32);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[1].pid, 4243u);
  EXPECT_EQ(p[1].used_memory, 2ull << 30);
  EXPECT_EQ(p[1].gpu_instance_id, 0xFFFFFFFFu);
}

TEST(NvmlValidate, OneEntryCannotTellTheLayout) {
  auto b = bytes_535({{4242, 1ull << 30, 0xFFFFFFFFu, 0xFFFFFFFFu, 0}});
  EXPECT_EQ(detect_process_stride(b.data(), b.size(), 1), std::nullopt);
}

TEST(NvmlValidate, ImplausibleProcessEntries) {
  EXPECT_FALSE(plausible_processes({{0, 1, 0xFFFFFFFFu, 0xFFFFFFFFu}}));            // pid 0
  EXPECT_FALSE(plausible_processes({{5000000, 1, 0xFFFFFFFFu, 0xFFFFFFFFu}}));      // above pid_max
  EXPECT_FALSE(plausible_processes({{42, 1ull << 55, 0xFFFFFFFFu, 0xFFFFFFFFu}}));  // 32 PiB
  EXPECT_FALSE(plausible_processes({{42, 1, 0xFFFFFFFFu, 7}}));                     // half MIG ids
  EXPECT_TRUE(plausible_processes({{42, ~0ull, 0xFFFFFFFFu, 0xFFFFFFFFu}}));        // WDDM: N/A memory
  EXPECT_TRUE(plausible_processes({{42, 1, 1, 0}}));                                // MIG ids
}

TEST(NvmlValidate, ParseNeverReadsPastTheBuffer) {
  std::vector<unsigned char> b(40, 0);
  EXPECT_EQ(parse_processes(b.data(), b.size(), 5, 24).size(), 1u);
  EXPECT_TRUE(parse_processes(nullptr, 0, 5, 24).empty());
}

}  // namespace
}  // namespace trainmon::nvml
