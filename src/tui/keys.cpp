// SPDX-License-Identifier: Apache-2.0
// Key handling of `trainmon top`: one state machine over UiState.
#include "trainmon/tui/keys.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>

namespace trainmon::tui {

namespace {

/// Row `i` has no local process (a driver-listed pid of another namespace, or exited).
bool no_local(const KeyContext& ctx, std::size_t i) {
  return i < ctx.start_times_ticks.size() && !ctx.start_times_ticks[i].has_value();
}

int selected_index(const UiState& ui, const KeyContext& ctx) {
  if (ctx.pids.empty()) return -1;
  int same_pid = -1;  // a row with the pid but of the other kind: next best
  for (std::size_t i = 0; i < ctx.pids.size(); ++i) {
    if (ctx.pids[i] != ui.selected_pid) continue;
    if (no_local(ctx, i) == ui.selected_no_local) return static_cast<int>(i);
    if (same_pid < 0) same_pid = static_cast<int>(i);
  }
  return same_pid >= 0 ? same_pid : 0;
}

void select(UiState& ui, const KeyContext& ctx, std::size_t i) {
  ui.selected_pid = ctx.pids[i];
  ui.selected_no_local = no_local(ctx, i);
}

void move_selection(UiState& ui, const KeyContext& ctx, int delta, bool absolute = false) {
  if (ctx.pids.empty()) return;
  const int cur = selected_index(ui, ctx);
  int next = absolute ? delta : cur + delta;
  next = std::clamp(next, 0, static_cast<int>(ctx.pids.size()) - 1);
  select(ui, ctx, static_cast<std::size_t>(next));
}

void set_sort(UiState& ui, SortKey key) {
  if (ui.sort == key) {
    ui.descending = !ui.descending;
  } else {
    ui.sort = key;
    // Numbers read best largest first; names and pids in ascending order.
    ui.descending =
        !(key == SortKey::pid || key == SortKey::user || key == SortKey::command || key == SortKey::gpu);
  }
}

KeyResult handle_prompt(UiState& ui, int key) {
  switch (key) {
    case kKeyEnter:
    case '\r':
      (ui.input == InputMode::filter_text ? ui.filter_text : ui.filter_user) = ui.input_buffer;
      ui.input = InputMode::none;
      ui.input_buffer.clear();
      ui.scroll = 0;
      return {KeyResult::redraw};
    case kKeyEsc:
      ui.input = InputMode::none;
      ui.input_buffer.clear();
      return {KeyResult::redraw};
    case kKeyBackspace:
    case 8:
      // Remove one UTF-8 code point.
      while (!ui.input_buffer.empty()) {
        const auto c = static_cast<unsigned char>(ui.input_buffer.back());
        ui.input_buffer.pop_back();
        if ((c & 0xC0) != 0x80) break;
      }
      return {KeyResult::redraw};
    default:
      if (key >= 0x20 && key < 0x110000 && key != 0x7F && ui.input_buffer.size() < 200) {
        const auto cp = static_cast<char32_t>(key);
        if (cp < 0x80) {
          ui.input_buffer.push_back(static_cast<char>(cp));
        } else if (cp < 0x800) {
          ui.input_buffer.push_back(static_cast<char>(0xC0 | (cp >> 6)));
          ui.input_buffer.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else {
          ui.input_buffer.push_back(static_cast<char>(0xE0 | ((cp >> 12) & 0x0F)));
          ui.input_buffer.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
          ui.input_buffer.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        }
        return {KeyResult::redraw};
      }
      return {KeyResult::none};
  }
}

KeyResult handle_dialog(UiState& ui, int key) {
  auto& d = ui.dialog;
  switch (d.stage) {
    case DialogStage::confirm_term:
      if (key == 'y' || key == 'Y' || key == kKeyEnter || key == '\r') {
        d.stage = DialogStage::term_sent;
        return {KeyResult::send_signal, d.pid, SIGTERM, d.start_time_ticks};
      }
      d = {};
      return {KeyResult::redraw};
    case DialogStage::term_sent:
      if (key == 'K' || key == 'k' || key == '9' || key == kKeyF9) {
        d.stage = DialogStage::confirm_kill;
        return {KeyResult::redraw};
      }
      d = {};
      return {KeyResult::redraw};
    case DialogStage::confirm_kill:
      if (key == 'y' || key == 'Y') {
        d.stage = DialogStage::term_sent;
        return {KeyResult::send_signal, d.pid, SIGKILL, d.start_time_ticks};
      }
      d = {};
      return {KeyResult::redraw};
    case DialogStage::none: break;
  }
  return {KeyResult::none};
}

}  // namespace

void signal_result(UiState& ui, int signal, int err) {
  const char* name = signal == SIGKILL ? "SIGKILL" : signal == SIGTERM ? "SIGTERM" : "signal";
  std::string text;
  if (err == 0)
    text = std::string(name) + " sent";
  else if (err == EPERM)
    text = std::string(name) + " not permitted (the process belongs to another user)";
  else if (err == ESRCH)
    text = "the process is already gone";
  else
    text = std::string(name) + " failed: " + std::strerror(err);
  ui.dialog.result = text;
  ui.message = "pid " + std::to_string(ui.dialog.pid) + ": " + text;
  if (err == ESRCH) ui.dialog = {};
}

void signal_not_sent(UiState& ui, const std::string& text) {
  ui.message = text;
  ui.dialog = {};
}

KeyResult handle_key(UiState& ui, int key, const KeyContext& ctx) {
  if (key == kKeyResize) return {KeyResult::redraw};
  if (ui.input != InputMode::none) return handle_prompt(ui, key);
  if (ui.dialog.stage != DialogStage::none) return handle_dialog(ui, key);
  ui.message.clear();
  if (ui.help) {
    ui.help = false;
    if (key == 'q' || key == kKeyF10) ui.quit = true;
    return {ui.quit ? KeyResult::quit : KeyResult::redraw};
  }
  switch (key) {
    case 'q':
    case 'Q':
    case kKeyF10: ui.quit = true; return {KeyResult::quit};
    case '?':
    case 'h':
    case kKeyF1: ui.help = true; return {KeyResult::redraw};
    case kKeyUp: move_selection(ui, ctx, -1); return {KeyResult::redraw};
    case kKeyDown: move_selection(ui, ctx, 1); return {KeyResult::redraw};
    case kKeyPageUp: move_selection(ui, ctx, -std::max(1, ctx.page_rows)); return {KeyResult::redraw};
    case kKeyPageDown: move_selection(ui, ctx, std::max(1, ctx.page_rows)); return {KeyResult::redraw};
    case kKeyHome: move_selection(ui, ctx, 0, true); return {KeyResult::redraw};
    case kKeyEnd:
      move_selection(ui, ctx, static_cast<int>(ctx.pids.size()) - 1, true);
      return {KeyResult::redraw};
    case 's':
    case '>':
    case kKeyRight:
      set_sort(ui, static_cast<SortKey>((static_cast<int>(ui.sort) + 1) % kSortKeyCount));
      return {KeyResult::redraw};
    case '<':
    case kKeyLeft:
      set_sort(ui, static_cast<SortKey>((static_cast<int>(ui.sort) + kSortKeyCount - 1) % kSortKeyCount));
      return {KeyResult::redraw};
    case 'r':
    case 'I': ui.descending = !ui.descending; return {KeyResult::redraw};
    case 'P': set_sort(ui, SortKey::cpu); return {KeyResult::redraw};
    case 'M': set_sort(ui, SortKey::rss); return {KeyResult::redraw};
    case 'T': set_sort(ui, SortKey::elapsed); return {KeyResult::redraw};
    case 'G': set_sort(ui, SortKey::gpu_memory); return {KeyResult::redraw};
    case 'N': set_sort(ui, SortKey::pid); return {KeyResult::redraw};
    case '/':
      ui.input = InputMode::filter_text;
      ui.input_buffer = ui.filter_text;
      return {KeyResult::redraw};
    case 'u':
      ui.input = InputMode::filter_user;
      ui.input_buffer = ui.filter_user;
      return {KeyResult::redraw};
    case kKeyEsc:
      ui.filter_text.clear();
      ui.filter_user.clear();
      return {KeyResult::redraw};
    case 't': ui.tree = !ui.tree; return {KeyResult::redraw};
    case 'a':
      ui.view = ui.view == ProcessView::gpu ? ProcessView::all : ProcessView::gpu;
      ui.scroll = 0;
      return {KeyResult::redraw};
    case 'k':
    case kKeyF9: {
      const int i = selected_index(ui, ctx);
      if (i < 0) {
        ui.message = "no process selected";
        return {KeyResult::redraw};
      }
      select(ui, ctx, static_cast<std::size_t>(i));
      if (no_local(ctx, static_cast<std::size_t>(i))) {
        // Nothing here to signal: the number is the driver's, not a process of this namespace.
        ui.message = "pid " + std::to_string(ui.selected_pid) +
                     " has no process in this PID namespace (not visible from here, or exited): "
                     "nothing to signal";
        return {KeyResult::redraw};
      }
      ui.dialog = {};
      ui.dialog.stage = DialogStage::confirm_term;
      ui.dialog.pid = ui.selected_pid;
      if (static_cast<std::size_t>(i) < ctx.commands.size())
        ui.dialog.command = ctx.commands[static_cast<std::size_t>(i)];
      if (static_cast<std::size_t>(i) < ctx.start_times_ticks.size())
        ui.dialog.start_time_ticks = ctx.start_times_ticks[static_cast<std::size_t>(i)];
      return {KeyResult::redraw};
    }
    case '+':
    case '=':
      ui.interval_ms =
          std::min(kMaxIntervalMs, ui.interval_ms < 1000 ? ui.interval_ms + 100 : ui.interval_ms + 500);
      ui.message = "interval " + std::to_string(ui.interval_ms) + " ms";
      return {KeyResult::interval_changed};
    case '-':
    case '_':
      ui.interval_ms =
          std::max(kMinIntervalMs, ui.interval_ms <= 1000 ? ui.interval_ms - 100 : ui.interval_ms - 500);
      ui.message = "interval " + std::to_string(ui.interval_ms) + " ms";
      return {KeyResult::interval_changed};
    default: return {KeyResult::none};
  }
}

}  // namespace trainmon::tui
