// SPDX-License-Identifier: Apache-2.0
#include "trainmon/recorder/resource_line.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <vector>

#include "trainmon/core/i18n.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/runner/oom.h"

namespace trainmon::recorder {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::string pct(std::optional<double> v) {
  return v ? fmt::format("{:.1f}", *v) : std::string("N/A");
}

}  // namespace

std::optional<double> gpu_utilization(const GpuSample& gpu) {
  if (!gpu.gpu_utilization_samples.empty()) {
    double sum = 0;
    for (const auto& s : gpu.gpu_utilization_samples) sum += s.value;
    return sum / static_cast<double>(gpu.gpu_utilization_samples.size());
  }
  if (gpu.utilization_gpu_pct.ok()) return static_cast<double>(*gpu.utilization_gpu_pct);
  return std::nullopt;
}

std::string short_gpu_name(std::string_view name) {
  static constexpr std::string_view kVendor[] = {"NVIDIA", "Tesla", "GeForce", "Quadro"};
  static constexpr std::string_view kTwoWord[] = {"RTX", "GTX", "TITAN", "Titan"};
  std::vector<std::string_view> words;
  for (std::size_t i = 0; i < name.size();) {
    while (i < name.size() && std::isspace(static_cast<unsigned char>(name[i]))) ++i;
    std::size_t j = i;
    while (j < name.size() && !std::isspace(static_cast<unsigned char>(name[j]))) ++j;
    if (j > i) {
      auto w = name.substr(i, j - i);
      if (std::find(std::begin(kVendor), std::end(kVendor), w) == std::end(kVendor)) words.push_back(w);
    }
    i = j;
  }
  auto model = [](std::string_view w) { return w.substr(0, w.find('-')); };
  if (words.empty()) {
    auto t = name;
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
    return t.empty() ? "?" : std::string(t);
  }
  if (words.size() > 1 && std::find(std::begin(kTwoWord), std::end(kTwoWord), words[0]) != std::end(kTwoWord))
    return fmt::format("{} {}", words[0], model(words[1]));
  const auto m = model(words[0]);
  return std::string(m.empty() ? words[0] : m);
}

std::string format_train_part(const diagnose::TrainStats& t) {
  std::string out;
  auto add = [&](std::string s) {
    if (!out.empty()) out += ' ';
    out += s;
  };
  if (std::isfinite(t.samples_per_s)) add(fmt::format("{:.1f} samples/s", t.samples_per_s));
  if (std::isfinite(t.step_median_s)) add(fmt::format("step {:.3f}s", t.step_median_s));
  // The labels as python/trainmon/_format.py's (the same msgids): numbers, "samples/s", "step" stay.
  if (std::isfinite(t.data_share)) add(i18n::trf("data {:.1f}%", 100.0 * t.data_share));
  return out;
}

std::string format_resource_line(const Snapshot& snap, std::int64_t elapsed_ms,
                                 const std::optional<JobTotals>& job, const std::optional<std::string>& epoch,
                                 const diagnose::TrainStats* train) {
  std::vector<std::string> parts;
  std::string gpus;
  for (const auto& g : snap.gpus) {
    std::optional<double> mem;
    if (g.memory_used_bytes.ok() && g.memory_total_bytes.ok() && *g.memory_total_bytes > 0) {
      mem = 100.0 * static_cast<double>(*g.memory_used_bytes) / static_cast<double>(*g.memory_total_bytes);
    }
    const std::string name = g.info && g.info->name.ok() ? *g.info->name : std::string();
    if (!gpus.empty()) gpus += ' ';
    gpus +=
        fmt::format("GPU{}({}): {}%/{}%", g.index, short_gpu_name(name), pct(gpu_utilization(g)), pct(mem));
  }
  if (!gpus.empty()) parts.push_back(std::move(gpus));
  const auto& m = snap.host.memory;
  if (m.used_bytes.ok() && m.total_bytes.ok() && *m.total_bytes > 0) {
    parts.push_back(
        i18n::trf("Mem: {:.1f}%({}/{})",
                  100.0 * static_cast<double>(*m.used_bytes) / static_cast<double>(*m.total_bytes),
                  fmt::format("{:.1f}G", static_cast<double>(*m.used_bytes) / kGiB),
                  fmt::format("{:.1f}G", static_cast<double>(*m.total_bytes) / kGiB)));
  }
  parts.push_back(fmt::format("CPU: {:.1f}%", snap.host.cpu_total.busy_pct));
  if (job) parts.push_back(fmt::format("RSS: {:.1f}G", static_cast<double>(job->rss_bytes) / kGiB));
  if (train && !train->empty()) {
    if (auto t = format_train_part(*train); !t.empty())
      parts.push_back(std::string(i18n::tr("train:")) + " " + t);
  }
  std::string out =
      i18n::trf("Resource{}: ", epoch ? fmt::format(" @ epoch {}", *epoch)
                                      : fmt::format(" @ {}", runner::format_elapsed(elapsed_ms)));
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) out += " | ";
    out += parts[i];
  }
  return text::terminal(out);  // GPU names come from the driver; the line goes to a terminal
}

}  // namespace trainmon::recorder
