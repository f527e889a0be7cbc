// SPDX-License-Identifier: Apache-2.0
#include "trainmon/diagnose/thresholds.h"

#include "trainmon/core/i18n.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <toml++/toml.h>

namespace trainmon::diagnose {
namespace {

#define TM_TH(name, source)          \
  ThresholdInfo {                    \
#name, &Thresholds::name, source \
  }
const ThresholdInfo kTable[] = {
    TM_TH(window_s, "MISSION.md §6 (60 s)"),
    TM_TH(clear_s, "ours (hysteresis)"),
    TM_TH(busy_util_pct, "ours; clocks/links drop when idle (NVML-NOTES §6.2)"),
    TM_TH(idle_util_pct, "MISSION.md §4 D2 (others under 5-12 %)"),
    TM_TH(job_gpu_min_mib, "ours (a CUDA context is ~300 MiB)"),
    TM_TH(frag_reserved_ratio, "MISSION.md §4 D1"),
    TM_TH(frag_min_gap_mib, "MISSION.md §4 D1 (ours: 1 GiB)"),
    TM_TH(frag_min_events, "ours"),
    TM_TH(spike_frac_of_total, "MISSION.md §4 D1 (sudden jump)"),
    TM_TH(spike_within_s, "MISSION.md §4 D1 (ours: 10 s)"),
    TM_TH(near_full_pct, "MISSION.md §6 (OOM warning over 95 %)"),
    TM_TH(imbalance_spread_pct, "MISSION.md §4 D2 (spread under 15 %)"),
    TM_TH(imbalance_high_pct, "ours"),
    TM_TH(imbalance_for_s, "MISSION.md §6 (60 s)"),
    TM_TH(leak_min_slope_mib_h, "MISSION.md §4 D3 (ours: 200 MiB/h)"),
    TM_TH(leak_min_r2, "ours"),
    TM_TH(leak_min_span_s, "ours"),
    TM_TH(leak_critical_eta_s, "ours"),
    TM_TH(leak_fast_eta_factor, "ours (issue 34: a forecast reaches a few times its evidence)"),
    TM_TH(leak_fast_min_span_s, "ours"),
    TM_TH(starved_util_pct, "MISSION.md §4 D4/D11 (under 40 %)"),
    TM_TH(starved_sm_pct, "MISSION.md §4 D4 (sm under 30 %)"),
    TM_TH(starved_for_s, "MISSION.md §4 D4 (for long; ours 120 s)"),
    TM_TH(swing_low_pct, "MISSION.md §4 D4 (0 -> 85-90 -> 0)"),
    TM_TH(swing_high_pct, "MISSION.md §4 D4 (0 -> 85-90 -> 0)"),
    TM_TH(swing_min_cycles, "ours"),
    TM_TH(cpu_low_pct, "MISSION.md §4 D4 (CPU under 30 %)"),
    TM_TH(main_pinned_pct, "MISSION.md §4 D2/D4 (one core saturated)"),
    TM_TH(growth_per_epoch_mib, "MISSION.md §4 D5 (200 MB per epoch)"),
    TM_TH(growth_min_epochs, "MISSION.md §4 D5 (after the first)"),
    TM_TH(growth_slope_mib_h, "ours (fallback without epochs)"),
    TM_TH(power_cap_frac, "MISSION.md §4 D6 (95 % of cap)"),
    TM_TH(power_bound_util_pct, "MISSION.md §4 D6 (util under 70-80 %)"),
    TM_TH(dram_bound_pct, "ours (NVML GPM DRAM_BW_UTIL)"),
    TM_TH(wrong_device_for_s, "MISSION.md §6 (60 s)"),
    TM_TH(held_unused_for_s, "ours"),
    TM_TH(ghost_for_s, "ours"),
    TM_TH(idle_holder_for_s, "ours"),
    TM_TH(low_util_pct, "MISSION.md §4 D11 (below 40 %)"),
    TM_TH(healthy_util_low_pct, "MISSION.md §4 D11, §7 (70-95 %)"),
    TM_TH(healthy_util_high_pct, "MISSION.md §4 D11, §7 (70-95 %)"),
    TM_TH(util_min_span_s, "ours"),
    TM_TH(throttle_for_s, "ours (DCGM health-watch style persistence)"),
    TM_TH(throttle_clock_frac, "ours (boost clocks under a power cap stay within 10 % of max)"),
    TM_TH(pcie_for_s, "ours"),
    TM_TH(psi_mem_some_pct, "ours (kernel PSI documentation)"),
    TM_TH(pressure_for_s, "ours"),
    TM_TH(swap_growth_mib, "ours"),
    TM_TH(low_available_pct, "ours"),
    TM_TH(gpu_late_max_s, "ours (issue 34: one late NVML call under host pressure is not a lost GPU)"),
    TM_TH(iowait_pct, "ours"),
    TM_TH(psi_io_some_pct, "ours (kernel PSI documentation)"),
    TM_TH(disk_read_min_bps, "ours (20 MiB/s)"),
    TM_TH(cpu_saturated_pct, "ours"),
    TM_TH(loading_for_s, "MISSION.md §6 (60 s)"),
    TM_TH(near_full_for_s, "ours"),
    TM_TH(forecast_window_s, "ours"),
    TM_TH(forecast_horizon_s, "ours"),
    TM_TH(forecast_min_pct, "ours"),
    TM_TH(batch_margin_frac, "ours (MISSION.md §5 keeps 2000 MiB)"),
    TM_TH(batch_reserve_mib, "MISSION.md §5 (2000 MiB)"),
    TM_TH(hang_p90_factor, "nvidia-resiliency-ext FaultToleranceConfig safety_factor (5.0)"),
    TM_TH(hang_floor_s, "Megatron/NVRx example step-section timeout (step:120)"),
    TM_TH(hang_p90_window_s, "ours"),
    TM_TH(hang_alive_s, "ours (heartbeats come every second)"),
    TM_TH(hang_coll_floor_s, "ours (issue 30: warned within 60 s for sub-second steps)"),
    TM_TH(straggler_score_frac, "nvidia-resiliency-ext Report.identify_stragglers (0.75)"),
    TM_TH(straggler_window_s, "nvidia-resiliency-ext report_time_interval (60 s)"),
    TM_TH(straggler_for_s, "ours (two report intervals)"),
    TM_TH(straggler_min_steps, "ours"),
    TM_TH(straggler_compute_frac, "ours (1.25x slower compute; issue 30 asks for 1.3x)"),
    TM_TH(straggler_compute_for_s, "ours (issue 30: found within two minutes of the skew)"),
    TM_TH(xid_window_s, "ours (Prometheus rules: a new Xid's alert lasts this long, then resolves)"),
    TM_TH(data_wait_share_pct, "ours (20 % of each step: fixing it gives 1.25x)"),
    TM_TH(data_wait_for_s, "ours (as starved_for_s)"),
    TM_TH(throughput_drop_frac, "ours (70 % of the steady level)"),
    TM_TH(throughput_warmup_s, "ours"),
    TM_TH(throughput_for_s, "ours"),
    TM_TH(comm_bound_share_pct, "ours (a third of each step: hiding it gives up to 1.43x)"),
    TM_TH(comm_bound_for_s, "ours (as data_wait_for_s)"),
    TM_TH(pause_step_factor, "ours (as hang_p90_factor, NVRx safety factor 5)"),
    TM_TH(pause_min_s, "ours"),
    TM_TH(pause_cost_pct, "issue 30 (pauses costing more than a tenth of the wall time)"),
    TM_TH(pause_window_s, "ours"),
};
#undef TM_TH

const ThresholdInfo* lookup(std::string_view name) {
  for (const auto& t : kTable)
    if (t.name == name) return &t;
  return nullptr;
}

// The meaningful range of a threshold, from its unit (the name's suffix, as documented in
// thresholds.h: _s seconds, _pct 0..100, MiB, ...). Every entry of kTable has one (unit test).
constexpr double kMinDurationS = 0.1;

struct Range {
  double lo;
  bool lo_open;  ///< lo itself excluded
  double hi;     ///< +inf: no upper bound
  bool whole;    ///< a count: whole numbers only
  std::string_view what;
};

std::optional<Range> range_of(std::string_view name) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (name == "frag_reserved_ratio") return Range{1, false, inf, false, "a ratio, at least 1"};
  if (name.ends_with("_factor")) return Range{1, false, inf, false, "a factor, at least 1"};
  if (name == "leak_min_r2" || name == "spike_frac_of_total" || name.ends_with("_frac"))
    return Range{0, false, 1, false, "a fraction, 0 to 1"};
  if (name.ends_with("_pct")) return Range{0, false, 100, false, "a percentage, 0 to 100"};
  // A window or hold shorter than the shortest sampling interval (run/record --interval 0.1 s)
  // holds no sample: 0.1 s is the floor of every duration.
  if (name.ends_with("_s"))
    return Range{kMinDurationS, false, inf, false, "a duration in seconds, at least 0.1"};
  if (name.ends_with("_mib") || name.ends_with("_mib_h") || name.ends_with("_bps"))
    return Range{0, false, inf, false, "an amount, 0 or more"};
  if (name.ends_with("_events") || name.ends_with("_cycles") || name.ends_with("_epochs") ||
      name.ends_with("_steps"))
    return Range{1, false, inf, true, "a whole count, at least 1"};
  return std::nullopt;
}

std::expected<double, std::string> checked(std::string_view name, double v, std::string_view text) {
  const auto r = range_of(name);
  if (!r) return v;
  const bool ok = std::isfinite(v) && (r->lo_open ? v > r->lo : v >= r->lo) && v <= r->hi &&
                  (!r->whole || v == std::floor(v));
  if (ok) return v;
  return std::unexpected(i18n::trf("{}={} is out of range ({})", name, text, r->what));
}

/// The shortest decimal form of `v` ("20", "0.5").
std::string prom_free_number(double v) {
  return fmt::format("{}", v);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::span<const ThresholdInfo> threshold_table() noexcept {
  return kTable;
}

std::optional<std::string> threshold_range(std::string_view name) {
  if (auto r = range_of(name)) return std::string(r->what);
  return std::nullopt;
}

std::expected<void, std::string> set_threshold(Thresholds& th, std::string_view arg) {
  const auto eq = arg.find('=');
  if (eq == std::string_view::npos) return std::unexpected(i18n::trf("'{}' is not name=value", arg));
  const auto name = trim(arg.substr(0, eq));
  const auto value = trim(arg.substr(eq + 1));
  const auto* info = lookup(name);
  if (!info)
    return std::unexpected(i18n::trf("'{}' names no threshold (docs/diagnosis.md lists them)", name));
  // A plain decimal number (digits, '.', an exponent): from_chars reads no hex ("0x10" would be 16
  // to strtod), no "inf"/"nan" that pass isfinite below, no leading '+' or spaces.
  double v = 0;
  const auto [end, ec] =
      std::from_chars(value.data(), value.data() + value.size(), v, std::chars_format::general);
  if (value.empty() || ec != std::errc{} || end != value.data() + value.size() || !std::isfinite(v))
    return std::unexpected(i18n::trf("{}='{}' is not a decimal number", name, value));
  auto ok = checked(name, v, value);
  if (!ok) return std::unexpected(ok.error());
  th.*(info->field) = v;
  return {};
}

std::vector<std::pair<std::string, double>> threshold_changes(const Thresholds& th) {
  const Thresholds defaults;
  std::vector<std::pair<std::string, double>> out;
  for (const auto& info : kTable) {
    if (th.*(info.field) != defaults.*(info.field))
      out.emplace_back(std::string(info.name), th.*(info.field));
  }
  return out;
}

std::vector<std::string> apply_threshold_changes(Thresholds& th,
                                                 const std::vector<std::pair<std::string, double>>& changes) {
  std::vector<std::string> skipped;
  for (const auto& [name, value] : changes) {
    const auto* info = lookup(name);
    if (!info || !checked(name, value, fmt::format("{}", value))) {
      skipped.push_back(name);
      continue;
    }
    th.*(info->field) = value;
  }
  return skipped;
}

std::expected<void, std::string> check_threshold_relations(const Thresholds& th) {
  struct Rel {
    double Thresholds::*lo;
    std::string_view lo_name;
    double Thresholds::*hi;
    std::string_view hi_name;
    bool strict;
    std::string_view why;
  };
  const Rel rels[] = {
      {&Thresholds::idle_util_pct, "idle_util_pct", &Thresholds::busy_util_pct, "busy_util_pct", true,
       "a GPU cannot be idle and busy at once"},
      {&Thresholds::swing_low_pct, "swing_low_pct", &Thresholds::swing_high_pct, "swing_high_pct", true,
       "a swing goes from the low level up to the high one"},
      {&Thresholds::low_util_pct, "low_util_pct", &Thresholds::healthy_util_low_pct, "healthy_util_low_pct",
       false, "wasted utilisation lies below the healthy band"},
      {&Thresholds::healthy_util_low_pct, "healthy_util_low_pct", &Thresholds::healthy_util_high_pct,
       "healthy_util_high_pct", false, "the healthy band's low end is not above its high end"},
  };
  for (const auto& r : rels) {
    const double lo = th.*(r.lo), hi = th.*(r.hi);
    if (r.strict ? lo < hi : lo <= hi) continue;
    return std::unexpected(fmt::format("{}={} must be {} {}={} ({})", r.lo_name, prom_free_number(lo),
                                       r.strict ? "below" : "at most", r.hi_name, prom_free_number(hi),
                                       r.why));
  }
  return {};
}

std::expected<Thresholds, std::string> thresholds_from_toml(std::string_view text, const Thresholds& base) {
  Thresholds th = base;
  toml::table doc;
  try {
    doc = toml::parse(text);
  } catch (const toml::parse_error& e) {
    return std::unexpected(
        fmt::format("TOML parse error at line {}: {}", e.source().begin.line, e.description()));
  }
  const auto* diag = doc["diagnose"].as_table();
  if (!diag) return th;
  for (const auto& [key, node] : *diag) {
    const auto* info = lookup(key.str());
    if (!info) return std::unexpected(fmt::format("[diagnose]: unknown threshold '{}'", key.str()));
    const auto v = node.value<double>();
    if (!v) return std::unexpected(fmt::format("[diagnose]: '{}' must be a number", key.str()));
    auto ok = checked(key.str(), *v, fmt::format("{}", *v));
    if (!ok) return std::unexpected("[diagnose]: " + ok.error());
    th.*(info->field) = *v;
  }
  return th;
}

}  // namespace trainmon::diagnose
