// SPDX-License-Identifier: Apache-2.0
// The training loop's figures over a whole run, as the run's stored summary keeps them (the "train"
// object of summary_to_json) and as `trainmon run`'s end-of-run summary, `show`, `runs` and the
// report print them. Every figure comes from diagnose::train_stats (include/trainmon/diagnose/
// train_series.h), the one place they are computed; this file only names, stores and prints them.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainmon/diagnose/series.h"

namespace trainmon::diagnose {

/// One rank over the run. A figure that could not be computed (the sender did not give it) is nullopt.
struct TrainRankSummary {
  std::int64_t key = 0;  ///< diagnose::TrainRank::key (the global rank when known)
  int rank = -1;         ///< RANK; -1: not reported
  int local_rank = -1;   ///< LOCAL_RANK
  int node_rank = -1;    ///< GROUP_RANK / NODE_RANK
  int world_size = -1;   ///< WORLD_SIZE
  std::string host;      ///< the rank's host name; empty: not reported
  int gpu = -1;          ///< NVML index (diagnose::resolve_rank_gpu); -1: not known
  std::uint64_t steps = 0;
  std::optional<double> samples;
  std::optional<double> samples_per_s;  ///< samples / step time
  std::optional<double> steps_per_s;
  std::optional<double> step_median_s;
  std::optional<double> step_p90_s;
  std::optional<double> data_share;  ///< data wait / step time, 0..1
  /// Collective wait / step time, 0..1 (protocol v3); nullopt from older senders.
  std::optional<double> comm_share;
  /// (step - data wait - collective wait) / steps, seconds: the rank's own work per step.
  std::optional<double> compute_mean_s;
  // ---- energy (diagnose::rank_energy): nullopt where the GPU, its counter or the span is unknown ----
  /// Joules the rank's GPU used over the rank's steps (NVML's total-energy counter); the whole GPU's
  /// when energy_shared.
  std::optional<double> energy_j;
  /// The GPU was used by another rank or process meanwhile: the per-step figures are not given.
  bool energy_shared = false;
  std::optional<double> j_per_step;    ///< energy_j / steps in the span (not when shared)
  std::optional<double> j_per_sample;  ///< energy_j / samples in the span (not when shared)
  std::optional<double> wh_per_epoch;  ///< energy_j / 3600 / epochs the job completed (not when shared)
  friend bool operator==(const TrainRankSummary&, const TrainRankSummary&) = default;
};

/// The job over the run: diagnose::TrainStats's job figures (samples/s summed over ranks, steps and
/// median of the slowest rank, data-wait share over every rank's step time) and every rank that
/// completed a step.
struct TrainSummary {
  std::uint64_t steps = 0;
  std::optional<double> samples;
  std::optional<double> samples_per_s;
  std::optional<double> steps_per_s;
  std::optional<double> step_median_s;
  std::optional<double> data_share;
  std::optional<double> comm_share;  ///< collective wait over every rank's step time (protocol v3)
  /// The job's energy when every rank with steps has its own GPU's (none shared): the sum over ranks.
  std::optional<double> energy_j;
  bool energy_shared = false;          ///< some rank's GPU was shared: no job figure
  std::optional<double> j_per_step;    ///< sum of the ranks' J/step: one step of every rank
  std::optional<double> j_per_sample;  ///< energy_j / every rank's samples in their spans
  std::optional<double> wh_per_epoch;  ///< energy_j / 3600 / epochs the job completed
  std::vector<TrainRankSummary> ranks;
  friend bool operator==(const TrainSummary&, const TrainSummary&) = default;
};

/// The summary of `series` over [t0, t1] (run clock); nullopt when no rank completed a step (a run
/// without training data has no summary at all, never zeros).
std::optional<TrainSummary> summarize_train(const diagnose::TrainSeries& series,
                                            double t0 = -std::numeric_limits<double>::infinity(),
                                            double t1 = std::numeric_limits<double>::infinity());

/// The same with energy: each rank's GPU energy over its steps (diagnose::rank_energy of `run`, the whole
/// run) and the job's sum.
std::optional<TrainSummary> summarize_train(const diagnose::RunSeries& run);

/// {"steps", "samples", "samples_per_s", "steps_per_s", "step_median_s", "data_share", "comm_share",
/// "energy_j", "energy_wh", "energy_shared", "j_per_step", "j_per_sample", "wh_per_epoch",
/// "ranks": [{"key",
/// "rank", "local_rank", "node_rank", "world_size", "host", "gpu", "steps", ...}]}; unknown figures and
/// identity fields are null (energy figures too: never 0 for unknown).
nlohmann::json train_summary_to_json(const TrainSummary& s);
/// Inverse of train_summary_to_json; nullopt for anything that is not such an object (or has no step).
std::optional<TrainSummary> train_summary_from_json(const nlohmann::json& j);

// ---- text, shared by the summary, `show`, `runs`, `top` ----------------------------------------

/// Samples per second: "1234.5", "123456" from 100,000 on; "" for NaN or negative.
std::string format_samples_per_s(double v);
/// A step time: "32us" under 1 ms (ASCII u, as perf and ping print), "4.2ms" under 10 ms, "0.412s" under 10
/// s, "12.34s" under 100 s, "123.4s" under 1000 s, "1234s"; "" for NaN or negative. At most 6 columns up to
/// 99,999 s.
std::string format_step_s(double seconds);
/// A 0..1 share as "12.3%" (at most 6 columns); "" for NaN.
std::string format_share_pct(double share);
/// Joules: "0.123 J" under 1, "12.3 J" under 100, "1234 J" under 10,000, "12.3 kJ", "1.23 MJ" from 1e6;
/// "" for NaN or negative.
std::string format_joules(double j);
/// Watt-hours from joules: "0.123 Wh" under 1 Wh, "1.23 Wh" under 10, "12.3 Wh" under 1000, "1.23 kWh"; ""
/// for NaN or negative.
std::string format_wh(double j);
/// The energy figures of `r`: "28.1 J/step, 3.51 J/sample, 0.31 Wh (0.16 Wh/epoch)" with what is known;
/// "GPU shared (1.2 kJ for the whole GPU)" when shared; "" when no energy is known.
std::string format_energy_figures(const TrainRankSummary& r);
/// "rank 1" (or "pid 4242" for a rank without RANK), then " (host, GPU 2)" with what is known (the
/// reader's language).
std::string describe_rank(const TrainRankSummary& r);

/// "1234.5 samples/s, step 0.412s median (p90 0.450s), data wait 12.3%, 1200 steps" with the figures
/// that are known (p90 only when given), then the energy figures when known (format_energy_figures),
/// in the reader's language.
std::string format_train_figures(const TrainRankSummary& r);
/// Lines for people, each `indent` + text + '\n': the job's figures ("training: ..."), then with
/// several ranks one line per rank ("  rank 0 (node1, GPU 0): ..."). In the reader's language
/// (core/i18n.h): the words translated, the numbers and units as they are.
std::string format_train_summary(const TrainSummary& s, std::string_view indent);
/// The same with the first line's label given (`label` + figures: `show` pads it like its other rows).
std::string format_train_summary(const TrainSummary& s, std::string_view indent, std::string_view label);

}  // namespace trainmon::diagnose
