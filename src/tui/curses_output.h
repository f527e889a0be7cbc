// SPDX-License-Identifier: Apache-2.0
// The only ncurses user of `trainmon top`: copies Canvas lines to the terminal (only the lines that
// changed since the last frame) and turns ncurses key codes into tui::KeyCode values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "trainmon/tui/canvas.h"

namespace trainmon::tui {

class CursesOutput {
 public:
  CursesOutput() = default;
  ~CursesOutput();
  CursesOutput(const CursesOutput&) = delete;
  CursesOutput& operator=(const CursesOutput&) = delete;

  /// Initialises ncurses on stdin / stdout. False (with `error` set) when the terminal cannot be used.
  bool open(bool color, std::string& error);
  /// Restores the terminal (idempotent).
  void close();
  /// Current size (columns, rows).
  [[nodiscard]] int columns() const;
  [[nodiscard]] int rows() const;
  /// Draws `canvas`, rewriting only rows that differ from the previous draw.
  void draw(const Canvas& canvas);
  /// Forces a full repaint on the next draw (after a resize).
  void invalidate();
  /// Next key without waiting, as a KeyCode / code point; nullopt when none is pending.
  std::optional<int> read_key();

 private:
  void* screen_ = nullptr;  ///< ncurses SCREEN*
  bool open_ = false;
  bool color_ = false;
  std::vector<wchar_t> wide_;       ///< scratch: one style run of a row as wide characters
  std::optional<Canvas> previous_;  ///< what the terminal shows now; empty: repaint everything
};

}  // namespace trainmon::tui
