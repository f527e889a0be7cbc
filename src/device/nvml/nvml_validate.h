// SPDX-License-Identifier: Apache-2.0
// Value checks for what NVML returns: a return code of NVML_SUCCESS does not make a value sane.
// Pure functions (no NVML calls), tested directly in tests/unit/device/nvml_validate_test.cpp.
// A value that means "no value" (all-ones sentinels) becomes ReadStatus::not_available; a value
// that cannot be true (used > total, 250 %, a power limit of 0, a counter going backwards, a name
// that is not UTF-8) becomes ReadStatus::invalid_value. Neither ever shows as a huge number.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainmon/core/reading.h"

namespace trainmon::nvml {

inline constexpr unsigned kNotAvailableU32 = 0xFFFFFFFFu;             ///< NVML "N/A" for unsigned int
inline constexpr std::uint64_t kNotAvailableU64 = ~std::uint64_t{0};  ///< NVML_VALUE_NOT_AVAILABLE
inline constexpr std::uint32_t kMaxLinuxPid = 4194304;                ///< PID_MAX_LIMIT on 64-bit Linux
/// A GPU (or its memory) reading this many degrees Celsius or more is a sensor or driver fault, not a
/// temperature: GPUs shut down at their NVML shutdown threshold, 90-105 °C (tests/captures: 100 °C).
/// Such a reading is invalid_value, so every view shows it as invalid alike; the diagnosis applies
/// the same bound to stored values (diagnose::kImpossibleGpuTempC, equal: unit-tested).
inline constexpr unsigned kGpuTemperatureImpossibleC = 150;

/// A C string NVML wrote into a buffer of `capacity` bytes: invalid_value when it is not
/// NUL-terminated within the buffer or not valid UTF-8; not_available when empty.
Reading<std::string> checked_string(const char* buf, std::size_t capacity);
/// True when `s` is well-formed UTF-8 (no overlongs, no surrogates, at most U+10FFFF).
bool valid_utf8(std::string_view s) noexcept;

/// 0xFFFFFFFF → not_available, else ok.
Reading<unsigned> checked_u32(unsigned v);
/// ~0ULL → not_available, else ok.
Reading<std::uint64_t> checked_u64(std::uint64_t v);
/// Percent: sentinel → not_available; above 100 → invalid_value.
Reading<unsigned> checked_percent(unsigned v);
/// Degrees Celsius: sentinel → not_available; kGpuTemperatureImpossibleC (150 °C) or more →
/// invalid_value (GPUs shut down at 90-105 °C; no GPU runs there).
Reading<unsigned> checked_temperature(unsigned c);
/// Power in mW (draw): sentinel → not_available; above 10 kW → invalid_value.
Reading<unsigned> checked_power(unsigned mw);
/// A power limit in mW: 0 → invalid_value (a board cannot be limited to nothing); sentinel → N/A.
Reading<unsigned> checked_power_limit(unsigned mw);
/// Performance state 0..15; 32 (NVML_PSTATE_UNKNOWN) or anything above 15 → not_available.
Reading<unsigned> checked_pstate(unsigned p);
/// A cumulative counter (energy, ECC, violation ns): sentinel → not_available; lower than the
/// previous good value → invalid_value (counters do not go backwards without a driver reload).
Reading<std::uint64_t> checked_counter(std::uint64_t now, std::optional<std::uint64_t> previous);

/// Theoretical payload bandwidth of one direction of a PCIe link in bytes/s: transfer rate per lane
/// × line-code efficiency / 8 × lanes (PCI-SIG: Gen1 2.5 GT/s and Gen2 5 GT/s with 8b/10b, Gen3
/// 8, Gen4 16, Gen5 32 GT/s with 128b/130b, Gen6 64 and Gen7 128 GT/s with 242/256 FLITs).
/// nullopt when the generation (1..7) or width (1..32) is unknown.
std::optional<double> pcie_link_max_bytes_s(unsigned gen, unsigned width);
/// A PCIe rate (KiB/s) computed from NVML's byte counters: NaN or negative → invalid_value; above
/// twice the link's maximum (a counter or timestamp glitch, not traffic; the factor leaves room for
/// timestamp jitter), or above 1 TB/s when the link is unknown → invalid_value; else the rounded
/// rate.
Reading<unsigned> checked_pcie_rate_kib_s(double kib_s, std::optional<double> link_max_bytes_s);

/// Framebuffer memory in bytes. `reserved` is empty for the v1 API.
struct MemoryReadings {
  Reading<std::uint64_t> total, reserved, used, free;
};
/// total 0 or all-ones → total not_available (iGPU / UMA); each part above total → invalid_value;
/// used + reserved above total → both invalid_value.
MemoryReadings checked_memory(std::uint64_t total, std::optional<std::uint64_t> reserved, std::uint64_t used,
                              std::uint64_t free);

/// One process entry as parsed from a driver buffer, whatever its layout.
struct RawProcess {
  std::uint32_t pid = 0;
  std::uint64_t used_memory = 0;
  unsigned gpu_instance_id = kNotAvailableU32;
  unsigned compute_instance_id = kNotAvailableU32;
};
/// Parse `count` entries of `stride` bytes (16 = v1, 24 = v2, 32 = the 535.43–535.86 layout).
std::vector<RawProcess> parse_processes(const unsigned char* buf, std::size_t buf_bytes, unsigned count,
                                        std::size_t stride);
/// Entries look real: pid in 1..kMaxLinuxPid, memory ~0 or below 1 PiB, GI/CI both 0xFFFFFFFF
/// (MIG off) or both below 0x10000 (MIG ids are small).
bool plausible_processes(const std::vector<RawProcess>& entries);
/// The entry stride a _v3 process call used: 24 unless the 24-byte reading is implausible and the
/// 32-byte reading is plausible (535.43–535.86 drivers; nvitop's probing rule). Needs count >= 2
/// to tell; returns nullopt when it cannot.
std::optional<std::size_t> detect_process_stride(const unsigned char* buf, std::size_t buf_bytes,
                                                 unsigned count);

}  // namespace trainmon::nvml
