// SPDX-License-Identifier: Apache-2.0
// Shared by the training-loop detectors (D23 hang, D24 straggler, D25 measured data wait, D26
// throughput drop) and by the GPU-side detectors that give way to them (D4, D18, D19): a rank's
// rows in a time range, step-weighted medians, how a rank is named, and which rows the loop's own
// timing covers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "diagnose/detail.h"
#include "diagnose/train_columns.h"

namespace trainmon::diagnose::detail {

/// Rows of `r` with t0 < t <= t1 (indices [first, last)).
inline std::pair<std::size_t, std::size_t> rows_in(const RankSeries& r, double t0, double t1) {
  auto lo = std::upper_bound(r.rows.begin(), r.rows.end(), t0,
                             [](double t, const TrainWindow& w) { return t < w.t; });
  auto hi = std::upper_bound(lo, r.rows.end(), t1, [](double t, const TrainWindow& w) { return t < w.t; });
  return {static_cast<std::size_t>(lo - r.rows.begin()), static_cast<std::size_t>(hi - r.rows.begin())};
}

/// The weighted median of (value, weight) pairs: the smallest value whose own weight and the weight
/// of the values below it reach half the total (the lower median on a tie; what a scan of the sorted
/// pairs returns). Pairs with a NaN value or no positive weight are dropped; NaN when none is left.
/// Selected in expected linear time (three-way quickselect, Hoare's FIND); `v` is reordered. With
/// integer weights (step counts) the sums are exact, so the answer does not depend on the order.
inline double weighted_median(std::vector<std::pair<double, double>>& v) {
  std::erase_if(v, [](const auto& p) { return na(p.first) || !(p.second > 0); });
  if (v.empty()) return NAN;
  double total = 0;
  for (const auto& p : v) total += p.second;
  const double half = 0.5 * total;
  // Invariant: every value in [lo, hi) lies above those left of lo, whose weight is `below` (< half),
  // and below + the weight of [lo, hi) >= half: the answer is in [lo, hi).
  auto lo = v.begin(), hi = v.end();
  double below = 0;
  while (hi - lo > 16) {
    const double a = lo->first, b = lo[(hi - lo) / 2].first, c = (hi - 1)->first;
    const double pivot = std::max(std::min(a, b), std::min(std::max(a, b), c));  // median of three
    const auto m1 = std::partition(lo, hi, [pivot](const auto& p) { return p.first < pivot; });
    const auto m2 = std::partition(m1, hi, [pivot](const auto& p) { return !(pivot < p.first); });
    double less = 0, equal = 0;
    for (auto it = lo; it != m1; ++it) less += it->second;
    for (auto it = m1; it != m2; ++it) equal += it->second;
    if (below + less >= half) {
      hi = m1;
    } else if (below + less + equal >= half) {
      return pivot;
    } else {
      below += less + equal;
      lo = m2;
    }
  }
  std::sort(lo, hi);
  double acc = below;
  for (auto it = lo; it != hi; ++it) {
    acc += it->second;
    if (acc >= half) return it->first;
  }
  return hi > lo ? (hi - 1)->first : v.back().first;
}

/// The weighted median of the (value, weight) pairs in a window that slides forward over a series:
/// what weighted_median() gives for the pairs in the window, with each pair added and removed once
/// (O(log n) each) instead of sorting every window. The window's weights sit in a Fenwick tree
/// (Fenwick 1994, "A new data structure for cumulative frequency tables") indexed by the value's
/// place among the series' sorted distinct values. Exact for integer weights (step counts): the
/// sums are exact, so adding and removing leaves no residue.
class SlidingWeightedMedian {
 public:
  /// `values`: the series' values by position (a NaN one is never counted).
  explicit SlidingWeightedMedian(const std::vector<double>& values)
      : slot_(values.size() < UINT32_MAX ? values.size() : 0, kNone) {
    sorted_.reserve(values.size());
    for (const double x : values)  // a value repeating the one before needs no place of its own
      if (!na(x) && (sorted_.empty() || sorted_.back() != x)) sorted_.push_back(x);
    std::sort(sorted_.begin(), sorted_.end());
    sorted_.erase(std::unique(sorted_.begin(), sorted_.end()), sorted_.end());
    std::uint32_t last = kNone;  // consecutive rows often repeat a value
    for (std::size_t i = 0; i < slot_.size(); ++i) {
      if (na(values[i])) continue;
      if (last == kNone || sorted_[last - 1] != values[i])
        last = static_cast<std::uint32_t>(std::lower_bound(sorted_.begin(), sorted_.end(), values[i]) -
                                          sorted_.begin()) +
               1;
      slot_[i] = last;  // 1-based
    }
    tree_.assign(sorted_.size() + 1, 0.0);
  }
  /// Adds `weight` (> 0, else ignored) for the value at position `i`; a negative `sign` removes it.
  void add(std::size_t i, double weight, int sign = 1) {
    if (i >= slot_.size() || slot_[i] == kNone || !(weight > 0)) return;
    const double w = sign < 0 ? -weight : weight;
    total_ += w;
    for (std::size_t k = slot_[i]; k < tree_.size(); k += k & (~k + 1)) tree_[k] += w;
  }
  /// The smallest value whose weight and the weight below it reach half the window's; NaN when the
  /// window holds none.
  [[nodiscard]] double median() const {
    if (!(total_ > 0)) return NAN;
    const double half = 0.5 * total_;
    std::size_t pos = 0, bit = 1;
    while (bit * 2 < tree_.size()) bit *= 2;
    double below = 0;  // weight of the values up to `pos`
    for (; bit > 0; bit /= 2)
      if (pos + bit < tree_.size() && below + tree_[pos + bit] < half) {
        pos += bit;
        below += tree_[pos];
      }
    return sorted_[std::min(pos, sorted_.size() - 1)];
  }

 private:
  static constexpr std::uint32_t kNone = 0;
  /// Per position: its value's place in sorted_ + 1, kNone for NaN. 32 bits: an hour of 8 ranks' rows
  /// is 29k positions; a series of 2^32 rows or more gets none (every add ignored).
  std::vector<std::uint32_t> slot_;
  std::vector<double> sorted_;  ///< the distinct values, ascending
  std::vector<double> tree_;    ///< 1-based Fenwick tree of the window's weights per distinct value
  double total_ = 0;
};

/// The sorted, distinct times of the rows of `ranks` (only rows with steps when `steps_only`): the
/// ranks' own report times. Each rank's rows are in time order, so they are merged, not sorted.
inline std::vector<double> rank_row_times(const std::vector<RankSeries>& ranks, bool steps_only) {
  std::vector<double> out, one, merged;
  for (const auto& r : ranks) {
    one.resize(r.rows.size());
    std::size_t m = 0;
    for (const auto& w : r.rows)
      if (!steps_only || w.steps > 0) one[m++] = w.t;
    one.resize(m);
    if (!std::is_sorted(one.begin(), one.end())) std::sort(one.begin(), one.end());
    merged.resize(out.size() + one.size());
    merged.erase(std::set_union(out.begin(), out.end(), one.begin(), one.end(), merged.begin()),
                 merged.end());
    out.swap(merged);
  }
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

/// Steps, step-time sum, data-wait sum and the step-weighted median of the rows' p50 step time and
/// p50 data wait over rows (t0, t1] of one rank.
struct RankWindow {
  double steps = 0;
  double samples = 0;  ///< NaN when a row with steps did not say
  double step_s = 0;
  double data_s = 0;
  bool data_known = false;
  double step_median_s = NAN;
  double data_median_s = NAN;
};
/// Over the rank's rows with steps as columns (train_columns.h).
inline RankWindow rank_window(const RankStepColumns& c, double t0, double t1) {
  RankWindow w;
  const auto a = static_cast<std::size_t>(std::upper_bound(c.t.begin(), c.t.end(), t0) - c.t.begin());
  const auto b = static_cast<std::size_t>(
      std::upper_bound(c.t.begin() + static_cast<std::ptrdiff_t>(a), c.t.end(), t1) - c.t.begin());
  std::vector<std::pair<double, double>> step, data;
  step.reserve(b - a);
  data.reserve(b - a);
  for (std::size_t i = a; i < b; ++i) {
    const double n = c.steps[i];
    w.steps += n;
    w.samples = na(c.samples[i]) ? NAN : w.samples + c.samples[i];
    if (!na(c.step_sum[i])) w.step_s += c.step_sum[i];
    if (!na(c.data_sum[i])) {
      w.data_s += c.data_sum[i];
      w.data_known = true;
    }
    step.emplace_back(c.step_v[i], n);
    data.emplace_back(c.data_v[i], n);
  }
  w.step_median_s = weighted_median(step);
  w.data_median_s = weighted_median(data);
  return w;
}

/// What is known of the GPUs the training job computes on: D23-D26 speak of "the job's GPUs" only
/// from this, never from GPUs inferred from memory in use (job_gpus without a job process on a list,
/// or the run's facts): a CPU-only job (gloo) on a machine whose GPU another program keeps busy must
/// not be told its GPUs are busy.
struct TrainGpus {
  enum class Basis : std::uint8_t {
    ranks,         ///< the ranks' own GPU (resolve_rank_gpu: the driver's process list, the CUDA device)
    process_list,  ///< GPUs whose process list holds a process of the job
    cpu,           ///< process lists recorded, none holds a job process, no rank told a CUDA device
    unknown,       ///< nothing says (no process list, no CUDA device)
  };
  std::vector<unsigned> gpus;  ///< ascending; empty for cpu and unknown
  Basis basis = Basis::unknown;
};
inline TrainGpus train_gpus(const RunSeries& s, const Thresholds& th) {
  TrainGpus out;
  bool cuda_told = false;
  for (const auto& r : s.train.ranks) {
    if (r.id.gpu >= 0) out.gpus.push_back(static_cast<unsigned>(r.id.gpu));
    cuda_told = cuda_told || r.id.cuda_device >= 0 || !r.id.gpu_uuid.empty();
  }
  if (!out.gpus.empty()) {
    std::sort(out.gpus.begin(), out.gpus.end());
    out.gpus.erase(std::unique(out.gpus.begin(), out.gpus.end()), out.gpus.end());
    out.basis = TrainGpus::Basis::ranks;
    return out;
  }
  const ProcPresence presence = proc_presence(s);
  if (presence.job) {  // gpu_use then counts only the job's own processes
    for (const auto& g : s.gpus)
      if (gpu_use(s, g, th, presence).used_rows > 0) out.gpus.push_back(g.index);
    if (!out.gpus.empty()) {
      out.basis = TrainGpus::Basis::process_list;
      return out;
    }
  }
  out.basis = presence.any && !cuda_told ? TrainGpus::Basis::cpu : TrainGpus::Basis::unknown;
  return out;
}
/// "; no process of the job is on a GPU ...": what train_gpus() knows when it names no GPU (empty for
/// a known GPU).
inline std::string train_gpus_unknown_text(const TrainGpus& g) {
  switch (g.basis) {
    case TrainGpus::Basis::cpu:
      return N_(
          "the job uses no GPU (none of its processes is on a GPU's process list and no rank reported "
          "a CUDA device): it runs on the CPU");
    case TrainGpus::Basis::unknown:
      return N_(
          "which GPU the job uses is unknown (no rank reported a CUDA device and no GPU process list "
          "shows the job): GPU load is not evidence here");
    default: return {};
  }
}

/// "rank 1" or "process 4242", in both languages (phrase(): "进程 4242").
inline Phrase rank_short(const TrainRank& id) {
  return id.rank >= 0 ? phrase("rank {}", id.rank) : phrase("process {}", id.pid);
}
/// `list` with `item` appended: "a, b" in English, "a、b" in the local text (the msgid "{}, {}": a
/// list's separator, never one between clauses).
inline void add_listed(Phrase& list, const Phrase& item) {
  list = list.empty() ? item : phrase("{}, {}", list, item);
}
/// "rank 1 (pid 4242 on node3, GPU1)": who a rank is, with what is known, in both languages.
inline Phrase rank_name(const TrainRank& id) {
  const bool pid = id.rank >= 0 && id.pid, host = !id.host.empty();
  Phrase more = pid && host ? phrase("pid {} on {}", id.pid, id.host)
                : pid       ? phrase("pid {}", id.pid)
                : host      ? phrase("on {}", id.host)
                            : Phrase{};
  if (id.gpu >= 0) more = more.empty() ? phrase("GPU{}", id.gpu) : phrase("{}, GPU{}", more, id.gpu);
  return more.empty() ? rank_short(id) : phrase("{} ({})", rank_short(id), more);
}

/// 1 at the rows where the training loop's own timing covers the job: some rank reported a step
/// within the trailing `window_s`. There the loop's measured split is the evidence (D23-D26) and the
/// GPU-side inferences of D4 / D18 / D19 stand back, so one problem gives one finding.
inline std::vector<std::uint8_t> timed_rows(const RunSeries& s, double window_s) {
  std::vector<std::uint8_t> out(s.size(), 0);
  if (s.train.empty()) return out;
  const auto cols = train_columns(s);
  for (const auto& c : cols->ranks) {
    std::size_t k = 0;  // first step row with t > s.t[i] - window_s
    const std::vector<double>& step_t = c.t;
    if (step_t.empty()) continue;
    for (std::size_t i = 0; i < s.size(); ++i) {
      while (k < step_t.size() && step_t[k] <= s.t[i] - window_s) ++k;
      if (k < step_t.size() && step_t[k] <= s.t[i] + 1e-9) out[i] = 1;
    }
  }
  return out;
}

/// Mean CPU (per-core basis) of process `pid` over rows [i0, i1]; NaN when not recorded.
inline double proc_cpu(const RunSeries& s, std::uint32_t pid, std::size_t i0, std::size_t i1) {
  const auto* p = s.job.proc(pid);
  if (!p) return NAN;
  double sum = 0;
  std::size_t n = 0;
  auto it = std::lower_bound(p->ticks.begin(), p->ticks.end(), static_cast<std::uint32_t>(i0));
  for (auto k = static_cast<std::size_t>(it - p->ticks.begin()); k < p->ticks.size() && p->ticks[k] <= i1;
       ++k) {
    if (na(p->cpu_pct[k])) continue;
    sum += p->cpu_pct[k];
    ++n;
  }
  return n ? sum / static_cast<double>(n) : NAN;
}

/// The job's CPU as a share of the machine (percent of all online CPUs): the job's own process
/// tree, never the host-wide load that other users cause. NaN where unknown.
inline std::vector<float> job_cpu_share(const RunSeries& s) {
  std::vector<float> out(s.size(), NAN);
  for (std::size_t i = 0; i < s.size(); ++i) {
    const float c = s.job.cpu_pct[i], n = s.host.cpu_count[i];
    if (!na(c) && !na(n) && n > 0) out[i] = std::min(100.f, c / n);
  }
  return out;
}

}  // namespace trainmon::diagnose::detail
