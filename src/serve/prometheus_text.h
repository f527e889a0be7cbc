// SPDX-License-Identifier: Apache-2.0
// Writing the Prometheus text exposition format (version 0.0.4): families with # HELP and # TYPE,
// samples with their already-rendered labels; NaN and infinite values are left out (readings we do
// not have). Used by every /metrics renderer of serve.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include "trainmon/core/reading.h"
#include "trainmon/core/text_escape.h"

namespace trainmon::serve::metrics {

using Opt = std::optional<double>;

template <class T>
inline Opt val(const Reading<T>& r) {
  if (!r.ok()) return std::nullopt;
  return static_cast<double>(r.value);
}
template <class T>
inline Opt scaled(const Reading<T>& r, double factor) {
  if (!r.ok()) return std::nullopt;
  return static_cast<double>(r.value) * factor;
}

/// One metric family being written: # HELP, # TYPE once, then samples.
class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  void family(std::string_view name, std::string_view type, std::string_view help) {
    name_ = name;
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += text::prometheus_help(help);
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  /// `labels` is the already-rendered text between braces (may be empty).
  void sample(std::string_view labels, double v) {
    if (!std::isfinite(v)) return;  // NaN / Inf are readings we do not have
    out_ += name_;
    if (!labels.empty()) {
      out_ += '{';
      out_ += labels;
      out_ += '}';
    }
    out_ += ' ';
    out_ += fmt::format("{}", v);
    out_ += '\n';
  }

 private:
  std::string& out_;
  std::string name_;
};

inline void add_label(std::string& s, std::string_view k, std::string_view v) {
  if (!s.empty()) s += ',';
  s += k;
  s += "=\"";
  s += text::prometheus_label_value(v);
  s += '"';
}

}  // namespace trainmon::serve::metrics
