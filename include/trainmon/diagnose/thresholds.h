// SPDX-License-Identifier: Apache-2.0
// Thresholds: every number a detector compares against, with MISSION.md's values as defaults.
// Each field cites its source; docs/diagnosis.md lists them per finding code. Configurable from a
// `[diagnose]` TOML table (thresholds_from_toml) and `--threshold name=value` (set_threshold).
#pragma once

#include <expected>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainmon::diagnose {

/// Detector thresholds. Percent values are 0..100, durations seconds, memory MiB.
struct Thresholds {
  // --- common --------------------------------------------------------------------------------
  double window_s = 60;          ///< rolling-mean window; MISSION §6 ("under 30 % for 60 s")
  double clear_s = 60;           ///< a condition must be clear this long to end an episode; one
                                 ///< rolling window, since a short recovery lifts a trailing mean
                                 ///< for about window_s (ours, hysteresis)
  double busy_util_pct = 20;     ///< a GPU counts as "under load" at or above this (ours; links
                                 ///< and clocks drop when idle, NVML-NOTES clock reasons)
  double idle_util_pct = 5;      ///< "idle" GPU; MISSION §4 D2 ("others under 5-12 %")
  double job_gpu_min_mib = 256;  ///< a process holding this much uses the GPU (CUDA context ~300 MiB)
  // --- D1 fragmentation ------------------------------------------------------------------------
  double frag_reserved_ratio = 1.5;   ///< reserved >= ratio x allocated (MISSION §4 D1 "far below")
  double frag_min_gap_mib = 1024;     ///< and reserved - allocated >= this
  double frag_min_events = 3;         ///< on at least this many memory events
  double spike_frac_of_total = 0.10;  ///< a jump of this share of total memory ... (MISSION §4 D1)
  double spike_within_s = 10;         ///< ... within this many seconds ...
  double near_full_pct = 95;          ///< ... ending at or above this; MISSION §6 OOM warning 95 %
  // --- D2 imbalance / D8 DDP ------------------------------------------------------------------
  double imbalance_spread_pct = 15;  ///< max - min mean util across job GPUs; MISSION §4 D2
  double imbalance_high_pct = 50;    ///< the busiest GPU is at least this busy (ours)
  double imbalance_for_s = 60;       ///< sustained (MISSION §6 60 s)
  // --- D3 host memory leak ----------------------------------------------------------------------
  double leak_min_slope_mib_h = 200;  ///< job RSS growth by least squares; MISSION §4 D3 (40 G -> 8 G)
  double leak_min_r2 = 0.8;           ///< linear enough to be a leak (ours)
  double leak_min_span_s = 1800;      ///< fitted over at least 30 min (ours; D3 shows after hours)
  double leak_critical_eta_s = 3600;  ///< critical when available memory runs out within 1 h
  /// Evidence scaled by danger: a linear growth fitted over T seconds (at least leak_fast_min_span_s)
  /// that exhausts what the job can use (MemAvailable, or its memory cgroup's limit) within
  /// leak_fast_eta_factor x T is reported at once, critical (ours: the forecast must reach no further
  /// than a few times the evidence behind it; issue 34's worker leak ran out 5 min after its start).
  double leak_fast_eta_factor = 3;
  double leak_fast_min_span_s = 10;  ///< and at least 5 rows (ours: a few 1-s ticks of steady growth)
  // --- D4 data loading -------------------------------------------------------------------------
  double starved_util_pct = 40;  ///< mean GPU util under this; MISSION §4 D4/D11
  double starved_sm_pct = 30;    ///< swinging util with mean sm under this; MISSION §4 D4
  double starved_for_s = 120;    ///< "for long" (ours: two windows)
  double swing_low_pct = 10;     ///< hi-res sample counts as "0" ...
  double swing_high_pct = 80;    ///< ... or as "85-90"; MISSION §4 D4
  double swing_min_cycles = 3;   ///< low->high->low cycles within the episode
  double cpu_low_pct = 30;       ///< host CPU under this; MISSION §4 D4
  double main_pinned_pct = 90;   ///< main process at >= 90 % of one core; MISSION §4 D2/D4
  // --- D5 GPU memory growth -----------------------------------------------------------------------
  double growth_per_epoch_mib = 200;  ///< MISSION §4 D5 (200 MB, read as MiB as nvidia-smi shows)
  double growth_min_epochs = 3;       ///< epochs needed (first one ignored: caching warms up)
  double growth_slope_mib_h = 500;    ///< fallback without epoch events: driver-memory slope (ours)
  // --- D6 power / bandwidth bound ---------------------------------------------------------------
  double power_cap_frac = 0.95;      ///< power >= 95 % of the enforced cap; MISSION §4 D6
  double power_bound_util_pct = 80;  ///< while util < 70-80 %; MISSION §4 D6 (upper end)
  double dram_bound_pct = 70;        ///< GPM DRAM bandwidth >= this = bandwidth bound (ours, GPM)
  // --- D7 wrong device / D9 ghosts ---------------------------------------------------------------
  double wrong_device_for_s = 60;  ///< intended GPU idle while the job runs elsewhere
  double held_unused_for_s = 300;  ///< job holds memory on a GPU that stays idle this long
  double ghost_for_s = 30;         ///< pid not visible on the host / zombie, holding memory
  double idle_holder_for_s = 600;  ///< a foreign process holding memory at 0 % sm this long
  // --- D11 utilisation headroom -------------------------------------------------------------------
  double low_util_pct = 40;          ///< MISSION §4 D11 (below 40 % is wasted)
  double healthy_util_low_pct = 70;  ///< MISSION §4 D11 / §7 (70-95 % healthy)
  double healthy_util_high_pct = 95;
  double util_min_span_s = 300;  ///< judge utilisation over at least 5 min of use (ours)
  // --- D12 throttling ----------------------------------------------------------------------------
  double throttle_for_s = 30;  ///< a throttle reason active under load this long (ours;
                               ///< DCGM health watches use similar persistence)
  /// A GPU under load whose SM clock stays under this share of its maximum is clocked below max
  /// (D2's straggler, D12's power cap that costs, D24's cause); ours: boost clocks under a power cap
  /// sit within 10 % of the maximum on a healthy card.
  double throttle_clock_frac = 0.9;
  // --- D16 PCIe -----------------------------------------------------------------------------------
  double pcie_for_s = 60;  ///< link below max under load this long
  // --- D17 host memory pressure ------------------------------------------------------------------
  double psi_mem_some_pct = 10;  ///< PSI memory some avg10 (kernel PSI doc; ours: 10 %)
  double pressure_for_s = 30;
  double swap_growth_mib = 256;   ///< swap used grows this much within an episode
  double low_available_pct = 10;  ///< MemAvailable under 10 % of total (ours)
  /// D14: a GPU whose calls hang (timeouts only, never NVML_ERROR_GPU_IS_LOST) and that answers again
  /// within this long, while the host is under memory pressure (D17's thresholds) or its CPUs are
  /// saturated (cpu_saturated_pct), answered late: the host's problem, not a lost GPU (ours). Calls
  /// still hanging are late too until they have failed this long (the live diagnosis sees them hang).
  double gpu_late_max_s = 30;
  // --- D18 / D19 I/O- and CPU-bound loading -----------------------------------------------------
  double iowait_pct = 20;                     ///< host iowait (ours)
  double psi_io_some_pct = 20;                ///< PSI io some avg10 (ours)
  double disk_read_min_bps = 20 * 1048576.0;  ///< "high disk reads": 20 MiB/s (ours)
  double cpu_saturated_pct = 90;              ///< whole host CPU busy (ours)
  double loading_for_s = 60;
  // --- D21 GPU memory near full / D22 batch advice ------------------------------------------------
  double near_full_for_s = 10;       ///< used >= near_full_pct this long
  double forecast_window_s = 600;    ///< fit the last 10 min for the time-to-full forecast
  double forecast_horizon_s = 3600;  ///< warn when full within 1 h
  double forecast_min_pct = 80;      ///< only forecast above 80 % used
  double batch_margin_frac = 0.10;   ///< keep 10 % of total free (ours; MISSION §5 keeps 2000 MiB)
  double batch_reserve_mib = 2000;   ///< MISSION §5 one-point formula's system/context reserve
  // --- D23 training hang ------------------------------------------------------------------------
  /// A rank hangs when no step ended for max(hang_p90_factor x its recent p90 step time,
  /// hang_floor_s) while its process lives. nvidia-resiliency-ext's fault tolerance computes its
  /// timeouts as the observed interval x safety_factor 5.0 (FaultToleranceConfig).
  double hang_p90_factor = 5;
  double hang_floor_s = 120;       ///< Megatron's example FT step-section timeout (120 s)
  double hang_p90_window_s = 600;  ///< "recent": the steps of the last 10 min before the stall (ours)
  double hang_alive_s = 10;        ///< a rank with no row (heartbeat) this long and no process is gone
  /// Protocol v3 phases: ranks inside the same collective (group and seq) for max(hang_p90_factor x
  /// their recent p90 step time, hang_coll_floor_s) while another live rank of the job is outside it
  /// (in data, compute or the optimizer, in an earlier collective, or silent) are a WARNING naming
  /// that rank, before the critical floor. Ours: half of the minute issue 30 allows for a job with
  /// sub-second steps; far beyond any collective of a healthy job with such steps.
  double hang_coll_floor_s = 30;
  // --- D24 straggler rank -------------------------------------------------------------------------
  /// Relative performance score of a rank = the fastest rank's median step time / its own, over
  /// straggler_window_s (nvidia-resiliency-ext straggler detection, Report.identify_stragglers'
  /// default threshold 0.75, report_time_interval 60 s).
  double straggler_score_frac = 0.75;
  double straggler_window_s = 60;
  double straggler_for_s = 120;    ///< the score stays under the threshold this long (ours: 2 reports)
  double straggler_min_steps = 5;  ///< steps a rank needs in a window to get a score (ours)
  /// With collective timing (protocol v3): score = the fastest rank's median compute per step (step -
  /// data wait - collective wait) / its own, under this for straggler_compute_for_s. Ours: 0.8 finds a
  /// rank 1.25x slower (issue 30: 1.3x within two minutes); a step-weighted median of each rank's rows
  /// over straggler_window_s keeps noisy even ranks within a few percent of each other.
  double straggler_compute_frac = 0.8;
  double straggler_compute_for_s = 60;  ///< ours: the median turns within half a window, + 60 s < 2 min
  // --- D13 Xid, Prometheus rules only ---------------------------------------------------------------
  /// The gauge DCGM_FI_DEV_XID_ERRORS holds the last Xid for ever: the rules' Xid alert fires when a
  /// new Xid arrived within this window and resolves after it (ours: 5 min, several evaluations at
  /// Prometheus' default 1 min evaluation interval).
  double xid_window_s = 300;
  // --- D25 measured data-loader starvation --------------------------------------------------------
  double data_wait_share_pct = 20;  ///< data wait / step time over the window (ours: fixing gives 1.25x)
  double data_wait_for_s = 120;     ///< sustained (ours: as starved_for_s)
  // --- D26 throughput drop ------------------------------------------------------------------------
  double throughput_drop_frac = 0.7;  ///< samples/s under 70 % of the run's steady level (ours)
  double throughput_warmup_s = 120;   ///< the first 2 min of steps are warm-up, not the steady level (ours)
  double throughput_for_s = 120;      ///< sustained (ours)
  // --- D27 communication-bound ------------------------------------------------------------------
  /// Every rank spends at least this share of its step time waiting inside collectives over window_s
  /// (the lowest rank's share: a straggler makes the others wait, but not itself). Ours: a third of
  /// each step; hiding it (overlap) would give up to 1.43x, more than D25's 20 % bar for the loader,
  /// because some collective time is inherent to data parallelism.
  double comm_bound_share_pct = 30;
  double comm_bound_for_s = 120;  ///< sustained (ours: as data_wait_for_s)
  // --- D28 pauses -------------------------------------------------------------------------------
  /// A step at least pause_step_factor x its rank's median step time and pause_min_s long is a pause
  /// (ours: the factor of hang_p90_factor, NVRx's safety factor 5; 1 s: a pause worth its words).
  double pause_step_factor = 5;
  double pause_min_s = 1;
  /// Pauses (their time beyond the median step) cost at least this share of the wall time over
  /// pause_window_s: a finding. Issue 30: "more than a tenth of the wall time".
  double pause_cost_pct = 10;
  double pause_window_s = 600;  ///< ours: holds several checkpoints of a job saving every few minutes

  friend bool operator==(const Thresholds&, const Thresholds&) = default;
};

/// One row of the thresholds table: its configuration name and a pointer to the member.
struct ThresholdInfo {
  std::string_view name;  ///< "starved_util_pct" (the member's name)
  double Thresholds::*field;
  std::string_view source;  ///< where the default comes from
};

/// Every threshold, in declaration order.
std::span<const ThresholdInfo> threshold_table() noexcept;

/// The allowed range of threshold `name` in words ("a percentage, 0 to 100"), from its unit:
/// `_s` durations >= 0.1 s (the shortest sampling interval), `_pct` 0..100, fractions 0..1, MiB / MiB/h / B/s
/// >= 0, counts whole >= 1, frag_reserved_ratio and `_factor` >= 1. nullopt for a name without one (none in
/// threshold_table()).
std::optional<std::string> threshold_range(std::string_view name);

/// Applies one "name=value" (as given to `--threshold`); the value is a plain decimal number
/// (`1.5`, `2e3`; no hex, inf or nan). Error: a phrase naming the problem that does not start with
/// the word "threshold" (callers prefix "--threshold "): "'x' names no threshold (...)",
/// "window_s='5s' is not a decimal number", "window_s=0 is out of range (a duration in seconds, at
/// least 0.1)".
///
/// Relations between thresholds are not checked here (one value at a time may pass through an
/// inconsistent state): check_threshold_relations after the last one.
std::expected<void, std::string> set_threshold(Thresholds& th, std::string_view name_eq_value);

/// The thresholds of `th` that differ from the defaults, as (name, value) in threshold_table()
/// order: what a run stores (RunInfo::thresholds). Empty when all are the defaults.
std::vector<std::pair<std::string, double>> threshold_changes(const Thresholds& th);

/// Applies (name, value) pairs as stored with a run over `th`. A pair with an unknown name or a
/// value outside threshold_range is skipped (a store written by another version, or by hand); the
/// return value names those skipped.
std::vector<std::string> apply_threshold_changes(Thresholds& th,
                                                 const std::vector<std::pair<std::string, double>>& changes);

/// The relations the detectors assume between thresholds: idle_util_pct < busy_util_pct,
/// swing_low_pct < swing_high_pct, low_util_pct <= healthy_util_low_pct <= healthy_util_high_pct.
/// Error: "idle_util_pct=30 must be below busy_util_pct=20 (a GPU cannot be idle and busy at once)".
std::expected<void, std::string> check_threshold_relations(const Thresholds& th);

/// Reads the `[diagnose]` table of a TOML document over `base`: each key a threshold name with a
/// number value. A document without `[diagnose]` gives `base`. Error: parse error, unknown key or a
/// value outside its threshold_range (relations: check_threshold_relations, after any overrides).
std::expected<Thresholds, std::string> thresholds_from_toml(std::string_view toml_text,
                                                            const Thresholds& base = {});

}  // namespace trainmon::diagnose
