// SPDX-License-Identifier: Apache-2.0
#include "timeline.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace fake_nvml {
namespace {

/// splitmix64: a fixed, portable hash so noise is identical on every run and platform.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

double as_number(const nlohmann::json& j, const char* what) {
  if (!j.is_number()) throw std::runtime_error(std::string("timeline ") + what + " must be a number");
  return j.get<double>();
}

/// A value: a number, or null for "no value" (NaN: the getters answer NVML's all-ones N/A value,
/// per-process engines "no sample").
double as_value(const nlohmann::json& j) {
  if (j.is_null()) return std::numeric_limits<double>::quiet_NaN();
  return as_number(j, "value");
}

}  // namespace

Timeline Timeline::constant(double v) {
  Timeline t;
  t.points_.emplace_back(0.0, v);
  return t;
}

Timeline Timeline::parse(const nlohmann::json& j, std::uint64_t default_seed) {
  Timeline t;
  t.seed_ = default_seed;
  const nlohmann::json* pts = nullptr;
  if (j.is_number() || j.is_null()) {
    t.points_.emplace_back(0.0, as_value(j));
    return t;
  }
  if (j.is_array()) {
    pts = &j;
  } else if (j.is_object()) {
    if (!j.contains("points")) throw std::runtime_error("timeline object needs \"points\"");
    pts = &j.at("points");
    const std::string interp = j.value("interp", "step");
    if (interp == "linear") {
      t.linear_ = true;
    } else if (interp != "step") {
      throw std::runtime_error("timeline interp must be \"step\" or \"linear\", not \"" + interp + "\"");
    }
    if (j.contains("repeat_s")) t.repeat_s_ = as_number(j.at("repeat_s"), "repeat_s");
    if (j.contains("noise")) t.noise_ = as_number(j.at("noise"), "noise");
    if (j.contains("noise_seed")) t.seed_ = j.at("noise_seed").get<std::uint64_t>();
    if (j.contains("noise_period_s")) t.noise_period_s_ = as_number(j.at("noise_period_s"), "noise_period_s");
    if (j.contains("min")) t.min_ = as_number(j.at("min"), "min");
    if (j.contains("max")) t.max_ = as_number(j.at("max"), "max");
    if (t.noise_period_s_ <= 0) throw std::runtime_error("timeline noise_period_s must be > 0");
  } else {
    throw std::runtime_error("timeline must be a number, an array of [t, v] pairs or an object");
  }
  if (pts->is_number() || pts->is_null()) {
    t.points_.emplace_back(0.0, as_value(*pts));
  } else {
    if (!pts->is_array() || pts->empty())
      throw std::runtime_error("timeline points must be a non-empty array");
    for (const auto& p : *pts) {
      if (!p.is_array() || p.size() != 2) throw std::runtime_error("timeline point must be [t, v]");
      t.points_.emplace_back(as_number(p[0], "time"), as_value(p[1]));
    }
  }
  std::stable_sort(t.points_.begin(), t.points_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  return t;
}

double Timeline::base_at(double t) const {
  if (repeat_s_ > 0 && t >= 0) t = std::fmod(t, repeat_s_);
  return value_once(t);
}

double Timeline::value_once(double t) const {
  if (points_.empty()) return 0;
  if (t <= points_.front().first) return points_.front().second;
  if (t >= points_.back().first) return points_.back().second;
  auto it = std::upper_bound(points_.begin(), points_.end(), t,
                             [](double x, const auto& p) { return x < p.first; });
  const auto& hi = *it;
  const auto& lo = *(it - 1);
  if (!linear_ || hi.first == lo.first) return lo.second;
  return lo.second + (hi.second - lo.second) * (t - lo.first) / (hi.first - lo.first);
}

double Timeline::at(double t) const {
  double v = base_at(t);
  if (std::isnan(v)) return v;  // "no value" stays so (no noise, no clamp)
  if (noise_ != 0) {
    const auto slot = static_cast<std::int64_t>(std::floor(t / noise_period_s_));
    const std::uint64_t h = mix(seed_ ^ mix(static_cast<std::uint64_t>(slot)));
    const double u = static_cast<double>(h >> 11) / 9007199254740992.0;  // [0, 1)
    v += (2.0 * u - 1.0) * noise_;
  }
  return std::clamp(v, min_, max_);
}

double Timeline::integral_once(double t) const {
  // Sum over segments of [0, t]; before the first point and after the last the end values hold.
  double sum = 0, prev_t = 0;
  double prev_v = value_once(0);
  for (const auto& [pt, pv] : points_) {
    if (pt <= 0) continue;
    const double end = std::min(pt, t);
    if (end > prev_t) {
      const double end_v = linear_ ? value_once(end) : prev_v;
      const double seg = (linear_ ? 0.5 * (prev_v + end_v) : prev_v) * (end - prev_t);
      if (!std::isnan(seg)) sum += seg;  // a span without a value adds nothing
    }
    if (pt >= t) return sum;
    prev_t = pt;
    prev_v = pv;
  }
  if (t > prev_t && !std::isnan(prev_v)) sum += prev_v * (t - prev_t);
  return sum;
}

double Timeline::integral(double t) const {
  if (points_.empty() || t <= 0) return 0;
  if (repeat_s_ > 0) {
    const double periods = std::floor(t / repeat_s_);
    return periods * integral_once(repeat_s_) + integral_once(t - periods * repeat_s_);
  }
  return integral_once(t);
}

}  // namespace fake_nvml
