// SPDX-License-Identifier: Apache-2.0
// Finding: what a detector says is wrong, with the evidence, the fix and the thresholds it used.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainmon::diagnose {

/// How bad a finding is. Ordered: info < warning < critical.
enum class Severity : std::uint8_t { info = 0, warning = 1, critical = 2 };

/// "info", "warning", "critical".
std::string_view severity_name(Severity s) noexcept;
/// Inverse of severity_name; false when `name` is none of them.
bool parse_severity(std::string_view name, Severity& out) noexcept;

/// One row of the finding-code table (stable codes; never renumber, only append).
struct FindingKind {
  std::string_view code;   ///< "D1" .. "D22" (D1..D11 = MISSION.md §4)
  std::string_view slug;   ///< "fragmentation-oom-risk", ...
  std::string_view title;  ///< short human title
};

/// The table of every finding code, in code order (see docs/diagnosis.md).
std::span<const FindingKind> finding_kinds() noexcept;
/// The table row for `code`, or nullptr.
const FindingKind* find_kind(std::string_view code) noexcept;

/// What a detector found. Times are seconds since run start; `numbers` and `thresholds` hold the
/// raw values behind `evidence` (finite values only; JSON has no NaN).
struct Finding {
  std::string code;  ///< "D4"
  std::string slug;  ///< "dataloader-starved"
  std::string title;
  Severity severity = Severity::info;
  double start_s = 0;                        ///< first second the condition held
  double end_s = 0;                          ///< last second it held (== start_s for an instant)
  std::vector<unsigned> gpus;                ///< NVML indices involved, ascending
  std::vector<std::uint32_t> pids;           ///< host pids involved, ascending
  std::string evidence;                      ///< one sentence with the numbers
  std::map<std::string, double> numbers;     ///< raw evidence numbers, e.g. {"gpu1_mean_util_pct": 8}
  std::string advice;                        ///< what to do
  std::map<std::string, double> thresholds;  ///< name -> value of each threshold used

  friend bool operator==(const Finding&, const Finding&) = default;
};

/// A Finding with code, slug and title taken from the table; `code` must be in finding_kinds().
Finding make_finding(std::string_view code, Severity severity, double start_s, double end_s);

/// One line: "[warning] D4 dataloader-starved 120-840s GPU0: <evidence> -> <advice>", terminal-safe
/// (text::terminal: evidence quotes names from the driver and /proc).
std::string to_text(const Finding& f);

/// JSON both ways (nlohmann ADL hooks). from_json throws nlohmann::json::exception on bad input.
void to_json(nlohmann::json& j, const Finding& f);
void from_json(const nlohmann::json& j, Finding& f);

/// Orders findings by (start_s, code number, gpus, pids, end_s) — the engine's output order.
bool finding_less(const Finding& a, const Finding& b);

}  // namespace trainmon::diagnose
