// SPDX-License-Identifier: Apache-2.0
// Signal dialog and help overlay of `trainmon top`.
#include "trainmon/tui/overlays.h"

#include <algorithm>
#include <string>
#include <vector>

namespace trainmon::tui {

namespace {

// A box with a border around `lines`, centred, cut to the canvas.
void draw_box(Canvas& cv, const std::string& title, const std::vector<std::string>& lines) {
  int inner = static_cast<int>(title.size()) + 2;
  for (const auto& l : lines) inner = std::max(inner, static_cast<int>(l.size()));
  inner = std::min(inner, std::max(1, cv.width() - 4));
  const int w = inner + 4;
  const int h = static_cast<int>(lines.size()) + 2;
  const int x = std::max(0, (cv.width() - w) / 2);
  const int y = std::max(0, (cv.height() - h) / 2);
  const bool u = cv.utf8();
  cv.clear_rect(y, x, h, w, Style::dialog);
  std::string hline;
  for (int i = 0; i < w - 2; ++i) hline += u ? "─" : "-";
  cv.put(y, x, (u ? "┌" : "+") + hline + (u ? "┐" : "+"), Style::dialog);
  cv.put(y + h - 1, x, (u ? "└" : "+") + hline + (u ? "┘" : "+"), Style::dialog);
  cv.put(y, x + 2, " " + title + " ", Style::dialog);
  for (int i = 0; i < static_cast<int>(lines.size()); ++i) {
    cv.put(y + 1 + i, x, u ? "│" : "|", Style::dialog);
    std::string l = lines[static_cast<std::size_t>(i)];
    if (static_cast<int>(l.size()) > inner) l.resize(static_cast<std::size_t>(inner));
    cv.put(y + 1 + i, x + 2, l, Style::dialog);
    cv.put(y + 1 + i, x + w - 1, u ? "│" : "|", Style::dialog);
  }
}

}  // namespace

void draw_signal_dialog(Canvas& cv, const UiState& ui) {
  const auto& d = ui.dialog;
  if (d.stage == DialogStage::none) return;
  std::string cmd = d.command.size() > 60 ? d.command.substr(0, 57) + "..." : d.command;
  std::vector<std::string> lines{"pid " + std::to_string(d.pid) + ": " + cmd, ""};
  switch (d.stage) {
    case DialogStage::confirm_term: lines.push_back("Send SIGTERM? y: yes   n / Esc: cancel"); break;
    case DialogStage::term_sent:
      lines.push_back(d.result.empty() ? "SIGTERM sent" : d.result);
      lines.push_back("K: send SIGKILL (asks again)   any other key: close");
      break;
    case DialogStage::confirm_kill:
      lines.push_back("Send SIGKILL (cannot be caught)? y: yes   n / Esc: cancel");
      break;
    case DialogStage::none: break;
  }
  draw_box(cv, "End process", lines);
}

void draw_help(Canvas& cv) {
  draw_box(cv, "trainmon top: keys",
           {
               "q F10        quit                  ? h F1   this help",
               "Up Down PgUp PgDn Home End   select a process",
               "s > <        next / previous sort column   r  reverse",
               "P M T G N    sort by CPU, RSS, elapsed, GPU memory, PID",
               "/            filter by text   u  filter by user   Esc clear",
               "t            tree view        a  all / GPU processes",
               "k F9         end the selected process (SIGTERM, then SIGKILL)",
               "+ -          sampling interval up / down",
               "",
               "any key closes this help",
           });
}

}  // namespace trainmon::tui
