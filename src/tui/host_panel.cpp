// SPDX-License-Identifier: Apache-2.0
// Host panel of `trainmon top`: per-core CPU bars, memory, swap, load, CPU temperature, disk and
// network rates (what `htop` and `free -h` show).
#include <fmt/format.h>

#include <algorithm>

#include "trainmon/core/units.h"
#include "trainmon/tui/format.h"
#include "trainmon/tui/panels.h"

namespace trainmon::tui {

namespace {

Style cpu_style(double pct) {
  return pct < 30 ? Style::good : pct < 90 ? Style::busy : Style::warn;
}

void bar_at(Canvas& cv, int row, int col, int bar_w, double pct, Style fill) {
  cv.put(row, col, "[");
  const int filled = bar_filled_cells(pct, bar_w);
  cv.put(row, col + 1, bar_text(pct, bar_w, cv.utf8()), fill);
  cv.set_style(row, col + 1 + filled, bar_w - filled, Style::dim);
  cv.put(row, col + 1 + bar_w, "]");
}

}  // namespace

int draw_host_panel(Canvas& cv, int top, int max_rows, const Snapshot& snap) {
  if (max_rows <= 0) return 0;
  const auto& h = snap.host;
  const int w = cv.width();
  int row = top;
  const int end = top + max_rows;

  // CPU: one bar per core in as many columns as fit ("  3[|||     23%]"), else the total.
  const std::size_t cores = h.cpus.size();
  const int cell_w = 18;
  const int per_row = std::max(1, w / cell_w);
  const int core_rows =
      static_cast<int>((cores + static_cast<std::size_t>(per_row) - 1) / static_cast<std::size_t>(per_row));
  const int rows_left_for_rest = std::min(2, max_rows - 1);
  if (cores > 0 && core_rows <= max_rows - rows_left_for_rest - 1 && core_rows <= 16) {
    for (std::size_t i = 0; i < cores; ++i) {
      const int r = row + static_cast<int>(i / static_cast<std::size_t>(per_row));
      const int c = static_cast<int>(i % static_cast<std::size_t>(per_row)) * cell_w;
      const auto& core = h.cpus[i];
      const double pct = core.online ? core.times.busy_pct : 0;
      cv.put(r, c, fmt::format("{:>3}", core.cpu), Style::label);
      bar_at(cv, r, c + 3, cell_w - 9, pct, cpu_style(pct));
      cv.put(r, c + cell_w - 4, core.online ? fmt::format("{:>3.0f}%", pct) : " off", Style::normal);
    }
    row += core_rows;
  }
  if (row < end) {
    const double pct = h.cpu_total.busy_pct;
    int col = cv.put(row, 0, "CPU", Style::label);
    const int bar_w = std::clamp(w / 3, 4, 50);
    bar_at(cv, row, col, bar_w, pct, cpu_style(pct));
    col += bar_w + 2;
    col = cv.put(row, col, fmt::format("{:>4.0f}% {}c", pct, h.cpu_count_online));
    if (h.cpu_temperature_c)
      col = cv.put(row, col + 1, fmt::format("{:.0f}{}C", *h.cpu_temperature_c, degree_sign(cv.utf8())),
                   *h.cpu_temperature_c < 80 ? Style::normal : Style::bad);
    if (h.load1)
      col = cv.put(
          row, col + 2,
          fmt::format("load {:.2f} {:.2f} {:.2f}", *h.load1, h.load5.value_or(0), h.load15.value_or(0)));
    double dr = 0, dw = 0, nr = 0, nt = 0;
    for (const auto& d : h.disks) dr += d.read_bytes_per_s, dw += d.write_bytes_per_s;
    for (const auto& n : h.nets) nr += n.rx_bytes_per_s, nt += n.tx_bytes_per_s;
    col = cv.put(row, col + 2, fmt::format("disk r {} w {}", human_rate(dr), human_rate(dw)));
    cv.put(row, col + 2, fmt::format("net rx {} tx {}", human_rate(nr), human_rate(nt)));
    ++row;
  }
  if (row < end) {
    const auto& m = h.memory;
    int col = cv.put(row, 0, "Mem", Style::label);
    const int bar_w = std::clamp(w / 3, 4, 50);
    double pct = 0;
    if (m.used_bytes && m.total_bytes && *m.total_bytes > 0)
      pct = 100.0 * static_cast<double>(*m.used_bytes) / static_cast<double>(*m.total_bytes);
    bar_at(cv, row, col, bar_w, pct, pct >= 90 ? Style::bad : Style::warn);
    col += bar_w + 2;
    auto b = [](const Reading<std::uint64_t>& r) { return r ? human_bytes(*r) : std::string("N/A"); };
    col = cv.put(row, col,
                 fmt::format(" used {} avail {} cache {} / {}", b(m.used_bytes), b(m.available_bytes),
                             b(m.cached_bytes), b(m.total_bytes)));
    double spct = 0;
    if (m.swap_total_bytes && *m.swap_total_bytes > 0 && m.swap_used_bytes)
      spct = 100.0 * static_cast<double>(*m.swap_used_bytes) / static_cast<double>(*m.swap_total_bytes);
    cv.put(row, col + 2, fmt::format("swap {}/{}", b(m.swap_used_bytes), b(m.swap_total_bytes)),
           spct > 50 ? Style::warn : Style::normal);
    ++row;
  }
  return row - top;
}

}  // namespace trainmon::tui
