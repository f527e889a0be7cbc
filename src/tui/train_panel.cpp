// SPDX-License-Identifier: Apache-2.0
// Training panel of `trainmon top`: the training loop of every run going on (its live state file):
// a job line per run and a line per rank.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "trainmon/core/units.h"
#include "trainmon/diagnose/train_summary.h"
#include "trainmon/tui/format.h"
#include "trainmon/tui/panels.h"

namespace trainmon::tui {
namespace {

/// One cell of a line: its text, style, and how soon it goes when the line is too wide (0: never).
struct Cell {
  std::string text;
  Style style = Style::normal;
  int drop = 0;
};
using Row = std::vector<Cell>;

/// "0.3s", "12s", "5:03" (human_elapsed above a minute).
std::string age_text(double s) {
  if (!std::isfinite(s)) return "?";
  s = std::max(0.0, s);
  if (s < 10) return fmt::format("{:.1f}s", s);
  return human_elapsed(s);
}

/// Draws `rows` as a table: a column is as wide as its widest cell; while the table is wider than
/// the canvas, the columns with the highest `drop` go (the same for every row, so columns line up).
void draw_table(Canvas& cv, int top, const std::vector<Row>& rows) {
  std::size_t ncols = 0;
  for (const auto& r : rows) ncols = std::max(ncols, r.size());
  std::vector<int> width(ncols, 0), drop(ncols, 0);
  for (const auto& r : rows) {
    for (std::size_t c = 0; c < r.size(); ++c) {
      width[c] = std::max(width[c], static_cast<int>(display_width(r[c].text)));
      drop[c] = std::max(drop[c], r[c].drop);
    }
  }
  std::vector<bool> shown(ncols, true);
  auto total = [&] {
    int w = 0;
    for (std::size_t c = 0; c < ncols; ++c)
      if (shown[c] && width[c] > 0) w += (w ? 2 : 0) + width[c];
    return w;
  };
  while (total() > cv.width()) {
    int worst = 0;
    std::size_t at = ncols;
    for (std::size_t c = 0; c < ncols; ++c)
      if (shown[c] && drop[c] > worst) worst = drop[c], at = c;
    if (at == ncols) break;  // only cells that never go: the canvas cuts the rest
    shown[at] = false;
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    int col = 0;
    for (std::size_t c = 0; c < rows[i].size(); ++c) {
      if (!shown[c] || width[c] == 0) continue;
      if (col) col += 2;
      cv.put(top + static_cast<int>(i), col, rows[i][c].text, rows[i][c].style);
      col += width[c];
    }
  }
}

std::string rank_name(const ipc::LiveRankState& r) {
  return r.rank >= 0 ? fmt::format("rank {}", r.rank) : fmt::format("pid {}", r.pid);
}

Row job_row(const ipc::LiveRunState& run, double now) {
  Row row;
  row.push_back({"train", Style::label, 0});
  row.push_back({truncate_display(terminal_text(run.name), 16), Style::normal, 3});
  if (run.run_id > 0) row.push_back({fmt::format("run {}", run.run_id), Style::dim, 6});
  const auto rate = diagnose::format_samples_per_s(run.samples_per_s);
  row.push_back({rate.empty() ? "- samples/s" : rate + " samples/s", Style::normal, 0});
  const auto step = diagnose::format_step_s(run.step_median_s);
  row.push_back({"step " + (step.empty() ? "-" : step), Style::normal, 0});
  const auto data = diagnose::format_share_pct(run.data_share);
  row.push_back({"data " + (data.empty() ? "-" : data), Style::normal, 1});
  // Collective wait (protocol v3 senders); no cell from older ones.
  const auto comm = diagnose::format_share_pct(run.comm_share);
  row.push_back({comm.empty() ? std::string() : "comm " + comm, Style::normal, 7});

  // The oldest last step of the job: a stuck rank holds every other one at the next collective.
  double oldest = NAN;
  for (const auto& r : run.ranks)
    if (std::isfinite(r.last_step_unix_s))
      oldest = std::isfinite(oldest) ? std::min(oldest, r.last_step_unix_s) : r.last_step_unix_s;
  row.push_back(
      {std::isfinite(oldest) ? "last " + age_text(now - oldest) + " ago" : "no step yet", Style::normal, 2});
  if (run.ranks.size() > 1) row.push_back({fmt::format("{} ranks", run.ranks.size()), Style::normal, 4});
  if (std::isfinite(run.steps))
    row.push_back({fmt::format("{:.0f} step{}", run.steps, run.steps == 1 ? "" : "s"), Style::dim, 5});
  // A document not rewritten for 3 intervals + 2 s: its `trainmon run` is alive but not ticking.
  const double age = now - run.time_unix_s;
  if (run.interval_ms > 0 && age > 3.0 * static_cast<double>(run.interval_ms) / 1e3 + 2.0)
    row.push_back({"(state " + age_text(age) + " old)", Style::warn, 0});
  return row;
}

Row rank_row(const ipc::LiveRankState& r, double now) {
  Row row;
  row.push_back({"  " + rank_name(r), Style::label, 0});
  row.push_back({truncate_display(terminal_text(r.host), 16), Style::normal, 5});
  row.push_back({r.gpu >= 0 ? fmt::format("GPU {}", r.gpu) : std::string("GPU ?"), Style::normal, 4});
  const auto step = diagnose::format_step_s(r.step_p50_s);
  row.push_back({"step " + (step.empty() ? "-" : step), Style::normal, 0});
  const auto p90 = diagnose::format_step_s(r.step_p90_s);
  row.push_back({"p90 " + (p90.empty() ? "-" : p90), Style::dim, 7});
  const auto data = diagnose::format_share_pct(r.data_share);
  row.push_back({"data " + (data.empty() ? "-" : data), Style::normal, 2});
  const auto comm = diagnose::format_share_pct(r.comm_share);
  row.push_back({comm.empty() ? std::string() : "comm " + comm, Style::normal, 3});
  row.push_back({std::isfinite(r.last_step_unix_s) ? "last " + age_text(now - r.last_step_unix_s) + " ago"
                                                   : "no step yet",
                 Style::normal, 1});
  row.push_back({r.phase.empty() ? std::string() : r.phase, Style::dim, 6});
  return row;
}

}  // namespace

int train_panel_rows(const std::vector<ipc::LiveRunState>& runs) noexcept {
  int n = 0;
  for (const auto& run : runs) {
    if (!run.train) continue;
    n += 1 + (run.ranks.size() > 1 ? static_cast<int>(run.ranks.size()) : 0);
  }
  return n;
}

int draw_train_panel(Canvas& cv, int top, int max_rows, const std::vector<ipc::LiveRunState>& runs,
                     double now) {
  int row = top;
  const int end = top + max_rows;
  for (std::size_t i = 0; i < runs.size() && row < end; ++i) {
    const auto& run = runs[i];
    if (!run.train) continue;
    draw_table(cv, row++, {job_row(run, now)});
    if (run.ranks.size() < 2) continue;
    std::vector<Row> ranks;
    for (const auto& r : run.ranks) ranks.push_back(rank_row(r, now));
    const int room = end - row;
    if (room <= 0) break;
    if (static_cast<int>(ranks.size()) > room) {
      const std::size_t keep = static_cast<std::size_t>(std::max(0, room - 1));
      const std::size_t more = ranks.size() - keep;
      ranks.resize(keep);
      if (!ranks.empty()) draw_table(cv, row, ranks);
      row += static_cast<int>(keep);
      cv.put(row++, 2, fmt::format("+{} more rank{}", more, more == 1 ? "" : "s"), Style::dim);
      continue;
    }
    draw_table(cv, row, ranks);
    row += static_cast<int>(ranks.size());
  }
  return row - top;
}

}  // namespace trainmon::tui
