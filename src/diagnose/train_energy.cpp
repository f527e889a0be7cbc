// SPDX-License-Identifier: Apache-2.0
#include "trainmon/diagnose/train_energy.h"

#include <algorithm>
#include <set>
#include <vector>

namespace trainmon::diagnose {
namespace {

/// The GPU's counter as a continued total (joules since the first reading, across resets), at the
/// ticks that read it.
struct Continued {
  std::vector<double> t, joules;

  /// Linear between the readings around `x` (x within [t.front(), t.back()]).
  [[nodiscard]] double at(double x) const {
    const auto it = std::lower_bound(t.begin(), t.end(), x);
    if (it == t.begin()) return joules.front();
    if (it == t.end()) return joules.back();
    const auto i = static_cast<std::size_t>(it - t.begin());
    if (t[i] == x || t[i] <= t[i - 1]) return joules[i];
    return joules[i - 1] + (joules[i] - joules[i - 1]) * (x - t[i - 1]) / (t[i] - t[i - 1]);
  }
};

Continued continued(const RunSeries& s, const GpuSeries& g) {
  Continued c;
  double prev = std::numeric_limits<double>::quiet_NaN(), total = 0;
  for (std::size_t i = 0; i < g.energy_j.size() && i < s.t.size(); ++i) {
    const double v = g.energy_j[i];
    if (!std::isfinite(v) || v < 0) continue;
    if (std::isfinite(prev)) total += v >= prev ? v - prev : v;  // a drop: reset, counted from 0 again
    prev = v;
    c.t.push_back(s.t[i]);
    c.joules.push_back(total);
  }
  return c;
}

/// The rank's cumulative steps and samples at the end of each row that completed steps, after a first
/// point at its first step's start.
struct Anchor {
  double t = 0, steps = 0, samples = 0;
};

std::vector<Anchor> anchors(const RankSeries& rank) {
  std::vector<Anchor> out;
  Anchor cum;
  for (const auto& w : rank.rows) {
    if (w.steps == 0) continue;  // heartbeats: no step ended (idle time is not the steps' cost)
    if (out.empty()) {
      if (std::isfinite(w.span_s) && w.span_s > 0) {
        out.push_back({w.t - static_cast<double>(w.span_s), 0, 0});
      } else {
        out.push_back({w.t, 0, 0});  // when its steps began is unknown: start after them
        continue;
      }
    }
    cum.t = w.t;
    cum.steps += w.steps;
    cum.samples += w.samples;  // NaN once a row without samples comes: then unknown
    out.push_back(cum);
  }
  return out;
}

}  // namespace

std::optional<RankEnergy> rank_energy(const RunSeries& s, const RankSeries& rank) {
  if (rank.id.gpu < 0) return std::nullopt;
  const GpuSeries* g = s.gpu(static_cast<unsigned>(rank.id.gpu));
  if (g == nullptr) return std::nullopt;
  const Continued c = continued(s, *g);
  if (c.t.size() < 2) return std::nullopt;

  // ---- the span: the rank's steps within the ticks that read the counter ----
  const auto points = anchors(rank);
  constexpr double kEps = 1e-6;
  std::size_t a = 0;
  while (a < points.size() && points[a].t < c.t.front() - kEps) ++a;
  std::size_t b = points.size();
  while (b > a && points[b - 1].t > c.t.back() + kEps) --b;
  if (b == 0 || b - 1 <= a) return std::nullopt;
  const Anchor& p0 = points[a];
  const Anchor& p1 = points[b - 1];
  if (!(p1.steps > p0.steps)) return std::nullopt;

  RankEnergy e;
  e.gpu = static_cast<unsigned>(rank.id.gpu);
  e.t0 = p0.t;
  e.t1 = p1.t;
  e.energy_j = std::max(
      0.0, c.at(std::clamp(p1.t, c.t.front(), c.t.back())) - c.at(std::clamp(p0.t, c.t.front(), c.t.back())));
  e.steps = p1.steps - p0.steps;
  e.samples = p1.samples - p0.samples;
  if (!std::isfinite(e.samples)) e.samples = std::numeric_limits<double>::quiet_NaN();

  // ---- epochs the job completed ----
  std::set<int> epochs;
  for (const auto& ev : s.train_events)
    if (ev.kind == "epoch_end" && ev.epoch >= 0) epochs.insert(ev.epoch);
  e.epochs = epochs.size();

  // ---- shared: another rank on the GPU, or another process in its list during the span ----
  for (const auto& other : s.train.ranks)
    if (other.id.key != rank.id.key && other.id.gpu == rank.id.gpu) e.shared = true;
  // the ticks in the span and the one on each side of it (a span shorter than a tick has none inside)
  auto tick0 = static_cast<std::size_t>(std::lower_bound(s.t.begin(), s.t.end(), e.t0) - s.t.begin());
  auto tick1 = static_cast<std::size_t>(std::upper_bound(s.t.begin(), s.t.end(), e.t1) - s.t.begin());
  if (tick0 > 0) --tick0;
  if (tick1 < s.t.size()) ++tick1;
  for (const auto& p : g->procs) {
    if (e.shared) break;
    if (p.tick < tick0 || p.tick >= tick1 || p.pid == rank.id.pid) continue;
    // A rank of this run whose own GPU is another one holds only a small context here (a DDP rank
    // touching GPU 0): not a user of this GPU's energy.
    const bool stray_context = std::any_of(
        s.train.ranks.begin(), s.train.ranks.end(),
        [&](const RankSeries& r) { return r.id.pid == p.pid && r.id.gpu >= 0 && r.id.gpu != rank.id.gpu; });
    if (!stray_context) e.shared = true;
  }
  return e;
}

}  // namespace trainmon::diagnose
