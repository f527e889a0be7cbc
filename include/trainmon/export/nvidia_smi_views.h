// SPDX-License-Identifier: Apache-2.0
// nvidia-smi's other read-only views, from one Snapshot: `-L` (--list-gpus), `--query-supported-clocks`
// and `-q` (the NVSMI LOG text). Layouts as the captures in tests/captures print them (drivers
// 590 and 595); tests/e2e/test_views_golden.py compares each against every capture.
#pragma once

#include <cstddef>
#include <expected>
#include <span>
#include <string>
#include <string_view>

#include "trainmon/core/snapshot.h"
#include "trainmon/export/query_fields.h"

namespace trainmon::exp {

/// `nvidia-smi -L`: "GPU 0: NAME (UUID: GPU-...)" per selected GPU, then one line per MIG device:
/// "  MIG 3g.40gb     Device  0: (UUID: MIG-...)" (the profile is the MIG device name after "MIG ").
/// Every line ends in '\n'.
std::string list_gpus_text(const Snapshot& snap, std::span<const std::size_t> order);

/// One `--query-supported-clocks` field (nvidia-smi --help-query-supported-clocks): timestamp,
/// gpu_name, gpu_bus_id, gpu_serial, gpu_uuid, memory (mem), graphics (gr).
struct ClockField {
  std::string_view name;
  std::string_view alias;
  std::string_view unit;         ///< "MHz" for memory and graphics
  std::string_view description;  ///< for --help-query-supported-clocks
};
/// The fields in nvidia-smi's order.
std::span<const ClockField> clock_fields();

/// Parse a comma list of clock field names; error is nvidia-smi's `Field "x" is not a valid field
/// to query.`
std::expected<std::vector<const ClockField*>, std::string> parse_clock_query(std::string_view list);

/// The whole `--query-supported-clocks` output: one line per (memory, graphics) clock pair of each
/// selected GPU, in the driver's order; a GPU whose table cannot be read gets one line of
/// placeholders ("[N/A]"). The header first unless `noheader`.
std::string csv_query_supported_clocks(const std::vector<const ClockField*>& fields, const CsvOptions& opt,
                                       const Snapshot& snap, std::span<const std::size_t> order,
                                       bool with_header);

/// The display types of `nvidia-smi -q -d TYPE[,TYPE...]`, as its -h lists them (driver 590/595).
/// A bit each; kQueryDisplayAll is plain `-q`.
enum QueryDisplay : unsigned {
  kQdMemory = 1u << 0,           ///< FB and BAR1 Memory Usage
  kQdUtilization = 1u << 1,      ///< Utilization
  kQdEcc = 1u << 2,              ///< ECC Mode, ECC Errors
  kQdTemperature = 1u << 3,      ///< Temperature
  kQdPower = 1u << 4,            ///< GPU Power Readings
  kQdClock = 1u << 5,            ///< Clocks, (Default) Applications Clocks, Max Clocks
  kQdCompute = 1u << 6,          ///< Compute Mode
  kQdPids = 1u << 7,             ///< Processes
  kQdPerformance = 1u << 8,      ///< Performance State, Clocks Event Reasons (and their counters)
  kQdSupportedClocks = 1u << 9,  ///< Supported Clocks (needs BackendOptions::collect_supported_clocks)
  kQdPageRetirement = 1u << 10,  ///< Retired Pages
  kQdAccounting = 1u << 11,      ///< Accounting Mode and its buffer size
  kQdEncoderStats = 1u << 12,    ///< Encoder Stats
  kQdSupportedGpuTargetTemp = 1u << 13,  ///< no source in trainmon: nothing under the GPU line
  kQdVoltage = 1u << 14,                 ///< no source
  kQdFbcStats = 1u << 15,                ///< no source
  kQdRowRemapper = 1u << 16,             ///< Remapped Rows
  kQdGspFirmwareVersion = 1u << 17,      ///< no source
  kQdPowerSmoothing = 1u << 18,          ///< no source
  kQdPowerProfiles = 1u << 19,           ///< no source
};
inline constexpr unsigned kQueryDisplayAll = ~0u;

/// One -d name and its bit, in the order nvidia-smi -h lists them.
struct QueryDisplayName {
  std::string_view name;
  QueryDisplay bit;
};
std::span<const QueryDisplayName> query_display_names();

/// Parse `-d`'s comma list (names case-insensitive, spaces around them ignored). Error: one
/// sentence naming the unknown (or empty) entry and the valid names.
std::expected<unsigned, std::string> parse_query_display(std::string_view list);

/// `nvidia-smi -q` for the values trainmon reads, in nvidia-smi's order and layout (keys padded so
/// every ':' is in column 56, 4 spaces per level; a value the GPU does not give prints N/A, a
/// field the driver deprecated prints its deprecation text). Sections trainmon has no source for
/// (platform, BAR1 bridge, vGPU, ...) are left out rather than printed empty. `display` (a
/// QueryDisplay mask, `-d`): the log header and each GPU's line, then only the sections of those
/// types (the GPU's identity rows are then left out, as nvidia-smi leaves them out).
/// ECC Errors: the per-location rows (SRAM, DRAM; corrected, uncorrected; volatile, aggregate)
/// are nvmlDeviceGetMemoryErrorCounter's counts (GpuSample::ecc_*_by_location, N/A when it gives
/// none); Hopper's split of SRAM uncorrectable errors into parity and SEC-DED is 0 when the SRAM
/// count is 0 and N/A otherwise (that split is not read).
std::string query_text(const Snapshot& snap, std::span<const std::size_t> order,
                       unsigned display = kQueryDisplayAll);

/// `nvidia-smi --help-query-supported-clocks`: the fields of clock_fields() with a sentence each.
std::string help_query_supported_clocks();

}  // namespace trainmon::exp
