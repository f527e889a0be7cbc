// SPDX-License-Identifier: Apache-2.0
// The only ncurses user of `trainmon top`: sets the terminal up (ncurses), writes the cells of each
// Canvas that changed since the last frame with the terminal's terminfo strings, and turns ncurses
// key codes into tui::KeyCode values.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "trainmon/tui/canvas.h"

namespace trainmon::tui {

/// Appends terminfo string `text` (nullptr: nothing) to `out` without its padding ("$<5>": delays
/// that tputs would send as pad characters; terminal emulators need none).
void append_unpadded(std::string& out, const char* text);

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
  /// Draws `canvas`, handing ncurses only the cells that differ from the previous draw (the canvas
  /// is kept as that previous draw: pass it by std::move).
  void draw(Canvas canvas);
  /// Forces a full repaint on the next draw (after a resize).
  void invalidate();
  /// Gives the terminal back (endwin) before the process stops (Ctrl-Z) ...
  void suspend();
  /// ... and takes it again; the next draw repaints everything.
  void resume();
  /// Next key without waiting, as a KeyCode / code point; nullopt when none is pending.
  std::optional<int> read_key();

 private:
  void setup_direct();
  void draw_curses(Canvas canvas);
  void put_range(const Canvas& cv, int row, int first, int last);
  void move_to(int row, int col);
  void emit_range(const Canvas& cv, int row, int first, int last);
  void write_out();
  static constexpr int kStyles = static_cast<int>(Style::dialog) + 1;
  void* screen_ = nullptr;  ///< ncurses SCREEN*
  bool open_ = false;
  bool color_ = false;
  std::vector<wchar_t> wide_;       ///< scratch: one style run of a row as wide characters
  std::optional<Canvas> previous_;  ///< what the terminal shows now; empty: repaint everything
  // Direct output (setup_direct): terminfo strings computed once, one write(2) a frame.
  bool direct_ = false;
  bool ansi_cup_ = false;        ///< cursor_address is ECMA-48 CUP: formatted without tiparm
  bool skip_last_cell_ = false;  ///< automatic margins without the newline glitch
  std::string cup_, clear_;
  std::array<std::string, kStyles> style_seq_;  ///< reset, attributes and colours of each Style
  Style current_style_ = Style::normal;
  std::string out_;  ///< the frame being written
};

}  // namespace trainmon::tui
