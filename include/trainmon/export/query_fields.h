// SPDX-License-Identifier: Apache-2.0
// nvidia-smi `--query-gpu` / `--query-compute-apps` compatibility: one table of fields (data, not a
// chain of ifs) and the CSV writer that prints them byte for byte as nvidia-smi 590 does
// (`, ` separators, units in headers and values, `[N/A]`, words for booleans, hex bitmasks).
#pragma once

#include <array>
#include <cstdint>
#include <expected>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trainmon/core/snapshot.h"

namespace trainmon::exp {

/// One formatted value. `na` true means `text` is already nvidia-smi's placeholder ("[N/A]" ...),
/// printed as is and never followed by a unit.
struct FieldValue {
  std::string text;
  bool na = false;
  /// The reading was NOT_SUPPORTED: drivers before R450 print "[Not Supported]" where current ones
  /// print "[N/A]" (the change noted in enkore/i3pystatus#776, April 2020).
  bool not_supported = false;
};

/// A --query-gpu field name as nvidia-smi lists it, with its aliases and its CSV unit.
struct KnownGpuField {
  std::string_view name;
  std::array<std::string_view, 2> aliases;  ///< empty entries unused
  std::string_view unit;                    ///< "MiB", "W", "%", "MHz", "us", "W/s", "ms", "seconds" or empty
};

/// Every field name any known nvidia-smi's --help-query-gpu lists (drivers 580 to 610), in that
/// order (src/export/nvidia_smi_fields.cpp). Each one is accepted by parse_gpu_query().
std::span<const KnownGpuField> nvidia_smi_gpu_field_catalog();

/// The major number of the snapshot's driver ("590.48.01" → 590); 0 when unknown.
int driver_major(const Snapshot& snap);

/// One `--query-gpu` field. `unit` is what nvidia-smi appends in the header (`memory.used [MiB]`)
/// and after each value (`19818 MiB`); empty when the field has none. `format` reads only the
/// snapshot and the GPU sample (views never call a backend).
struct GpuField {
  std::string_view name;                  ///< canonical nvidia-smi name ("clocks_event_reasons.active")
  std::vector<std::string_view> aliases;  ///< other accepted names ("clocks_throttle_reasons.active")
  std::string_view unit;                  ///< "MiB", "W", "%", "MHz", "us" or empty
  std::string_view description;           ///< one line for `--help-query-gpu`
  std::function<FieldValue(const Snapshot&, const GpuSample&)> format;
};

/// One `--query-compute-apps` field.
struct AppField {
  std::string_view name;
  std::vector<std::string_view> aliases;
  std::string_view unit;
  std::string_view description;
  std::function<FieldValue(const Snapshot&, const GpuSample&, const GpuProcessSample&)> format;
};

/// Every `--query-gpu` field trainmon fills, in nvidia-smi's `--help-query-gpu` order.
std::span<const GpuField> gpu_fields();

/// The other names of nvidia_smi_gpu_field_catalog() (vGPU, power smoothing, platform, ...): no
/// NVML source is read for them, so they print what nvidia-smi prints for a value it cannot read:
/// `[N/A]`, `N/A` for fabric.*, `[Requested functionality has been deprecated]` where the driver
/// deprecated the field (display_mode from R580, power.management and the application clocks from
/// R590), with nvidia-smi's unit in the header. docs/cli.md lists them and why.
std::span<const GpuField> gpu_fields_without_source();

/// Every `--query-compute-apps` field.
std::span<const AppField> app_fields();

/// The field called `name` (canonical or alias) in either GPU table, or nullptr. Headers always
/// print the canonical name, as nvidia-smi does (`gpu_name` -> `name`).
const GpuField* find_gpu_field(std::string_view name);
const AppField* find_app_field(std::string_view name);

/// `--format=` options.
struct CsvOptions {
  bool header = true;  ///< false with `noheader`
  bool units = true;   ///< false with `nounits`: no `[unit]` in headers, no unit after values
};

/// Parse nvidia-smi's `--format=` value ("csv", "csv,noheader,nounits"). Error text names the
/// offending token.
std::expected<CsvOptions, std::string> parse_csv_format(std::string_view spec);

/// A parsed field list, in the order requested (repeats allowed).
struct GpuQuery {
  std::vector<const GpuField*> fields;
};
struct AppQuery {
  std::vector<const AppField*> fields;
};

/// Split a comma list and resolve every name. On an unknown name the error is nvidia-smi's exact
/// message: `Field "foo" is not a valid field to query.`
std::expected<GpuQuery, std::string> parse_gpu_query(std::string_view list);
std::expected<AppQuery, std::string> parse_app_query(std::string_view list);

/// The header line without newline: `memory.used [MiB], pstate`.
std::string csv_header(const GpuQuery& q, const CsvOptions& opt);
std::string csv_header(const AppQuery& q, const CsvOptions& opt);

/// One CSV line (no newline) for one GPU.
std::string csv_gpu_row(const GpuQuery& q, const CsvOptions& opt, const Snapshot& snap, const GpuSample& gpu);

/// The whole `--query-gpu` output for the selected GPUs (`gpu_order` indexes snap.gpus), each line
/// ending in '\n'; the header first unless `noheader`.
std::string csv_query_gpu(const GpuQuery& q, const CsvOptions& opt, const Snapshot& snap,
                          std::span<const std::size_t> gpu_order, bool with_header);

/// The whole `--query-compute-apps` output: one line per compute ('C' or 'M') process of each
/// selected GPU, in the order the driver listed them (GpuProcessSample::list_position).
std::string csv_query_apps(const AppQuery& q, const CsvOptions& opt, const Snapshot& snap,
                           std::span<const std::size_t> gpu_order, bool with_header);

/// Text of `trainmon query --help-query-gpu`: supported fields with aliases, unit and description,
/// then the accepted-but-always-`[N/A]` names.
std::string help_query_gpu();
/// Text of `trainmon query --help-query-compute-apps`.
std::string help_query_compute_apps();

/// Select GPUs by nvidia-smi `-i` syntax: a comma list of indexes, UUIDs (full or unique prefix,
/// "GPU-..."), or PCI bus ids ("00000000:83:00.0" or the short "83:00.0"). Empty spec: all GPUs.
/// Returns positions in snap.gpus in the order given, each GPU once (a repeat, by index, UUID or
/// bus id, is dropped); error names the id that matched nothing.
std::expected<std::vector<std::size_t>, std::string> select_gpus(const Snapshot& snap, std::string_view spec);

}  // namespace trainmon::exp
