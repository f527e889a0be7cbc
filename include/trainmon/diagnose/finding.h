// SPDX-License-Identifier: Apache-2.0
// Finding: what a detector says is wrong, with the evidence, the fix and the thresholds it used.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
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
  std::string_view code;   ///< "D1" .. "D28" (D1..D11 = MISSION.md §4)
  std::string_view slug;   ///< "fragmentation-oom-risk", ...
  std::string_view title;  ///< short human title
};

/// The table of every finding code, in code order (see docs/diagnosis.md).
std::span<const FindingKind> finding_kinds() noexcept;
/// The table row for `code`, or nullptr.
const FindingKind* find_kind(std::string_view code) noexcept;

/// What a performance finding costs the job while it holds (docs/diagnosis.md "Cost"). From the
/// training loop's measured step-time split where it exists ("measured"), else estimated from the
/// GPU side (utilisation, clocks: "estimated").
struct Cost {
  double share = 0;    ///< share of the job's throughput (samples/s) lost while it holds, 0..1
  double speedup = 0;  ///< samples/s if fixed / samples/s now = 1 / (1 - share); 0: unbounded (a hang)
  std::string basis;   ///< "measured" or "estimated"
  friend bool operator==(const Cost&, const Cost&) = default;
};

/// One rank's Python stack, asked for when a hang was found (faulthandler's text, parsed).
struct RankStack {
  double t = 0;               ///< run clock: when trainmon asked (seconds since run start)
  std::int64_t rank_key = 0;  ///< TrainRank::key
  int rank = -1;              ///< global rank, -1 unknown
  std::uint32_t pid = 0;
  std::string host;
  std::string where;       ///< the main thread's innermost frame: "train.py:42 in step"
  std::string caller;      ///< its innermost frame outside Python's and installed packages' files
                           ///< (the user's line); empty when that is `where` itself or none
  std::string main_stack;  ///< the main thread's frames as faulthandler wrote them (at most 16 KiB)
  /// The collective the main thread waits in (collective_of(): "all_reduce", "backward", ...);
  /// empty when it is elsewhere (the rank that holds the others, in a hang).
  std::string collective;
  friend bool operator==(const RankStack&, const RankStack&) = default;
};

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
  std::optional<Cost> cost;                  ///< what it costs (performance findings), nullopt otherwise
  std::vector<std::string> related;          ///< codes of findings that overlap it and explain it (D26)
  /// The code of the finding that caused this one ("D17" for a stall during memory pressure, "D3" for
  /// the OOM kill a leak led to); empty when none is known. Set by link_causes (engine.h); the report,
  /// `diagnose` and rank_findings put the cause before this one (docs/diagnosis.md "Causes").
  std::string cause;
  std::vector<RankStack> stacks;  ///< the ranks' stacks (D23), ordered by rank key
  /// `evidence` and `advice` in the language of the text views (core/i18n.h), made with them by the
  /// detectors; empty when that language is English, and in findings read back from JSON or the store
  /// (neither keeps them: what scripts read stays English). See shown_evidence / shown_advice.
  std::string evidence_local, advice_local;

  friend bool operator==(const Finding&, const Finding&) = default;
};

/// What people read (to_text, top, the report): the title of the code's kind, the evidence and the
/// advice in the selected language (core/i18n.h), each falling back to the English text: the title
/// and a fixed advice sentence are looked up in the catalogue, the evidence is `evidence_local` when
/// the detector made it.
std::string_view shown_title(const Finding& f) noexcept;
std::string_view shown_evidence(const Finding& f) noexcept;
std::string_view shown_advice(const Finding& f) noexcept;

/// A Finding with code, slug and title taken from the table; `code` must be in finding_kinds().
Finding make_finding(std::string_view code, Severity severity, double start_s, double end_s);

/// Sets `f.cost` from the share of throughput lost (clamped to 0..1; speedup 1 / (1 - share), 0 at 1).
void set_cost(Finding& f, double share, std::string_view basis);
/// "costs 41 % of throughput; up to 1.7x samples/s if fixed" (empty without a cost).
std::string cost_text(const Finding& f);

/// One line: "[warning] D4 dataloader-starved 120-840s GPU0: <evidence>[; <cost_text>] -> <advice>",
/// then one indented line per stack ("    rank 1 pid 4242: train.py:42 in step"); each line
/// terminal-safe (text::terminal: evidence quotes names from the driver and /proc, stacks file names).
std::string to_text(const Finding& f);

/// JSON both ways (nlohmann ADL hooks). from_json throws nlohmann::json::exception on bad input.
void to_json(nlohmann::json& j, const Finding& f);
void from_json(const nlohmann::json& j, Finding& f);
void to_json(nlohmann::json& j, const RankStack& s);
void from_json(const nlohmann::json& j, RankStack& s);

/// Orders findings by (start_s, code number, gpus, pids, end_s) — the engine's output order.
bool finding_less(const Finding& a, const Finding& b);

/// The share of the run a finding's cost weighs: cost share x (end - start) / run_span_s, 0 without
/// a cost (run_span_s <= 0: the share alone).
double cost_weight(const Finding& f, double run_span_s);
/// What to fix first (`diagnose`, the run summary, the report): critical findings first, then by
/// cost_weight (largest first), then warnings without a cost, then info; ties in finding_less order.
/// Then the chain: a finding whose `cause` is in the list comes right after its cause (cause first),
/// whatever its own rank.
void rank_findings(std::vector<Finding>& findings, double run_span_s);

}  // namespace trainmon::diagnose
