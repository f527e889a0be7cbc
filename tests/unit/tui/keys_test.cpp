// SPDX-License-Identifier: Apache-2.0
// `trainmon top` key handling: the state machine over UiState.
#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>

#include "trainmon/tui/keys.h"

namespace trainmon::tui {
namespace {

KeyContext ctx3() {
  return KeyContext{{10, 20, 30}, {"a", "b", "c"}, 2};
}

TEST(TuiKeys, QuitAndHelp) {
  UiState ui;
  EXPECT_EQ(handle_key(ui, '?', ctx3()).kind, KeyResult::redraw);
  EXPECT_TRUE(ui.help);
  EXPECT_EQ(handle_key(ui, 'x', ctx3()).kind, KeyResult::redraw);  // any key closes help
  EXPECT_FALSE(ui.help);
  EXPECT_EQ(handle_key(ui, 'q', ctx3()).kind, KeyResult::quit);
  EXPECT_TRUE(ui.quit);
  UiState u2;
  EXPECT_EQ(handle_key(u2, kKeyF10, ctx3()).kind, KeyResult::quit);
}

TEST(TuiKeys, SelectionMovesAndClamps) {
  UiState ui;
  handle_key(ui, kKeyDown, ctx3());
  EXPECT_EQ(ui.selected_pid, 20u);  // from the first row (no selection yet) one down
  handle_key(ui, kKeyDown, ctx3());
  handle_key(ui, kKeyDown, ctx3());
  EXPECT_EQ(ui.selected_pid, 30u);
  handle_key(ui, kKeyHome, ctx3());
  EXPECT_EQ(ui.selected_pid, 10u);
  handle_key(ui, kKeyPageDown, ctx3());
  EXPECT_EQ(ui.selected_pid, 30u);
  handle_key(ui, kKeyUp, ctx3());
  EXPECT_EQ(ui.selected_pid, 20u);
  handle_key(ui, kKeyEnd, ctx3());
  EXPECT_EQ(ui.selected_pid, 30u);
  UiState empty;
  handle_key(empty, kKeyDown, KeyContext{});
  EXPECT_EQ(empty.selected_pid, 0u);
}

TEST(TuiKeys, SortCyclesAndReverses) {
  UiState ui;
  EXPECT_EQ(ui.sort, SortKey::gpu_memory);
  handle_key(ui, 's', ctx3());
  EXPECT_EQ(ui.sort, SortKey::sm);
  EXPECT_TRUE(ui.descending);
  handle_key(ui, '<', ctx3());
  handle_key(ui, '<', ctx3());
  EXPECT_EQ(ui.sort, SortKey::gpu);
  EXPECT_FALSE(ui.descending);
  handle_key(ui, 'r', ctx3());
  EXPECT_TRUE(ui.descending);
  handle_key(ui, 'N', ctx3());
  EXPECT_EQ(ui.sort, SortKey::pid);
  EXPECT_FALSE(ui.descending);
  handle_key(ui, 'N', ctx3());  // same key again reverses
  EXPECT_TRUE(ui.descending);
  handle_key(ui, 'P', ctx3());
  EXPECT_EQ(ui.sort, SortKey::cpu);
  for (int i = 0; i < kSortKeyCount; ++i) handle_key(ui, 's', ctx3());
  EXPECT_EQ(ui.sort, SortKey::cpu);
}

TEST(TuiKeys, FilterPromptTypesAppliesAndCancels) {
  UiState ui;
  handle_key(ui, '/', ctx3());
  EXPECT_EQ(ui.input, InputMode::filter_text);
  for (char c : std::string("sleepx")) handle_key(ui, c, ctx3());
  handle_key(ui, kKeyBackspace, ctx3());
  handle_key(ui, 0xE9, ctx3());  // é
  EXPECT_EQ(ui.input_buffer, "sleep\xc3\xa9");
  handle_key(ui, kKeyBackspace, ctx3());
  EXPECT_EQ(handle_key(ui, 'q', ctx3()).kind, KeyResult::redraw) << "q types in a prompt";
  handle_key(ui, kKeyBackspace, ctx3());
  handle_key(ui, kKeyEnter, ctx3());
  EXPECT_EQ(ui.input, InputMode::none);
  EXPECT_EQ(ui.filter_text, "sleep");
  handle_key(ui, 'u', ctx3());
  for (char c : std::string("bob")) handle_key(ui, c, ctx3());
  handle_key(ui, kKeyEsc, ctx3());
  EXPECT_EQ(ui.filter_user, "");
  handle_key(ui, 'u', ctx3());
  for (char c : std::string("bob")) handle_key(ui, c, ctx3());
  handle_key(ui, '\r', ctx3());
  EXPECT_EQ(ui.filter_user, "bob");
  handle_key(ui, kKeyEsc, ctx3());  // outside a prompt: clears both filters
  EXPECT_EQ(ui.filter_user, "");
  EXPECT_EQ(ui.filter_text, "");
}

TEST(TuiKeys, TreeAllAndInterval) {
  UiState ui;
  handle_key(ui, 't', ctx3());
  EXPECT_TRUE(ui.tree);
  handle_key(ui, 'a', ctx3());
  EXPECT_EQ(ui.view, ProcessView::all);
  handle_key(ui, 'a', ctx3());
  EXPECT_EQ(ui.view, ProcessView::gpu);
  EXPECT_EQ(handle_key(ui, '+', ctx3()).kind, KeyResult::interval_changed);
  EXPECT_EQ(ui.interval_ms, 1500);
  handle_key(ui, '-', ctx3());
  handle_key(ui, '-', ctx3());
  EXPECT_EQ(ui.interval_ms, 900);
  for (int i = 0; i < 30; ++i) handle_key(ui, '-', ctx3());
  EXPECT_EQ(ui.interval_ms, kMinIntervalMs);
  for (int i = 0; i < 100; ++i) handle_key(ui, '+', ctx3());
  EXPECT_EQ(ui.interval_ms, kMaxIntervalMs);
}

TEST(TuiKeys, SignalDialogTermThenKillNeedsSecondConfirmation) {
  UiState ui;
  ui.selected_pid = 20;
  EXPECT_EQ(handle_key(ui, 'k', ctx3()).kind, KeyResult::redraw);
  EXPECT_EQ(ui.dialog.stage, DialogStage::confirm_term);
  EXPECT_EQ(ui.dialog.pid, 20u);
  EXPECT_EQ(ui.dialog.command, "b");
  KeyResult r = handle_key(ui, 'y', ctx3());
  EXPECT_EQ(r.kind, KeyResult::send_signal);
  EXPECT_EQ(r.pid, 20u);
  EXPECT_EQ(r.signal, SIGTERM);
  signal_result(ui, SIGTERM, 0);
  EXPECT_EQ(ui.dialog.stage, DialogStage::term_sent);
  EXPECT_EQ(ui.dialog.result, "SIGTERM sent");
  EXPECT_EQ(handle_key(ui, 'K', ctx3()).kind, KeyResult::redraw);
  EXPECT_EQ(ui.dialog.stage, DialogStage::confirm_kill);
  r = handle_key(ui, 'y', ctx3());
  EXPECT_EQ(r.kind, KeyResult::send_signal);
  EXPECT_EQ(r.signal, SIGKILL);
  signal_result(ui, SIGKILL, EPERM);
  EXPECT_NE(ui.dialog.result.find("not permitted"), std::string::npos);
  handle_key(ui, 'x', ctx3());
  EXPECT_EQ(ui.dialog.stage, DialogStage::none);
}

TEST(TuiKeys, SignalDialogCancelSendsNothing) {
  UiState ui;
  ui.selected_pid = 30;
  handle_key(ui, kKeyF9, ctx3());
  EXPECT_EQ(handle_key(ui, 'n', ctx3()).kind, KeyResult::redraw);
  EXPECT_EQ(ui.dialog.stage, DialogStage::none);
  handle_key(ui, 'k', ctx3());
  handle_key(ui, 'y', ctx3());
  EXPECT_EQ(handle_key(ui, kKeyEsc, ctx3()).kind, KeyResult::redraw);  // no SIGKILL offered by Esc
  EXPECT_EQ(ui.dialog.stage, DialogStage::none);
  UiState none;
  handle_key(none, 'k', KeyContext{});
  EXPECT_EQ(none.dialog.stage, DialogStage::none);
  EXPECT_EQ(none.message, "no process selected");
  handle_key(none, 'k', ctx3());
  handle_key(none, 'y', ctx3());
  signal_result(none, SIGTERM, ESRCH);
  EXPECT_EQ(none.dialog.stage, DialogStage::none);
  EXPECT_NE(none.message.find("already gone"), std::string::npos);
}

}  // namespace
}  // namespace trainmon::tui
