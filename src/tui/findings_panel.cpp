// SPDX-License-Identifier: Apache-2.0
// Findings panel of `trainmon top`: the live diagnosis's open findings and the active run.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "trainmon/tui/panels.h"

namespace trainmon::tui {

int draw_findings_panel(Canvas& cv, int top, int max_rows, const LiveInfo& live) {
  if (max_rows <= 0) return 0;
  int row = top;
  if (!live.active_run.empty()) {
    cv.put(row, 0, cv.utf8() ? "● " : "* ", Style::bad);
    cv.put(row, 2, "recording " + live.active_run, Style::label);
    ++row;
  }
  // Most severe first, in their order otherwise (pointers: a finding holds strings and series).
  std::vector<const diagnose::Finding*> findings;
  findings.reserve(live.findings.size());
  for (const auto& f : live.findings) findings.push_back(&f);
  std::stable_sort(
      findings.begin(), findings.end(),
      [](const diagnose::Finding* a, const diagnose::Finding* b) { return a->severity > b->severity; });
  for (std::size_t i = 0; i < findings.size() && row < top + max_rows; ++i) {
    const auto& f = *findings[i];
    const bool last_row = row + 1 == top + max_rows && i + 1 < findings.size();
    if (last_row) {
      cv.put(row++, 0, fmt::format("+{} more findings", findings.size() - i), Style::dim);
      break;
    }
    const Style s = f.severity == diagnose::Severity::critical  ? Style::bad
                    : f.severity == diagnose::Severity::warning ? Style::warn
                                                                : Style::normal;
    int col = cv.put(row, 0, fmt::format("{} {} ", f.code, diagnose::severity_name(f.severity)), s);
    col = cv.put(row, col, f.title + ": ", Style::label);
    cv.put(row, col, f.evidence);
    ++row;
  }
  return row - top;
}

}  // namespace trainmon::tui
