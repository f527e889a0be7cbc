// SPDX-License-Identifier: Apache-2.0
// Internal helpers shared by the detectors: NaN-aware statistics over columns, rolling means,
// episode finding with hysteresis, least squares, and which GPUs the job uses.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "trainmon/core/i18n.h"
#include "trainmon/diagnose/finding.h"
#include "trainmon/diagnose/series.h"
#include "trainmon/diagnose/thresholds.h"

namespace trainmon::diagnose::detail {

inline bool na(float v) noexcept {
  return std::isnan(v);
}
inline bool na(double v) noexcept {
  return std::isnan(v);
}

/// Mean of the non-NaN values in [i0, i1] (inclusive); NaN when none.
double mean(std::span<const float> col, std::size_t i0, std::size_t i1);
/// Max of the non-NaN values in [i0, i1]; NaN when none.
double max_of(std::span<const float> col, std::size_t i0, std::size_t i1);
/// Min of the non-NaN values in [i0, i1]; NaN when none.
double min_of(std::span<const float> col, std::size_t i0, std::size_t i1);
/// Last non-NaN value in [i0, i1]; NaN when none.
double last_of(std::span<const float> col, std::size_t i0, std::size_t i1);
/// First non-NaN value in [i0, i1]; NaN when none.
double first_of(std::span<const float> col, std::size_t i0, std::size_t i1);

/// A cumulative counter (ECC counts, violation time, energy, PCIe replays, retired pages) over rows
/// [i0, i1], reset-aware: a value lower than the one before is a reset (driver reload, GPU reset,
/// counters cleared), never a decrease. `increase` sums the rises, counting the value after a reset
/// as counted again from 0. NaN fields when the range has no value.
struct CounterSpan {
  double first = NAN;     ///< first value
  double last = NAN;      ///< last value (after any reset)
  double highest = NAN;   ///< the highest value seen: the count to report
  double increase = NAN;  ///< what the counter gained over the range, across resets
  std::size_t resets = 0;
  std::size_t first_reset_row = 0;  ///< row of the first value after a reset (when resets > 0)
  double before_reset = NAN;        ///< the value just before the first reset
};
CounterSpan counter_span(std::span<const float> col, std::size_t i0, std::size_t i1);

/// Trailing rolling mean over (t[i] - window_s, t[i]], NaN-aware; NaN where the window has no value.
std::vector<float> rolling_mean(std::span<const double> t, std::span<const float> col, double window_s);

/// The data of every float column of `s` (GPU, host and job columns), ascending addresses.
std::vector<const float*> float_columns(const RunSeries& s);

/// Within one DiagnosisEngine::run_all the series does not change, and several detectors ask for the
/// same rolling means and GPU uses (a third of an evaluation's CPU time was these, recomputed): while
/// a RunAllMemo lives on this thread, rolling_mean(), gpu_use() and train_columns() (train_columns.h:
/// the training rows as compact per-rank columns, read by D23-D26) remember their results for the
/// columns and GPUs of `series` (and only those: a column a detector computed itself is never
/// remembered, so a later one at the same address cannot be mistaken for it), keyed by address and
/// parameters. Outside one (a detector called alone, the tests) nothing is remembered. `series`
/// must outlive it and not change meanwhile. One per thread at a time (an inner one is inert).
class RunAllMemo {
 public:
  explicit RunAllMemo(const RunSeries& series);
  ~RunAllMemo();
  RunAllMemo(const RunAllMemo&) = delete;
  RunAllMemo& operator=(const RunAllMemo&) = delete;

 private:
  bool active_ = false;
};

/// A stretch of rows [i0, i1] where a condition held (with gaps no longer than clear_s).
struct Episode {
  std::size_t i0 = 0;
  std::size_t i1 = 0;
};

/// Episodes of `cond` (1 = holds): an episode continues across rows where it does not hold for at
/// most `clear_s` seconds, and is kept only when it lasts at least `for_s` (t[i1] - t[i0]).
std::vector<Episode> episodes(std::span<const double> t, std::span<const std::uint8_t> cond, double for_s,
                              double clear_s);

/// Ordinary least squares y = a + b x over the pairs where neither is NaN.
struct LinFit {
  double intercept = NAN;
  double slope = NAN;
  double r2 = NAN;
  std::size_t n = 0;
  double residual_sd = NAN;
  [[nodiscard]] bool ok() const { return n >= 2 && !std::isnan(slope); }
};
LinFit fit_line(std::span<const double> x, std::span<const double> y);
/// Fit of a float column against time over rows [i0, i1], x in seconds.
LinFit fit_column(std::span<const double> t, std::span<const float> col, std::size_t i0, std::size_t i1);

/// Per-tick use of one GPU by the job (or, when the run watched no job, by any process, or by
/// memory above th.job_gpu_min_mib when no process list was recorded).
struct GpuUse {
  std::vector<std::uint8_t> used;   ///< 1 when the job holds the GPU at that row
  std::vector<float> job_mem_mib;   ///< memory the job's processes hold (NaN when none known)
  std::vector<std::uint32_t> pids;  ///< job pids seen on this GPU, ascending
  std::size_t used_rows = 0;
};
/// What gpu_use() needs to know of the whole series: whether any process of it belongs to the job,
/// and whether any process list was recorded. O(process ticks of every GPU): a detector computes it
/// once, not once per GPU (that made a live evaluation quadratic in the number of GPUs).
struct ProcPresence {
  bool job = false;  ///< some process tick has in_job
  bool any = false;  ///< some GPU has a process list
};
ProcPresence proc_presence(const RunSeries& s);
GpuUse gpu_use(const RunSeries& s, const GpuSeries& g, const Thresholds& th, ProcPresence presence);
/// The same, computing proc_presence(s) itself.
GpuUse gpu_use(const RunSeries& s, const GpuSeries& g, const Thresholds& th);
/// Whether the series records any process that belongs to the job.
bool has_job_processes(const RunSeries& s);
/// The GPUs the job is meant to use: facts.gpus when known, else GPUs it held at some row.
std::vector<unsigned> job_gpus(const RunSeries& s, const Thresholds& th);

/// The GPU a training event is about: its own `gpu` when the process knew its device, else the job's
/// only GPU when it uses exactly one (`job_gpus`), else -1. Findings about one GPU's memory name it.
int event_gpu(int ev_gpu, const std::vector<unsigned>& job_gpus) noexcept;
/// False when a training event's PyTorch memory cannot be true on GPU `gpu` (allocated, reserved or
/// peak above the GPU's total memory): such an event is not evidence. True when unknown.
bool torch_plausible(const RunSeries& s, const TrainEvent& e, int gpu);

/// "12.3" style number formatting for evidence sentences.
std::string num(double v, int decimals = 0);
/// "1 h 05 min", "42 s" style durations.
std::string dur(double seconds);
/// A word given to say() / advise() as an argument: itself in the English text, its
/// catalogue translation in the local one (core/i18n.h). Made by word("literal"), which marks the
/// literal for the catalogue; Word{} is the empty word.
struct Word {
  std::string_view id;
};
inline Word word(std::string_view id) noexcept {
  return Word{id};
}
inline std::string_view english(Word w) noexcept {
  return w.id;
}
inline std::string_view local(Word w) noexcept {
  return w.id.empty() ? w.id : i18n::tr(w.id);
}
template <typename T>
const T& english(const T& v) noexcept {
  return v;
}
template <typename T>
const T& local(const T& v) noexcept {
  return v;
}

/// A clause made in both languages at once, given to say() / advise() as an argument (or joined
/// with others by +=): phrase(msgid, args...) formats the English `en` and, when a language is
/// selected, the translated `loc` (else empty).
struct Phrase {
  std::string en, loc;
  Phrase& operator+=(const Phrase& o) {
    en += o.en;
    loc += o.loc;
    return *this;
  }
  [[nodiscard]] bool empty() const noexcept { return en.empty(); }
};
inline const std::string& english(const Phrase& p) noexcept {
  return p.en;
}
inline const std::string& local(const Phrase& p) noexcept {
  return p.loc;
}
template <typename... Args>
Phrase phrase(std::string_view msgid, const Args&... args) {
  Phrase p{fmt::format(fmt::runtime(msgid), english(args)...), {}};
  if (!i18n::language().empty()) p.loc = i18n::trf(msgid, local(args)...);
  return p;
}

/// Appends one clause of evidence, the fmt string `msgid` (a literal: say's first argument is taken
/// into the catalogue) formatted with `args`, to `f.evidence` (English: JSON and the store) and, when
/// a language is selected, its translation formatted with the same numbers to `f.evidence_local`.
template <typename... Args>
void say(Finding& f, std::string_view msgid, const Args&... args) {
  f.evidence += fmt::format(fmt::runtime(msgid), english(args)...);
  if (!i18n::language().empty()) f.evidence_local += i18n::trf(msgid, local(args)...);
}
/// The same for `f.advice` / `f.advice_local`. A fixed advice sentence needs no call: assign it
/// marked with N_(), shown_advice() looks it up (also in findings read back from the store).
template <typename... Args>
void advise(Finding& f, std::string_view msgid, const Args&... args) {
  f.advice += fmt::format(fmt::runtime(msgid), english(args)...);
  if (!i18n::language().empty()) f.advice_local += i18n::trf(msgid, local(args)...);
}

/// "GPU0,GPU3".
std::string gpu_list(const std::vector<unsigned>& gpus);

/// Adds `value` under `key` when finite.
void put(std::map<std::string, double>& m, const std::string& key, double value);

/// Index of the first row with t >= t0 (size() when none).
std::size_t row_at(const RunSeries& s, double t0);

}  // namespace trainmon::diagnose::detail
