// SPDX-License-Identifier: Apache-2.0
#include "trainmon/recorder/resource_line.h"

#include <fmt/format.h>

#include "trainmon/runner/oom.h"

namespace trainmon::recorder {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::string pct(std::optional<double> v) {
  return v ? fmt::format("{:.1f}%", *v) : std::string("N/A");
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

std::string format_resource_line(const Snapshot& snap, std::int64_t elapsed_ms,
                                 const std::optional<JobTotals>& job,
                                 const std::optional<std::string>& epoch) {
  std::string out = epoch ? fmt::format("Resource @ epoch {}:", *epoch)
                          : fmt::format("Resource @ {}:", runner::format_elapsed(elapsed_ms));
  for (const auto& g : snap.gpus) {
    std::optional<double> mem;
    if (g.memory_used_bytes.ok() && g.memory_total_bytes.ok() && *g.memory_total_bytes > 0) {
      mem = 100.0 * static_cast<double>(*g.memory_used_bytes) / static_cast<double>(*g.memory_total_bytes);
    }
    out += fmt::format(" GPU{} {}/{}", g.index, pct(gpu_utilization(g)), pct(mem));
  }
  if (snap.gpus.empty()) out += " no GPU";
  const auto& m = snap.host.memory;
  if (m.used_bytes.ok() && m.total_bytes.ok() && *m.total_bytes > 0) {
    out += fmt::format(" | Mem {:.1f}% ({:.1f}G/{:.1f}G)",
                       100.0 * static_cast<double>(*m.used_bytes) / static_cast<double>(*m.total_bytes),
                       static_cast<double>(*m.used_bytes) / kGiB, static_cast<double>(*m.total_bytes) / kGiB);
  } else {
    out += " | Mem N/A";
  }
  out += fmt::format(" | CPU {:.1f}%", snap.host.cpu_total.busy_pct);
  if (job) out += fmt::format(" | RSS {:.1f}G", static_cast<double>(job->rss_bytes) / kGiB);
  return out;
}

}  // namespace trainmon::recorder
