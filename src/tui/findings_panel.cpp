// SPDX-License-Identifier: Apache-2.0
// Findings panel of `trainmon top`: the open findings of top's own live diagnosis merged with those of
// every run going on (their live state files: the run's diagnosis sees its training loop, D23-D26,
// which top cannot), the line each rank of a hang is stuck on, and the active run.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "trainmon/core/i18n.h"
#include "trainmon/core/i18n_plural.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/tui/panels.h"

namespace trainmon::tui {
namespace {

/// The same fault seen by top and by a run: the same code about the same GPUs and processes.
bool same_fault(const diagnose::Finding& a, const diagnose::Finding& b) {
  return a.code == b.code && a.gpus == b.gpus && (a.pids.empty() || b.pids.empty() || a.pids == b.pids);
}

/// "rank 1 (pid 4242 on node3) at hang.py:64 in run (called from ...)": a stuck line of a hang.
std::string stack_line(const diagnose::RankStack& st) {
  std::string who = st.rank >= 0 ? i18n::trf("rank {}", st.rank) : std::string(i18n::tr("process"));
  who += fmt::format(" (pid {}{})", st.pid, st.host.empty() ? "" : i18n::trf(" on {}", st.host));
  std::string line = i18n::trf("{} at {}", who, st.where.empty() ? i18n::tr("(no Python frame)") : st.where);
  if (!st.caller.empty()) line += i18n::trf(" (called from {})", st.caller);
  return line;
}

}  // namespace

std::vector<PanelFinding> panel_findings(const LiveInfo& live) {
  std::vector<PanelFinding> out;
  std::size_t runs_with = 0;
  for (const auto& run : live.runs) runs_with += run.findings.empty() ? 0 : 1;
  for (const auto& run : live.runs)
    for (const auto& f : run.findings) out.push_back({&f, runs_with > 1 ? run.name : std::string{}});
  const std::size_t from_runs = out.size();
  for (const auto& f : live.findings) {
    bool seen = false;
    for (std::size_t i = 0; i < from_runs && !seen; ++i) seen = same_fault(*out[i].finding, f);
    if (!seen) out.push_back({&f, {}});
  }
  // Most severe first, in their order otherwise (the runs list theirs in the order to fix them).
  std::stable_sort(out.begin(), out.end(), [](const PanelFinding& a, const PanelFinding& b) {
    return a.finding->severity > b.finding->severity;
  });
  return out;
}

int findings_panel_rows(const LiveInfo& live) {
  const auto fs = panel_findings(live);
  int stacks = 0;
  for (const auto& f : fs) stacks += static_cast<int>(f.finding->stacks.size());
  return (live.active_run.empty() ? 0 : 1) + std::min<int>(3, static_cast<int>(fs.size())) +
         std::min(stacks, 8);
}

int draw_findings_panel(Canvas& cv, int top, int max_rows, const LiveInfo& live) {
  if (max_rows <= 0) return 0;
  int row = top;
  const int end = top + max_rows;
  if (!live.active_run.empty()) {
    cv.put(row, 0, cv.utf8() ? "● " : "* ", Style::bad);
    cv.put(row, 2, i18n::trf("recording {}", live.active_run), Style::label);
    ++row;
  }
  const auto findings = panel_findings(live);
  for (std::size_t i = 0; i < findings.size() && row < end; ++i) {
    const auto& f = *findings[i].finding;
    const bool last_row = row + 1 == end && i + 1 < findings.size();
    if (last_row && i > 0) {
      cv.put(row++, 0,
             i18n::trfn(findings.size() - i, "+{} more finding", "+{} more findings", findings.size() - i),
             Style::dim);
      break;
    }
    const Style s = f.severity == diagnose::Severity::critical  ? Style::bad
                    : f.severity == diagnose::Severity::warning ? Style::warn
                                                                : Style::normal;
    int col = cv.put(row, 0, fmt::format("{} {} ", f.code, i18n::tr(diagnose::severity_name(f.severity))), s);
    if (!findings[i].run.empty()) col = cv.put(row, col, "[" + findings[i].run + "] ", Style::dim);
    col = cv.put(row, col, i18n::trf("{}: ", diagnose::shown_title(f)), Style::label);
    cv.put(row, col, diagnose::shown_evidence(f));
    if (last_row) {  // one row for them all: the most severe, and how many more at its end
      const std::string more = i18n::trf(" +{} more", findings.size() - 1);
      cv.put(row, std::max(0, cv.width() - static_cast<int>(text::columns(more))), more, Style::dim);
      ++row;
      break;
    }
    ++row;
    // A hang's stacks: the line each rank is stuck on, while rows are left (the next finding's line,
    // or its "+N more", keeps one).
    const int keep = i + 1 < findings.size() ? 1 : 0;
    for (std::size_t k = 0; k < f.stacks.size() && row < end - keep; ++k)
      cv.put(row++, 2, stack_line(f.stacks[k]), Style::normal);
  }
  return row - top;
}

}  // namespace trainmon::tui
