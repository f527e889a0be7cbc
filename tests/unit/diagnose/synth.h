// SPDX-License-Identifier: Apache-2.0
// Synthetic RunSeries for the diagnosis tests and benchmark: a healthy run (all GPUs 85-95 %
// moving together with noise, one job process per GPU, a quiet host) that tests then bend into
// each failure mode.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "trainmon/diagnose/finding.h"
#include "trainmon/diagnose/series.h"

namespace trainmon::diagnose::testing {

struct Synth {
  RunSeries s;
  std::mt19937 rng{42};

  float noise(float sd) { return std::normal_distribution<float>(0.f, sd)(rng); }

  /// `gpus` GPUs, `seconds` of rows every `dt` seconds; root pid 1000, GPU g's process 1000 + g
  /// (GPU0's is the root itself).
  Synth(unsigned gpus, double seconds, double dt = 1.0, bool with_procs = true) {
    std::vector<double> times;
    for (double t = 0; t <= seconds + 1e-9; t += dt) times.push_back(t);
    for (unsigned g = 0; g < gpus; ++g) ensure_gpu(s, g);
    append_empty_rows(s, times);
    const std::size_t n = times.size();
    for (auto& g : s.gpus) {
      g.name = "NVIDIA A100-SXM4-80GB";
      for (std::size_t i = 0; i < n; ++i) {
        g.state[i] = GpuState::ok;
        g.util_gpu_pct[i] = std::clamp(90.f + noise(2.5f), 0.f, 100.f);
        g.util_mem_pct[i] = 60.f + noise(3.f);
        g.mem_used_mib[i] = 30000.f + noise(20.f);
        g.mem_reserved_mib[i] = 500.f;
        g.mem_total_mib[i] = 81920.f;
        g.power_w[i] = 330.f + noise(10.f);
        g.power_limit_w[i] = 400.f;
        g.temp_c[i] = 65.f + noise(1.f);
        g.temp_slowdown_c[i] = 87.f;
        g.sm_clock_mhz[i] = 1410.f;
        g.sm_clock_max_mhz[i] = 1410.f;
        g.clock_reasons[i] = 0;
        g.viol_power_s[i] = 0.f;
        g.viol_thermal_s[i] = 0.f;
        g.viol_hw_brake_s[i] = 0.f;
        g.ecc_uncorrected_volatile[i] = 0.f;
        g.ecc_corrected_volatile[i] = 0.f;
        g.retired_pages[i] = 0.f;
        g.retired_pending[i] = 0.f;
        g.remapped_unc[i] = 0.f;
        g.remapped_cor[i] = 0.f;
        g.remapped_pending[i] = 0.f;
        g.remapped_failure[i] = 0.f;
        g.pcie_gen[i] = 4.f;
        g.pcie_width[i] = 16.f;
        g.pcie_gen_max[i] = 4.f;
        g.pcie_width_max[i] = 16.f;
        if (with_procs)
          g.procs.push_back(
              {static_cast<std::uint32_t>(i), 1000 + g.index, 29500.f, 88.f, HostVisibility::visible, true});
      }
    }
    auto& h = s.host;
    auto& j = s.job;
    for (std::size_t i = 0; i < n; ++i) {
      h.cpu_busy_pct[i] = 45.f + noise(3.f);
      h.cpu_iowait_pct[i] = 1.f;
      h.cpu_core_max_pct[i] = 70.f + noise(5.f);
      h.cpu_count[i] = 32.f;
      h.mem_available_mib[i] = 200000.f + noise(200.f);
      h.mem_total_mib[i] = 256000.f;
      h.mem_cached_mib[i] = 30000.f;
      h.swap_used_mib[i] = 0.f;
      h.psi_mem_some_avg10[i] = 0.f;
      h.psi_io_some_avg10[i] = 0.5f;
      h.disk_read_bps[i] = 5.f * 1048576.f;
      j.rss_mib[i] = 8000.f + noise(30.f);
      j.cpu_pct[i] = 400.f + noise(20.f);
      j.main_cpu_pct[i] = 60.f + noise(5.f);
      j.workers[i] = 8.f;
      j.oom_kills[i] = 0.f;
    }
    for (unsigned g = 0; g < gpus; ++g) s.facts.gpus.push_back(g);
    s.facts.root_pid = 1000;
  }

  std::size_t rows() const { return s.size(); }
  /// Sets `col[i] = f(t, old)` for rows with t0 <= t <= t1.
  void apply(std::vector<float>& col, double t0, double t1, const std::function<float(double, float)>& f) {
    for (std::size_t i = 0; i < s.size(); ++i)
      if (s.t[i] >= t0 && s.t[i] <= t1) col[i] = f(s.t[i], col[i]);
  }
  void set(std::vector<float>& col, double t0, double t1, float v, float sd = 0.f) {
    apply(col, t0, t1, [&](double, float) { return v + (sd > 0 ? noise(sd) : 0.f); });
  }
  GpuSeries& gpu(unsigned g) { return ensure_gpu(s, g); }
  /// Removes GPU g's job processes for t0 <= t <= t1.
  void drop_procs(unsigned g, double t0, double t1) {
    auto& p = gpu(g).procs;
    std::erase_if(p, [&](const GpuProcTick& x) { return s.t[x.tick] >= t0 && s.t[x.tick] <= t1; });
  }
};

/// The findings of `v` with code `code`.
inline std::vector<Finding> with_code(const std::vector<Finding>& v, std::string_view code) {
  std::vector<Finding> out;
  for (const auto& f : v)
    if (f.code == code) out.push_back(f);
  return out;
}

}  // namespace trainmon::diagnose::testing
