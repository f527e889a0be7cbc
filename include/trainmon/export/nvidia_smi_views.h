// SPDX-License-Identifier: Apache-2.0
// nvidia-smi's other read-only views, from one Snapshot: `-L` (--list-gpus), `--query-supported-clocks`
// and `-q` (the NVSMI LOG text). Layouts as the captures in ../shared/captures print them (drivers
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
  std::string_view unit;  ///< "MHz" for memory and graphics
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

/// `nvidia-smi -q` for the values trainmon reads, in nvidia-smi's order and layout (keys padded so
/// every ':' is in column 56, 4 spaces per level; a value the GPU does not give prints N/A, a
/// field the driver deprecated prints its deprecation text). Sections trainmon has no source for
/// (platform, BAR1 bridge, vGPU, ...) are left out rather than printed empty.
std::string query_text(const Snapshot& snap, std::span<const std::size_t> order);

}  // namespace trainmon::exp
