// SPDX-License-Identifier: Apache-2.0
// Boxes drawn over the dashboard: the signal dialog and the help overlay.
#pragma once

#include "trainmon/tui/canvas.h"
#include "trainmon/tui/ui_state.h"

namespace trainmon::tui {

/// The signal dialog for ui.dialog (nothing when stage is none), centred, cut to the canvas.
void draw_signal_dialog(Canvas& canvas, const UiState& ui);
/// The key help box, centred, cut to the canvas.
void draw_help(Canvas& canvas);

}  // namespace trainmon::tui
