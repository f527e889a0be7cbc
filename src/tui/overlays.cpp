// SPDX-License-Identifier: Apache-2.0
// Signal dialog and help overlay of `trainmon top`.
#include "trainmon/tui/overlays.h"

#include <algorithm>
#include <string>
#include <vector>

#include "trainmon/core/i18n.h"
#include "trainmon/core/text_escape.h"

namespace trainmon::tui {

namespace {

// Terminal columns of `s` (CJK characters take two: text::columns).
int cols(std::string_view s) {
  return static_cast<int>(text::columns(s));
}

// `s` cut to at most `width` columns, never inside a character.
std::string cut_to_columns(const std::string& s, int width) {
  std::size_t i = 0;
  int used = 0;
  while (i < s.size()) {
    const auto d = text::decode_utf8(s, i);
    const int w = text::column_width(d.cp);
    if (used + w > width) break;
    used += w;
    i += d.len;
  }
  return s.substr(0, i);
}

// A box with a border around `lines`, centred, cut to the canvas; widths in terminal columns.
void draw_box(Canvas& cv, const std::string& title, const std::vector<std::string>& lines) {
  int inner = cols(title) + 2;
  for (const auto& l : lines) inner = std::max(inner, cols(l));
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
    cv.put(y + 1 + i, x + 2, cut_to_columns(lines[static_cast<std::size_t>(i)], inner), Style::dialog);
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
    case DialogStage::confirm_term:
      lines.emplace_back(i18n::tr("Send SIGTERM? y: yes   n / Esc: cancel"));
      break;
    case DialogStage::term_sent:
      lines.push_back(d.result.empty() ? std::string(i18n::tr("SIGTERM sent")) : d.result);
      lines.emplace_back(i18n::tr("K: send SIGKILL (asks again)   any other key: close"));
      break;
    case DialogStage::confirm_kill:
      lines.emplace_back(i18n::tr("Send SIGKILL (cannot be caught)? y: yes   n / Esc: cancel"));
      break;
    case DialogStage::none: break;
  }
  draw_box(cv, std::string(i18n::tr("End process")), lines);
}

void draw_help(Canvas& cv) {
  // Each line is one catalogue entry, so that a translation aligns its own columns.
  static constexpr const char* kLines[] = {
      N_("q F10        quit                  ? h F1   this help"),
      N_("Up Down PgUp PgDn Home End   select a process"),
      N_("s > <        next / previous sort column   r  reverse"),
      N_("P M T G N    sort by CPU, RSS, elapsed, GPU memory, PID"),
      N_("/            filter by text   u  filter by user   Esc clear"),
      N_("t            tree view        a  all / GPU processes"),
      N_("k F9         end the selected process (SIGTERM, then SIGKILL)"),
      N_("+ -          sampling interval up / down"),
      "",
      N_("any key closes this help"),
  };
  std::vector<std::string> lines;
  for (const char* l : kLines) lines.emplace_back(i18n::tr(l));
  draw_box(cv, std::string(i18n::tr("trainmon top: keys")), lines);
}

}  // namespace trainmon::tui
