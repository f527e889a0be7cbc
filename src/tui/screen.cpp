// SPDX-License-Identifier: Apache-2.0
// Layout of the whole `trainmon top` screen (a pure function of its inputs).
#include "trainmon/tui/screen.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "trainmon/core/i18n.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/export/processes_unknown.h"
#include "trainmon/tui/overlays.h"

namespace trainmon::tui {

namespace {

std::string clock_text(std::int64_t unix_ns) {
  const std::time_t t = static_cast<std::time_t>(unix_ns / 1000000000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
  return buf;
}

void draw_title(Canvas& cv, const Snapshot* snap, const UiState& ui) {
  cv.clear_rect(0, 0, 1, cv.width(), Style::title);
  std::string t = "trainmon top";
  if (snap) {
    t += "  " + snap->host.hostname + "  " + clock_text(snap->time_unix_ns);
    if (snap->driver.loaded && snap->driver.driver_version) t += "  driver " + *snap->driver.driver_version;
    t += fmt::format("  {} GPU{}", snap->gpus.size(), snap->gpus.size() == 1 ? "" : "s");
  }
  t += fmt::format("  every {:.1f}s", ui.interval_ms / 1000.0);
  cv.put(0, 0, t, Style::title);
  const std::string help(i18n::tr("? help"));
  const int help_cols = static_cast<int>(text::columns(help));
  if (cv.width() >= static_cast<int>(text::columns(t)) + help_cols + 3)
    cv.put(0, cv.width() - help_cols - 1, help, Style::title);
}

void draw_footer(Canvas& cv, const UiState& ui) {
  const int y = cv.height() - 1;
  if (ui.input != InputMode::none) {
    const int c = cv.put(y, 0, ui.input == InputMode::filter_text ? "filter: " : "user: ", Style::label);
    const int e = cv.put(y, c, ui.input_buffer);
    cv.put(y, e, "_", Style::selected);
    cv.put(y, e + 2, "(Enter apply, Esc cancel, empty clears)", Style::dim);
    return;
  }
  if (!ui.message.empty()) {
    cv.put(y, 0, ui.message, Style::warn);
    return;
  }
  std::string state;
  state += ui.view == ProcessView::all ? "[all]" : "[gpu]";
  if (ui.tree) state += "[tree]";
  if (!ui.filter_text.empty()) state += "[/" + ui.filter_text + "]";
  if (!ui.filter_user.empty()) state += "[u:" + ui.filter_user + "]";
  const int c = cv.put(y, 0, state, Style::label);
  cv.put(y, c + 1, i18n::tr("q quit  ? help  s sort  / filter  u user  t tree  a all  k kill  +/- interval"),
         Style::dim);
}

}  // namespace

RenderResult render(const ScreenInput& in, UiState& ui, int width, int height, bool utf8) {
  RenderResult out{Canvas(width, height, utf8), {}};
  Canvas& cv = out.canvas;
  if (cv.width() < kMinWidth || cv.height() < kMinHeight) {
    cv.put(0, 0, fmt::format("too small {}x{}", cv.width(), cv.height()), Style::warn);
    if (cv.height() > 1) cv.put(1, 0, i18n::tr("q quits"), Style::dim);
    return out;
  }
  draw_title(cv, in.snapshot, ui);
  draw_footer(cv, ui);
  if (!in.snapshot) {
    cv.put(2, 1, i18n::tr("sampling..."), Style::dim);
    if (ui.help) draw_help(cv);  // keys work before the first sample (a driver slow to start)
    return out;
  }
  const Snapshot& snap = *in.snapshot;
  static const History empty_history;
  const History& hist = in.history ? *in.history : empty_history;

  static const LiveInfo no_live;
  const LiveInfo& live = in.live ? *in.live : no_live;
  const int avail = cv.height() - 2;
  const int proc_min = std::max(3, avail / 3);
  const int live_rows = findings_panel_rows(live);
  const int find_budget = std::min(live_rows, std::max(0, (avail - proc_min) / 4));
  // The training panel: a job line per run always (when any), ranks as the height allows.
  const int train_rows = train_panel_rows(live.runs);
  const int train_budget = std::min(train_rows, std::max(train_rows > 0 ? 1 : 0, (avail - proc_min) / 3));
  const int host_min = avail >= 14 ? 2 : 1;
  const int gpu_budget = std::max(1, avail - proc_min - host_min - find_budget - train_budget);

  int row = 1;
  row += draw_gpu_panel(cv, row, gpu_budget, snap, hist);
  const int host_budget = std::max(host_min, avail - (row - 1) - find_budget - train_budget - proc_min);
  row += draw_host_panel(cv, row, std::min(host_budget, avail - (row - 1)), snap);
  row += draw_train_panel(cv, row, std::min(train_budget, avail - (row - 1)), live.runs,
                          static_cast<double>(snap.time_unix_ns) / 1e9);
  row += draw_findings_panel(cv, row, std::min(find_budget, avail - (row - 1)), live);

  const auto rows = build_process_rows(snap, ui, utf8);
  // GPUs whose process lists failed: one line per reason above the table, which lists what is known
  // (never "no GPU processes" next to the memory those processes hold).
  std::vector<std::pair<std::string, std::string>> unknown;  // reason, GPU list
  for (const auto& g : snap.gpus) {
    const std::string why = exp::processes_unknown_text(g.process_count);
    if (why.empty()) continue;
    auto it = std::find_if(unknown.begin(), unknown.end(), [&](const auto& u) { return u.first == why; });
    if (it == unknown.end()) {
      unknown.emplace_back(why, std::to_string(g.index));
    } else {
      it->second += ',';
      it->second += std::to_string(g.index);
    }
  }
  const int unknown_rows = std::min(static_cast<int>(unknown.size()), std::max(0, cv.height() - 1 - row - 2));
  for (int i = 0; i < unknown_rows; ++i) {
    const auto& [why, gpus] = unknown[static_cast<std::size_t>(i)];
    cv.put(row + i, 1, "GPU " + gpus + ": " + why, Style::warn);
  }
  row += unknown_rows;
  const int table_h = cv.height() - 1 - row;
  draw_process_table(
      cv, row, table_h, rows, ui,
      unknown.empty() ? std::string_view{} : std::string_view{"no other GPU processes listed"});
  out.keys.page_rows = std::max(1, table_h - 1);
  out.keys.pids.reserve(rows.size());
  for (const auto& r : rows) {
    out.keys.pids.push_back(r.pid);
    out.keys.commands.push_back(r.command);
    out.keys.start_times_ticks.push_back(r.start_time_ticks);
  }
  const auto select_first = [&] {
    ui.selected_pid = rows.front().pid;
    ui.selected_no_local = !rows.front().start_time_ticks.has_value();
  };
  if (ui.selected_pid == 0 && !rows.empty()) select_first();
  if (selected_row(rows, ui) == 0 && !rows.empty() &&
      (rows.front().pid != ui.selected_pid ||
       !rows.front().start_time_ticks.has_value() != ui.selected_no_local)) {
    // The selected process left the list: select the row now on top instead.
    select_first();
  }

  if (ui.dialog.stage != DialogStage::none) draw_signal_dialog(cv, ui);
  if (ui.help) draw_help(cv);
  return out;
}

}  // namespace trainmon::tui
