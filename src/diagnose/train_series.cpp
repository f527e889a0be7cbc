// SPDX-License-Identifier: Apache-2.0
#include "trainmon/diagnose/train_series.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>

namespace trainmon::diagnose {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool known(double v) {
  return !std::isnan(v);
}

/// A window's step-time distribution, rebuilt from what the sender keeps: n steps whose sorted
/// values have known ranks — min (rank 1), the nearest-rank p50 / p90 / p99 (rank ceil(q n), as
/// python/trainmon/_timing.py computes them) and max (rank n). Between two known ranks the steps are
/// spread evenly in value; a rank that is known is exact. So a window of 2 steps (0.05 s, 40 s) is
/// those two steps, not 40 % of its steps between them, which a CDF through (p50, .5) and
/// (p90, .9) claimed. Missing points fall back to the mean (sum / n).
struct Cdf {
  std::array<double, 5> x{};  // values, seconds, non-decreasing
  std::array<double, 5> c{};  // how many of the window's steps are <= x[i]
  double n = 0;

  static std::optional<Cdf> of(const StepStats& s, std::uint32_t n) {
    if (n == 0) return std::nullopt;
    const double mean = known(s.sum) ? s.sum / n : kNaN;
    auto pick = [&](float v, double fallback) { return known(v) ? static_cast<double>(v) : fallback; };
    Cdf cdf;
    cdf.n = n;
    const double p50 = pick(s.p50, mean);
    if (!known(p50)) return std::nullopt;
    cdf.x = {pick(s.min, p50), p50, pick(s.p90, p50), pick(s.p99, pick(s.p90, p50)), 0};
    cdf.x[4] = pick(s.max, cdf.x[3]);
    for (std::size_t i = 1; i < cdf.x.size(); ++i) cdf.x[i] = std::max(cdf.x[i], cdf.x[i - 1]);  // monotone
    const double dn = n;
    cdf.c = {1, rank_of(0.5, dn), rank_of(0.9, dn), rank_of(0.99, dn), dn};
    if (known(s.sum)) cdf.respect_sum(s.sum);
    return cdf;
  }

  /// The smallest sum the points allow: every step is at least the known point at or below its rank.
  double least_sum() const {
    double s = x[4];  // the last step is the max
    for (std::size_t i = 0; i + 1 < x.size(); ++i) s += std::max(0.0, c[i + 1] - c[i]) * x[i];
    return s;
  }

  /// A window whose points claim more time than its exact sum holds (rows written before the recorder's
  /// single merge per tick, whose re-sketched p90 / p99 could reach the max: 28 steps with one of
  /// 1.5 s stored p90 = 1.5 s) has impossible interior points: from the top down, each one is
  /// lowered to the mean of the steps but the max, (sum - max) / (n - 1), never under the point
  /// below it, until the sum allows them. A consistent window is left as it is.
  void respect_sum(double sum) {
    if (n < 2) return;
    const double slack = 1e-4 * sum + 1e-6;  // floats of the store
    if (least_sum() <= sum + slack) return;
    const double rest = std::clamp((sum - x[4]) / (n - 1), x[0], x[4]);
    for (std::size_t i = 3; i >= 1 && least_sum() > sum + slack; --i)
      if (x[i] > rest) x[i] = std::max(rest, x[i - 1]);
    for (std::size_t i = 1; i < x.size(); ++i) x[i] = std::max(x[i], x[i - 1]);
  }

  /// The nearest rank of quantile q among n sorted values (1-based), the senders' definition.
  static double rank_of(double q, double n) { return std::clamp(std::ceil(q * n), 1.0, n); }

  /// How many steps of the window are <= v.
  double count_le(double v) const {
    if (v < x[0]) return 0;
    if (v >= x[4]) return n;
    std::size_t i = 0;  // the last known rank at or below v
    while (i + 1 < x.size() && x[i + 1] <= v) ++i;
    const std::size_t j = i + 1;                            // x[j] > v
    const double between = std::max(0.0, c[j] - c[i] - 1);  // steps strictly between the two ranks
    return c[i] + between * (v - x[i]) / (x[j] - x[i]);
  }
};

/// The nearest-rank q-quantile of all the windows' steps together: the smallest value with at least
/// ceil(q N) of the N steps at or below it (bisection on the value).
double mixture_quantile(const std::vector<Cdf>& cdfs, double q) {
  if (cdfs.empty()) return kNaN;
  if (cdfs.size() == 1) {
    // One window: its own points exactly where they exist.
    const auto& c = cdfs.front();
    if (q == 0.5) return c.x[1];
    if (q == 0.9) return c.x[2];
    if (q == 0.99) return c.x[3];
  }
  double lo = cdfs.front().x[0], hi = cdfs.front().x[4], total = 0;
  for (const auto& c : cdfs) {
    lo = std::min(lo, c.x[0]);
    hi = std::max(hi, c.x[4]);
    total += c.n;
  }
  const double target = Cdf::rank_of(q, total);
  auto count_le = [&](double v) {
    double k = 0;
    for (const auto& c : cdfs) k += c.count_le(v);
    return k;
  };
  if (count_le(lo) >= target) return lo;
  for (int it = 0; it < 60 && hi - lo > 1e-9 * std::max(1.0, hi); ++it) {
    const double mid = 0.5 * (lo + hi);
    (count_le(mid) >= target ? hi : lo) = mid;
  }
  return hi;
}

void merge_stats(StepStats& into, std::uint32_t n_into, const StepStats& next, std::uint32_t n_next) {
  if (n_next == 0) return;
  if (n_into == 0) {
    into = next;
    return;
  }
  std::vector<Cdf> cdfs;
  if (auto a = Cdf::of(into, n_into)) cdfs.push_back(*a);
  if (auto b = Cdf::of(next, n_next)) cdfs.push_back(*b);
  StepStats out;
  auto add = [](float a, float b) { return known(a) && known(b) ? a + b : known(a) ? a : b; };
  out.sum = add(into.sum, next.sum);
  out.min = known(into.min) && known(next.min) ? std::min(into.min, next.min)
                                               : (known(into.min) ? into.min : next.min);
  out.max = known(into.max) && known(next.max) ? std::max(into.max, next.max)
                                               : (known(into.max) ? into.max : next.max);
  if (cdfs.size() == 2) {
    out.p50 = static_cast<float>(mixture_quantile(cdfs, 0.5));
    out.p90 = static_cast<float>(mixture_quantile(cdfs, 0.9));
    out.p99 = static_cast<float>(mixture_quantile(cdfs, 0.99));
  } else {
    const auto& keep = known(into.p50) ? into : next;
    out.p50 = keep.p50;
    out.p90 = keep.p90;
    out.p99 = keep.p99;
  }
  into = out;
}

double add_known(double a, double b) {
  if (!known(a)) return b;
  if (!known(b)) return a;
  return a + b;
}

}  // namespace

bool train_key_less(std::int64_t a, std::int64_t b) noexcept {
  if ((a >= 0) != (b >= 0)) return a >= 0;
  return a >= 0 ? a < b : a > b;
}

void update_identity(TrainRank& into, const TrainRank& from) {
  if (from.rank >= 0) into.rank = from.rank;
  if (from.local_rank >= 0) into.local_rank = from.local_rank;
  if (from.world_size >= 0) into.world_size = from.world_size;
  if (from.node_rank >= 0) into.node_rank = from.node_rank;
  if (!from.host.empty()) into.host = from.host;
  if (from.pid != 0) into.pid = from.pid;
  if (from.cuda_device >= 0) into.cuda_device = from.cuda_device;
  if (!from.gpu_uuid.empty()) into.gpu_uuid = from.gpu_uuid;
  if (!from.cuda_visible_devices.empty()) into.cuda_visible_devices = from.cuda_visible_devices;
  if (!from.cuda_device_order.empty()) into.cuda_device_order = from.cuda_device_order;
  if (from.gpu >= 0) into.gpu = from.gpu;
  if (!from.framework.empty()) into.framework = from.framework;
  if (from.stack_signal > 0) into.stack_signal = from.stack_signal;
  if (from.lines_s >= 0) into.lines_s = from.lines_s;
}

namespace {}  // namespace

std::string_view train_phase_name(TrainPhase p) noexcept {
  switch (p) {
    case TrainPhase::data: return "data";
    case TrainPhase::compute: return "compute";
    case TrainPhase::idle: return "idle";
    case TrainPhase::collective: return "collective";
    case TrainPhase::optimizer: return "optimizer";
    case TrainPhase::unknown: break;
  }
  return "unknown";
}

std::optional<TrainPhase> parse_train_phase(std::string_view name) noexcept {
  for (auto p : {TrainPhase::unknown, TrainPhase::data, TrainPhase::compute, TrainPhase::idle,
                 TrainPhase::collective, TrainPhase::optimizer})
    if (train_phase_name(p) == name) return p;
  return std::nullopt;
}

std::int64_t train_rank_key(int rank, std::uint32_t pid) noexcept {
  return rank >= 0 ? rank : -1 - static_cast<std::int64_t>(pid);
}

TrainWindow merge_windows(std::span<const TrainWindow> parts) {
  TrainWindow out;
  if (parts.empty()) return out;
  out = parts.front();
  for (std::size_t i = 1; i < parts.size(); ++i) merge_windows(out, parts[i]);
  if (parts.size() < 3) return out;  // two windows: merge_windows already used both sketches
  // The percentiles again, from every part's own points at once: folding one by one re-sketches
  // the running result each time, and steps between its points spread up to the max.
  auto redo = [&](StepStats TrainWindow::*which) {
    std::vector<Cdf> cdfs;
    for (const auto& p : parts)
      if (p.steps > 0)
        if (auto c = Cdf::of(p.*which, p.steps)) cdfs.push_back(*c);
    if (cdfs.size() < 2) return;
    auto& st = out.*which;
    st.p50 = static_cast<float>(mixture_quantile(cdfs, 0.5));
    st.p90 = static_cast<float>(mixture_quantile(cdfs, 0.9));
    st.p99 = static_cast<float>(mixture_quantile(cdfs, 0.99));
  };
  redo(&TrainWindow::step);
  redo(&TrainWindow::data);
  redo(&TrainWindow::comm);
  return out;
}

void merge_windows(TrainWindow& into, const TrainWindow& next) {
  merge_stats(into.step, into.steps, next.step, next.steps);
  merge_stats(into.data, into.steps, next.data, next.steps);
  merge_stats(into.comm, into.steps, next.comm, next.steps);
  into.samples = add_known(into.samples, next.samples);
  if (known(into.span_s) && known(next.span_s)) {
    into.span_s += next.span_s;
  } else if (known(next.span_s)) {
    into.span_s = next.span_s;
  }
  into.steps += next.steps;
  into.t = std::max(into.t, next.t);
  auto later = [](double& a, double b) {
    if (known(b)) a = b;
  };
  later(into.total_steps, next.total_steps);
  later(into.total_samples, next.total_samples);
  later(into.total_step_s, next.total_step_s);
  later(into.total_data_s, next.total_data_s);
  later(into.total_comm_s, next.total_comm_s);
  later(into.last_step_t, next.last_step_t);
  if (next.phase != TrainPhase::unknown) {
    into.phase = next.phase;
    into.phase_t = next.phase_t;
    into.coll = next.coll;
  }
}

const RankSeries* TrainSeries::find(std::int64_t key) const noexcept {
  for (const auto& r : ranks)
    if (r.id.key == key) return &r;
  return nullptr;
}

RankSeries& TrainSeries::upsert(const TrainRank& id) {
  auto it = std::find_if(ranks.begin(), ranks.end(), [&](const RankSeries& r) { return r.id.key == id.key; });
  if (it == ranks.end()) {
    it = std::find_if(ranks.begin(), ranks.end(),
                      [&](const RankSeries& r) { return train_key_less(id.key, r.id.key); });
    it = ranks.insert(it, RankSeries{});
    it->id.key = id.key;
  }
  update_identity(it->id, id);
  return *it;
}

void append_train_window(TrainSeries& series, const TrainRank& id, const TrainWindow& w) {
  auto& r = series.upsert(id);
  if (r.rows.empty() || r.rows.back().t <= w.t) {
    r.rows.push_back(w);
    return;
  }
  auto it = std::upper_bound(r.rows.begin(), r.rows.end(), w.t,
                             [](double t, const TrainWindow& row) { return t < row.t; });
  r.rows.insert(it, w);
}

TrainSeries slice(const TrainSeries& s, double t0, double t1) {
  TrainSeries out;
  out.ranks.reserve(s.ranks.size());
  for (const auto& r : s.ranks) {
    RankSeries nr;
    nr.id = r.id;
    auto lo = std::lower_bound(r.rows.begin(), r.rows.end(), t0,
                               [](const TrainWindow& row, double t) { return row.t < t; });
    auto hi =
        std::upper_bound(lo, r.rows.end(), t1, [](double t, const TrainWindow& row) { return t < row.t; });
    nr.rows.assign(lo, hi);
    out.ranks.push_back(std::move(nr));
  }
  return out;
}

TrainStats train_stats(const TrainSeries& s, double t0, double t1) {
  TrainStats out;
  double job_step_s = 0, job_data_s = 0, job_comm_s = 0;
  bool job_data_known = false, job_comm_known = false;
  for (const auto& r : s.ranks) {
    RankTrainStats st;
    st.key = r.id.key;
    auto lo = std::lower_bound(r.rows.begin(), r.rows.end(), t0,
                               [](const TrainWindow& row, double t) { return row.t < t; });
    auto hi =
        std::upper_bound(lo, r.rows.end(), t1, [](double t, const TrainWindow& row) { return t < row.t; });
    std::uint64_t steps = 0;
    double samples = kNaN, step_s = kNaN, data_s = kNaN, comm_s = kNaN;
    std::vector<Cdf> step_cdf;
    for (auto it = lo; it != hi; ++it) {
      steps += it->steps;
      if (it->steps > 0) {
        samples = add_known(samples, it->samples);
        step_s = add_known(step_s, it->step.sum);
        data_s = add_known(data_s, it->data.sum);
        comm_s = add_known(comm_s, it->comm.sum);
        if (auto c = Cdf::of(it->step, it->steps)) step_cdf.push_back(*c);
      }
      if (known(it->last_step_t))
        st.last_step_t = known(st.last_step_t) ? std::max(st.last_step_t, it->last_step_t) : it->last_step_t;
      if (it->phase != TrainPhase::unknown) st.phase = it->phase;
    }
    // The senders' cumulative totals are exact even when windows were dropped between the ends.
    if (lo != hi) {
      const auto& first = *lo;
      const auto& last = *(hi - 1);
      auto span_total = [&](double first_total, double first_own, double last_total, double fallback) {
        if (!known(first_total) || !known(last_total)) return fallback;
        const double before = first_total - (known(first_own) ? first_own : 0);
        const double v = last_total - before;
        return v >= 0 ? v : fallback;  // a restarted sender counts from 0 again
      };
      steps = static_cast<std::uint64_t>(
          span_total(first.total_steps, first.steps, last.total_steps, static_cast<double>(steps)));
      samples =
          span_total(first.total_samples, first.steps ? first.samples : 0.0, last.total_samples, samples);
      step_s = span_total(first.total_step_s, first.steps ? static_cast<double>(first.step.sum) : 0.0,
                          last.total_step_s, step_s);
      data_s = span_total(first.total_data_s, first.steps ? static_cast<double>(first.data.sum) : 0.0,
                          last.total_data_s, data_s);
      comm_s = span_total(first.total_comm_s, first.steps ? static_cast<double>(first.comm.sum) : 0.0,
                          last.total_comm_s, comm_s);
    }
    st.steps = static_cast<std::uint32_t>(std::min<std::uint64_t>(steps, UINT32_MAX));
    if (steps > 0) {
      st.samples = samples;
      if (known(step_s) && step_s > 0) {
        st.samples_per_s = known(samples) ? samples / step_s : kNaN;
        st.steps_per_s = static_cast<double>(steps) / step_s;
        st.step_mean_s = step_s / static_cast<double>(steps);
        if (known(data_s)) st.data_share = std::clamp(data_s / step_s, 0.0, 1.0);
        if (known(comm_s)) st.comm_share = std::clamp(comm_s / step_s, 0.0, 1.0);
        if (known(data_s) && known(comm_s))
          st.compute_mean_s = std::max(0.0, step_s - data_s - comm_s) / static_cast<double>(steps);
      }
      st.step_median_s = mixture_quantile(step_cdf, 0.5);
      st.step_p90_s = mixture_quantile(step_cdf, 0.9);
      st.step_p99_s = mixture_quantile(step_cdf, 0.99);
      out.steps = std::max<std::uint64_t>(out.steps, steps);
      out.samples = add_known(out.samples, st.samples);
      out.samples_per_s = add_known(out.samples_per_s, st.samples_per_s);
      if (known(st.steps_per_s))
        out.steps_per_s = known(out.steps_per_s) ? std::min(out.steps_per_s, st.steps_per_s) : st.steps_per_s;
      if (known(st.step_median_s))
        out.step_median_s =
            known(out.step_median_s) ? std::max(out.step_median_s, st.step_median_s) : st.step_median_s;
      if (known(step_s) && step_s > 0) {
        job_step_s += step_s;
        if (known(data_s)) {
          job_data_s += data_s;
          job_data_known = true;
        }
        if (known(comm_s)) {
          job_comm_s += comm_s;
          job_comm_known = true;
        }
      }
    }
    out.ranks.push_back(st);
  }
  if (job_data_known && job_step_s > 0) out.data_share = std::clamp(job_data_s / job_step_s, 0.0, 1.0);
  if (job_comm_known && job_step_s > 0) out.comm_share = std::clamp(job_comm_s / job_step_s, 0.0, 1.0);
  return out;
}

std::optional<unsigned> resolve_rank_gpu(const TrainRank& id, std::span<const NvmlGpuRef> gpus) {
  // 1. The driver's own word: the GPU whose process list holds the rank's pid.
  if (id.pid != 0) {
    std::optional<unsigned> best;
    std::uint64_t most = 0;
    for (const auto& g : gpus) {
      for (const auto& [pid, bytes] : g.procs) {
        if (pid != id.pid) continue;
        if (!best || bytes > most || (bytes == most && g.index < *best)) {
          best = g.index;
          most = bytes;
        }
      }
    }
    if (best) return best;
  }
  // 2. The device's UUID as torch told it.
  if (!id.gpu_uuid.empty())
    if (auto i = nvml_index_of_uuid(id.gpu_uuid, gpus)) return i;
  const bool pci_order = cuda_pci_bus_id_order(id.cuda_device_order);
  // 3. CUDA_VISIBLE_DEVICES, entry number cuda_device.
  if (const auto entries = cuda_visible_entries(id.cuda_visible_devices); !entries.empty()) {
    int pos = id.cuda_device;
    if (pos < 0 && entries.size() == 1) pos = 0;
    if (pos < 0 || static_cast<std::size_t>(pos) >= entries.size()) return std::nullopt;
    // An integer only in PCI bus order: CUDA's default order is fastest first, unknown to NVML.
    return nvml_index_of_cuda_entry(entries[static_cast<std::size_t>(pos)], pci_order, gpus);
  }
  // 4. The CUDA index itself.
  if (id.cuda_device >= 0) {
    if (gpus.size() == 1 && id.cuda_device == 0) return gpus.front().index;
    if (pci_order)
      for (const auto& g : gpus)
        if (g.index == static_cast<unsigned>(id.cuda_device)) return g.index;
  }
  return std::nullopt;
}

}  // namespace trainmon::diagnose
