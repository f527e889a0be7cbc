// SPDX-License-Identifier: Apache-2.0
// GPU panel of `trainmon top`: per device bars, history, temperature, power, clocks, throttle
// reasons, ECC and PCIe; compact rows when many GPUs.
#include <fmt/format.h>

#include <algorithm>

#include "trainmon/core/units.h"
#include "trainmon/tui/format.h"
#include "trainmon/tui/panels.h"

namespace trainmon::tui {

int gpu_panel_full_rows(std::size_t gpu_count) noexcept {
  return static_cast<int>(gpu_count) * 3;
}
int gpu_panel_compact_rows(std::size_t gpu_count) noexcept {
  return static_cast<int>(gpu_count);
}

std::string throttle_words(std::uint64_t reasons) {
  using namespace clock_event;
  if (reasons == 0) return "none";
  if (reasons == gpu_idle) return "idle";
  std::string out;
  auto add = [&](std::uint64_t bit, const char* word) {
    if (reasons & bit) out += (out.empty() ? "" : ", ") + std::string(word);
  };
  add(sw_power_cap, "power cap");
  add(hw_slowdown, "HW slowdown");
  add(hw_thermal_slowdown, "HW thermal");
  add(sw_thermal_slowdown, "SW thermal");
  add(hw_power_brake_slowdown, "power brake");
  add(applications_clocks_setting, "app clocks");
  add(sync_boost, "sync boost");
  add(display_clock_setting, "display clocks");
  if (out.empty()) out = "idle";
  return out;
}

namespace {

Style temp_style(unsigned c) {
  return c < 50 ? Style::good : c < 80 ? Style::warn : Style::bad;
}

// A stale node's GPUs (their group says STALE) stand out.
Style group_style(const GpuSample& g) {
  return g.info && g.info->group.find("STALE") != std::string::npos ? Style::warn : Style::label;
}

std::string gpu_name(const GpuSample& g) {
  return g.info && g.info->name ? *g.info->name : std::string("GPU");
}

double mem_pct(const GpuSample& g) {
  if (!g.memory_used_bytes || !g.memory_total_bytes || *g.memory_total_bytes == 0) return -1;
  return 100.0 * static_cast<double>(*g.memory_used_bytes) / static_cast<double>(*g.memory_total_bytes);
}

// Draws "label[bar] text" at (row, col) with a bar of `bar_w` cells; returns the next column.
int draw_bar(Canvas& cv, int row, int col, std::string_view label, double pct, int bar_w,
             std::string_view text, Style fill) {
  col = cv.put(row, col, label, Style::label);
  col = cv.put(row, col, "[");
  const int filled = bar_filled_cells(pct, bar_w);
  cv.put(row, col, bar_text(pct, bar_w, cv.utf8()), fill);
  cv.set_style(row, col + filled, bar_w - filled, Style::dim);
  col += bar_w;
  col = cv.put(row, col, "]");
  return cv.put(row, col, text);
}

std::string lost_text(const GpuSample& g) {
  switch (g.responsive.status) {
    case ReadStatus::gpu_lost: return "GPU lost (fell off the bus or needs a reset)";
    case ReadStatus::timeout: return "not responding (NVML call timed out)";
    // as `status` says it; not a hardware fault (no finding, no reset advice)
    case ReadStatus::no_permission: return "no permission to read this GPU (NVML_ERROR_NO_PERMISSION)";
    default: return "failed to read";
  }
}

std::string power_text(const GpuSample& g) {
  std::string s = g.power_draw_mw ? fmt::format("{}", *g.power_draw_mw / 1000) : "N/A";
  const auto& lim = g.enforced_power_limit_mw ? g.enforced_power_limit_mw : g.power_limit_mw;
  return s + "/" + (lim ? fmt::format("{}W", *lim / 1000) : "N/A");
}

std::string ecc_text(const GpuSample& g) {
  if (g.ecc_mode_current && !*g.ecc_mode_current) return "ECC off";
  if (!g.ecc_uncorrected_volatile) return "ECC N/A";
  return fmt::format("ECC {}", *g.ecc_uncorrected_volatile);
}

void draw_full(Canvas& cv, int row, const GpuSample& g, const History& hist) {
  const bool utf8 = cv.utf8();
  const int w = cv.width();
  int col = cv.put(row, 0, fmt::format("[{}] ", g.index), Style::label);
  if (g.info && !g.info->group.empty()) col = cv.put(row, col, g.info->group + ": ", group_style(g));
  col = cv.put(row, col, gpu_name(g), Style::title);
  if (!g.responsive.ok() && g.responsive.status != ReadStatus::not_collected) {
    cv.put(row, col + 2, lost_text(g),
           g.responsive.status == ReadStatus::no_permission ? Style::warn : Style::bad);
    cv.put(row + 1, 4, "no readings", Style::dim);
    return;
  }
  col += 2;
  if (g.temperature_gpu_c) {
    col = cv.put(row, col, fmt::format("{}{}C", *g.temperature_gpu_c, degree_sign(utf8)),
                 temp_style(*g.temperature_gpu_c));
  } else {
    col = cv.put(row, col, "N/A", Style::dim);
  }
  col = cv.put(row, col + 2, g.pstate ? fmt::format("P{}", *g.pstate) : "P?");
  col = cv.put(row, col + 2, g.fan_speed_pct ? fmt::format("fan {}%", *g.fan_speed_pct) : "fan N/A");
  col = cv.put(row, col + 2, power_text(g));
  col = cv.put(row, col + 2,
               fmt::format("{}/{} MHz", g.clocks_sm_mhz ? std::to_string(*g.clocks_sm_mhz) : "N/A",
                           g.clocks_memory_mhz ? std::to_string(*g.clocks_memory_mhz) : "N/A"));
  const bool ecc_bad = g.ecc_uncorrected_volatile && *g.ecc_uncorrected_volatile > 0;
  cv.put(row, col + 2, ecc_text(g), ecc_bad ? Style::bad : Style::normal);

  // Two bar rows: bar, value, one more fact (PCIe, throttle reasons), then the history.
  const int bar_w = std::clamp((w - 30) / 4, 4, 40);
  const int text_w = 14;
  const int extra_col = 1 + 5 + 1 + bar_w + 1 + text_w;
  const int extra_w = 32;
  const int hist_col = extra_col + extra_w;
  const int hist_w = std::max(0, w - hist_col - 1);
  const double u = g.utilization_gpu_pct ? static_cast<double>(*g.utilization_gpu_pct) : -1;
  const Style ufill = u < 0 ? Style::dim : u < 30 ? Style::good : Style::busy;
  std::string utext = u < 0 ? " N/A" : fmt::format(" {:>3.0f}%", u);
  draw_bar(cv, row + 1, 1, "util ", u, bar_w, utext, ufill);
  const double m = mem_pct(g);
  const Style mfill = m < 0 ? Style::dim : m >= 90 ? Style::bad : Style::warn;
  std::string mtext =
      m < 0 ? " N/A"
            : fmt::format(" {}/{}", human_bytes(*g.memory_used_bytes), human_bytes(*g.memory_total_bytes));
  draw_bar(cv, row + 2, 1, "mem  ", m, bar_w, mtext, mfill);
  cv.put(row + 1, extra_col,
         fmt::format("PCIe rx {} tx {}", g.pcie_rx_kib_s ? human_rate(*g.pcie_rx_kib_s * 1024.0) : "N/A",
                     g.pcie_tx_kib_s ? human_rate(*g.pcie_tx_kib_s * 1024.0) : "N/A"));
  if (g.clocks_event_reasons_active) {
    const std::uint64_t r = *g.clocks_event_reasons_active;
    const bool slow = (r & ~(clock_event::gpu_idle | clock_event::applications_clocks_setting |
                             clock_event::display_clock_setting)) != 0;
    const int c = cv.put(row + 2, extra_col, "throttle: ", Style::label);
    std::string words = throttle_words(r);
    if (static_cast<int>(words.size()) > extra_w - 11) words.resize(static_cast<std::size_t>(extra_w - 11));
    cv.put(row + 2, c, words, slow ? Style::warn : Style::normal);
  }
  if (hist_w >= 4) {
    const auto uh = hist.util(g.index);
    const auto mh = hist.memory(g.index);
    cv.put(row + 1, hist_col, sparkline(uh, hist_w, utf8), Style::busy);
    cv.put(row + 2, hist_col, sparkline(mh, hist_w, utf8), Style::warn);
  }
}

void draw_compact(Canvas& cv, int row, const GpuSample& g) {
  const bool utf8 = cv.utf8();
  const int w = cv.width();
  int col = cv.put(row, 0, fmt::format("{:>2} ", g.index), Style::label);
  if (g.info && !g.info->group.empty()) col = cv.put(row, col, g.info->group + " ", group_style(g));
  if (!g.responsive.ok() && g.responsive.status != ReadStatus::not_collected) {
    if (g.responsive.status == ReadStatus::no_permission)
      cv.put(row, col, "no permission", Style::warn);
    else
      cv.put(row, col, g.responsive.status == ReadStatus::gpu_lost ? "GPU lost" : "not responding",
             Style::bad);
    return;
  }
  // "NN ut[bar] 93% mem[bar] 77% 52C 560W"
  const int fixed = 3 + 3 + 2 + 5 + 4 + 2 + 5 + 5 + 6;
  const int bar_w = std::clamp((w - fixed) / 2, 1, 30);
  const double u = g.utilization_gpu_pct ? static_cast<double>(*g.utilization_gpu_pct) : -1;
  const double m = mem_pct(g);
  col = draw_bar(cv, row, col, "ut", u, bar_w, u < 0 ? " N/A" : fmt::format("{:>4.0f}%", u),
                 u < 30 ? Style::good : Style::busy);
  col = draw_bar(cv, row, col + 1, "mem", m, bar_w, m < 0 ? " N/A" : fmt::format("{:>4.0f}%", m),
                 m >= 90 ? Style::bad : Style::warn);
  if (g.temperature_gpu_c)
    col = cv.put(row, col + 1, fmt::format("{}{}C", *g.temperature_gpu_c, degree_sign(utf8)),
                 temp_style(*g.temperature_gpu_c));
  if (g.power_draw_mw) col = cv.put(row, col + 1, fmt::format("{}W", *g.power_draw_mw / 1000));
  if (g.ecc_uncorrected_volatile && *g.ecc_uncorrected_volatile > 0)
    col = cv.put(row, col + 1, fmt::format("ECC {}", *g.ecc_uncorrected_volatile), Style::bad);
  if (g.clocks_event_reasons_active) {
    const std::uint64_t r = *g.clocks_event_reasons_active;
    if (r & (clock_event::sw_power_cap | clock_event::hw_slowdown | clock_event::hw_thermal_slowdown |
             clock_event::sw_thermal_slowdown | clock_event::hw_power_brake_slowdown))
      cv.put(row, col + 1, throttle_words(r), Style::warn);
  }
}

}  // namespace

int draw_gpu_panel(Canvas& cv, int top, int max_rows, const Snapshot& snap, const History& history) {
  if (max_rows <= 0) return 0;
  if (snap.gpus.empty()) {
    // Why: the driver's line when it has one (not loaded, or loaded with no GPU: its advice too).
    std::string why = !snap.driver.error.empty() ? snap.driver.error
                      : !snap.driver.loaded      ? "NVML not available"
                                                 : "no GPU found";
    // Why no GPU can be read, wrapped over up to 5 rows: the reason and the advice come first in the
    // line (nvml::driver_failure_line), so at 80 or 60 columns a cut takes only the library's path.
    const int c = cv.put(top, 0, "GPU: none, host only: ", Style::label);
    const auto lines = wrap_text(why, cv.width() - c, cv.width() - 2, std::min(max_rows, 5), cv.utf8());
    for (std::size_t i = 0; i < lines.size(); ++i)
      cv.put(top + static_cast<int>(i), i == 0 ? c : 2, lines[i], Style::dim);
    return std::max(1, static_cast<int>(lines.size()));
  }
  const auto n = snap.gpus.size();
  if (gpu_panel_full_rows(n) <= max_rows && cv.width() >= 60) {
    for (std::size_t i = 0; i < n; ++i) draw_full(cv, top + static_cast<int>(i) * 3, snap.gpus[i], history);
    return gpu_panel_full_rows(n);
  }
  if (gpu_panel_compact_rows(n) <= max_rows) {
    for (std::size_t i = 0; i < n; ++i) draw_compact(cv, top + static_cast<int>(i), snap.gpus[i]);
    return gpu_panel_compact_rows(n);
  }
  const int shown = max_rows - 1;
  for (int i = 0; i < shown; ++i) draw_compact(cv, top + i, snap.gpus[static_cast<std::size_t>(i)]);
  cv.put(top + shown, 0,
         fmt::format("+{} more GPU{} (enlarge the terminal)", n - static_cast<std::size_t>(shown),
                     n - static_cast<std::size_t>(shown) == 1 ? "" : "s"),
         Style::dim);
  return max_rows;
}

}  // namespace trainmon::tui
