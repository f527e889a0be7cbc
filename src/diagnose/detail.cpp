// SPDX-License-Identifier: Apache-2.0
#include "diagnose/detail.h"

#include <memory>

#include "diagnose/train_columns.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace trainmon::diagnose::detail {

double mean(std::span<const float> col, std::size_t i0, std::size_t i1) {
  double sum = 0;
  std::size_t n = 0;
  for (std::size_t i = i0; i <= i1 && i < col.size(); ++i) {
    if (!na(col[i])) {
      sum += col[i];
      ++n;
    }
  }
  return n ? sum / static_cast<double>(n) : NAN;
}

double max_of(std::span<const float> col, std::size_t i0, std::size_t i1) {
  double m = NAN;
  for (std::size_t i = i0; i <= i1 && i < col.size(); ++i)
    if (!na(col[i]) && (na(m) || col[i] > m)) m = col[i];
  return m;
}

double min_of(std::span<const float> col, std::size_t i0, std::size_t i1) {
  double m = NAN;
  for (std::size_t i = i0; i <= i1 && i < col.size(); ++i)
    if (!na(col[i]) && (na(m) || col[i] < m)) m = col[i];
  return m;
}

double last_of(std::span<const float> col, std::size_t i0, std::size_t i1) {
  if (col.empty()) return NAN;
  for (std::size_t i = std::min(i1, col.size() - 1) + 1; i-- > i0;)
    if (!na(col[i])) return col[i];
  return NAN;
}

double first_of(std::span<const float> col, std::size_t i0, std::size_t i1) {
  for (std::size_t i = i0; i <= i1 && i < col.size(); ++i)
    if (!na(col[i])) return col[i];
  return NAN;
}

CounterSpan counter_span(std::span<const float> col, std::size_t i0, std::size_t i1) {
  CounterSpan c;
  double prev = NAN;
  for (std::size_t i = i0; i <= i1 && i < col.size(); ++i) {
    const double v = col[i];
    if (na(v)) continue;
    if (na(prev)) {
      c.first = c.highest = v;
      c.increase = 0;
    } else if (v >= prev) {
      c.increase += v - prev;
    } else {
      if (c.resets++ == 0) {
        c.first_reset_row = i;
        c.before_reset = prev;
      }
      c.increase += v;  // counted again from 0
    }
    c.highest = std::max(c.highest, v);
    c.last = prev = v;
  }
  return c;
}

namespace {

struct RollKey {
  const double* t;
  const float* col;
  std::size_t n;
  double window_s;
  bool operator==(const RollKey&) const = default;
};
struct UseKey {
  const GpuSeries* g;
  std::size_t rows;
  double job_gpu_min_mib;
  bool job, any;
  bool operator==(const UseKey&) const = default;
};
struct Memo {
  const RunSeries* series = nullptr;
  std::vector<const float*> columns;  ///< float_columns(*series)
  std::vector<std::pair<RollKey, std::vector<float>>> roll;
  std::vector<std::pair<UseKey, GpuUse>> use;
  std::shared_ptr<TrainColumns> train;  ///< train_columns(*series), built on first use
};
thread_local Memo* t_memo = nullptr;
/// The last memo's training columns, refilled by the next (train_columns.h "Memory").
thread_local std::unique_ptr<TrainColumns> t_spare_train;

std::vector<float> compute_rolling_mean(std::span<const double> t, std::span<const float> col,
                                        double window_s);
GpuUse compute_gpu_use(const RunSeries& s, const GpuSeries& g, const Thresholds& th, ProcPresence presence);

}  // namespace

RunAllMemo::RunAllMemo(const RunSeries& series) {
  if (t_memo != nullptr) return;
  t_memo = new Memo();
  t_memo->series = &series;
  t_memo->columns = float_columns(series);
  active_ = true;
}

RunAllMemo::~RunAllMemo() {
  if (!active_) return;
  if (t_memo->train && t_memo->train.use_count() == 1)  // nobody holds it: keep its vectors' room
    t_spare_train = std::make_unique<TrainColumns>(std::move(*t_memo->train));
  delete t_memo;
  t_memo = nullptr;
}

std::vector<float> rolling_mean(std::span<const double> t, std::span<const float> col, double window_s) {
  if (t_memo == nullptr || t.data() != t_memo->series->t.data() ||
      !std::binary_search(t_memo->columns.begin(), t_memo->columns.end(), col.data()))
    return compute_rolling_mean(t, col, window_s);
  const RollKey key{t.data(), col.data(), col.size(), window_s};
  for (const auto& [k, v] : t_memo->roll)
    if (k == key) return v;
  return t_memo->roll.emplace_back(key, compute_rolling_mean(t, col, window_s)).second;
}

namespace {

std::vector<float> compute_rolling_mean(std::span<const double> t, std::span<const float> col,
                                        double window_s) {
  std::vector<float> out(col.size(), NAN);
  double sum = 0;
  std::size_t n = 0, lo = 0;
  for (std::size_t i = 0; i < col.size(); ++i) {
    if (!na(col[i])) {
      sum += col[i];
      ++n;
    }
    while (lo < i && t[lo] <= t[i] - window_s) {
      if (!na(col[lo])) {
        sum -= col[lo];
        --n;
      }
      ++lo;
    }
    if (n) out[i] = static_cast<float>(sum / static_cast<double>(n));
  }
  return out;
}

}  // namespace

std::vector<Episode> episodes(std::span<const double> t, std::span<const std::uint8_t> cond, double for_s,
                              double clear_s) {
  std::vector<Episode> out;
  constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  std::size_t start = none, last = none;
  auto close = [&] {
    if (start != none && t[last] - t[start] >= for_s) out.push_back({start, last});
    start = last = none;
  };
  for (std::size_t i = 0; i < cond.size() && i < t.size(); ++i) {
    if (cond[i]) {
      if (start == none) start = i;
      last = i;
    } else if (start != none && t[i] - t[last] > clear_s) {
      close();
    }
  }
  close();
  return out;
}

LinFit fit_line(std::span<const double> x, std::span<const double> y) {
  LinFit f;
  double sx = 0, sy = 0;
  std::size_t n = 0;
  for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
    if (na(x[i]) || na(y[i])) continue;
    sx += x[i];
    sy += y[i];
    ++n;
  }
  f.n = n;
  if (n < 2) return f;
  const double mx = sx / static_cast<double>(n), my = sy / static_cast<double>(n);
  double sxx = 0, sxy = 0, syy = 0;
  for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
    if (na(x[i]) || na(y[i])) continue;
    const double dx = x[i] - mx, dy = y[i] - my;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }
  if (sxx <= 0) return f;
  f.slope = sxy / sxx;
  f.intercept = my - f.slope * mx;
  const double sse = std::max(0.0, syy - f.slope * sxy);
  f.r2 = syy > 0 ? 1.0 - sse / syy : 1.0;
  f.residual_sd = n > 2 ? std::sqrt(sse / static_cast<double>(n - 2)) : 0.0;
  return f;
}

LinFit fit_column(std::span<const double> t, std::span<const float> col, std::size_t i0, std::size_t i1) {
  std::vector<double> x, y;
  for (std::size_t i = i0; i <= i1 && i < col.size(); ++i) {
    if (na(col[i])) continue;
    x.push_back(t[i]);
    y.push_back(col[i]);
  }
  return fit_line(x, y);
}

bool has_job_processes(const RunSeries& s) {
  for (const auto& g : s.gpus)
    for (const auto& p : g.procs)
      if (p.in_job) return true;
  return false;
}

ProcPresence proc_presence(const RunSeries& s) {
  ProcPresence p;
  p.job = has_job_processes(s);
  for (const auto& g : s.gpus) p.any = p.any || !g.procs.empty();
  return p;
}

std::shared_ptr<const TrainColumns> train_columns(const RunSeries& s) {
  if (t_memo == nullptr || &s != t_memo->series) {
    auto fresh = std::make_shared<TrainColumns>();
    compute_train_columns(s, *fresh);
    return fresh;
  }
  if (!t_memo->train) {
    t_memo->train = t_spare_train ? std::make_shared<TrainColumns>(std::move(*t_spare_train))
                                  : std::make_shared<TrainColumns>();
    t_spare_train.reset();
    compute_train_columns(s, *t_memo->train);
  }
  return t_memo->train;
}

GpuUse gpu_use(const RunSeries& s, const GpuSeries& g, const Thresholds& th) {
  return gpu_use(s, g, th, proc_presence(s));
}

GpuUse gpu_use(const RunSeries& s, const GpuSeries& g, const Thresholds& th, ProcPresence presence) {
  if (t_memo == nullptr || &s != t_memo->series) return compute_gpu_use(s, g, th, presence);
  const UseKey key{&g, s.size(), th.job_gpu_min_mib, presence.job, presence.any};
  for (const auto& [k, v] : t_memo->use)
    if (k == key) return v;
  return t_memo->use.emplace_back(key, compute_gpu_use(s, g, th, presence)).second;
}

namespace {

GpuUse compute_gpu_use(const RunSeries& s, const GpuSeries& g, const Thresholds& th, ProcPresence presence) {
  GpuUse u;
  const std::size_t n = s.size();
  u.used.assign(n, 0);
  u.job_mem_mib.assign(n, NAN);
  const bool job = presence.job;
  const bool any_proc = presence.any;
  // Sorted, unique: a binary search per process tick (a std::set insert per tick was a tenth of a
  // live evaluation; the same few pids repeat on every tick).
  std::vector<std::uint32_t>& pids = u.pids;
  if (job || any_proc) {
    for (const auto& p : g.procs) {
      if (p.tick >= n || (job && !p.in_job)) continue;
      if (!na(p.used_mib) && p.used_mib < th.job_gpu_min_mib) continue;
      u.used[p.tick] = 1;
      if (auto it = std::lower_bound(pids.begin(), pids.end(), p.pid); it == pids.end() || *it != p.pid)
        pids.insert(it, p.pid);
      if (!na(p.used_mib))
        u.job_mem_mib[p.tick] = (na(u.job_mem_mib[p.tick]) ? 0.f : u.job_mem_mib[p.tick]) + p.used_mib;
    }
  } else {
    for (std::size_t i = 0; i < n && i < g.mem_used_mib.size(); ++i)
      if (!na(g.mem_used_mib[i]) && g.mem_used_mib[i] >= th.job_gpu_min_mib) u.used[i] = 1;
  }
  for (auto v : u.used) u.used_rows += v;
  return u;
}

}  // namespace

std::vector<unsigned> job_gpus(const RunSeries& s, const Thresholds& th) {
  if (!s.facts.gpus.empty()) {
    auto v = s.facts.gpus;
    std::sort(v.begin(), v.end());
    return v;
  }
  std::vector<unsigned> out;
  const ProcPresence presence = proc_presence(s);
  for (const auto& g : s.gpus)
    if (gpu_use(s, g, th, presence).used_rows > 0) out.push_back(g.index);
  return out;
}

int event_gpu(int ev_gpu, const std::vector<unsigned>& jg) noexcept {
  if (ev_gpu >= 0) return ev_gpu;
  return jg.size() == 1 ? static_cast<int>(jg.front()) : -1;
}

bool torch_plausible(const RunSeries& s, const TrainEvent& e, int gpu) {
  const GpuSeries* g = gpu >= 0 ? s.gpu(static_cast<unsigned>(gpu)) : nullptr;
  if (!g || s.size() == 0) return true;
  const double total_mib = max_of(g->mem_total_mib, 0, s.size() - 1);
  if (na(total_mib) || total_mib <= 0) return true;
  const double total = total_mib * 1048576.0 * 1.0001;
  for (double b : {e.torch_allocated_bytes, e.torch_reserved_bytes, e.torch_peak_bytes})
    if (b > total) return false;
  return true;
}

std::string num(double v, int decimals) {
  if (na(v)) return "N/A";
  return fmt::format("{:.{}f}", v, decimals);
}

std::string dur(double seconds) {
  if (na(seconds)) return "N/A";
  if (seconds < 120) return fmt::format("{:.0f} s", seconds);
  if (seconds < 7200) return fmt::format("{:.0f} min", seconds / 60);
  const auto h = static_cast<long>(seconds / 3600);
  return fmt::format("{} h {:02d} min", h, static_cast<int>((seconds - static_cast<double>(h) * 3600) / 60));
}

std::string gpu_list(const std::vector<unsigned>& gpus) {
  std::string s;
  for (auto g : gpus) fmt::format_to(std::back_inserter(s), "{}GPU{}", s.empty() ? "" : ",", g);
  return s;
}

void put(std::map<std::string, double>& m, const std::string& key, double value) {
  if (std::isfinite(value)) m[key] = value;
}

std::size_t row_at(const RunSeries& s, double t0) {
  return static_cast<std::size_t>(std::lower_bound(s.t.begin(), s.t.end(), t0) - s.t.begin());
}

}  // namespace trainmon::diagnose::detail
