// SPDX-License-Identifier: Apache-2.0
// The whole `trainmon top` screen as a pure function: Snapshot + history + live findings + UI state
// + size -> Canvas. Layout: title, GPU panel, host panel, findings, process table, bottom line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainmon/core/snapshot.h"
#include "trainmon/tui/canvas.h"
#include "trainmon/tui/history.h"
#include "trainmon/tui/keys.h"
#include "trainmon/tui/panels.h"
#include "trainmon/tui/process_table.h"
#include "trainmon/tui/ui_state.h"

namespace trainmon::tui {

/// Smallest screen with a layout; anything smaller shows one "terminal too small" line.
inline constexpr int kMinWidth = 20;
inline constexpr int kMinHeight = 6;

struct ScreenInput {
  const Snapshot* snapshot = nullptr;  ///< nullptr: first sample not taken yet ("sampling...")
  const History* history = nullptr;
  /// Findings and the active run; nullptr: none (not copied: render() runs on every frame).
  const LiveInfo* live = nullptr;
};

/// What render() produced besides the canvas: the rows as listed (for key handling).
struct RenderResult {
  Canvas canvas;
  KeyContext keys;
};

/// Draws the screen. `ui.scroll` follows the selection. Never throws on any size (0x0 included).
RenderResult render(const ScreenInput& in, UiState& ui, int width, int height, bool utf8);

}  // namespace trainmon::tui
