// SPDX-License-Identifier: Apache-2.0
// Canvas: the screen of `trainmon top` as a model, a grid of cells (one code point and one style
// each) that panels draw into. It is pure data: unit tests read it as text, and the ncurses layer
// (terminal_output.h) only copies its lines to the terminal.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace trainmon::tui {

/// What a cell means; the output layer maps each to colours/attributes (or none without colour).
enum class Style : std::uint8_t {
  normal = 0,
  title,     ///< top bar
  header,    ///< table header (reverse video)
  label,     ///< field names ("util", "Mem")
  good,      ///< green: idle / cool / healthy
  busy,      ///< bold green: busy GPU
  warn,      ///< yellow: warm, memory high
  bad,       ///< red: hot, lost, ECC, critical findings
  dim,       ///< faint: not visible processes, empty bar part, hints
  selected,  ///< the selected process row
  dialog,    ///< overlay boxes (signal dialog, help)
};

/// The cell right of a double-width character (CJK, emoji, full-width forms): the character's left
/// cell holds its code point, this one this marker (not a code point: above U+10FFFF).
inline constexpr char32_t kWideTail = 0x110000;

/// One row of the finished screen: `text` (UTF-8, or ASCII only on ASCII canvases) takes exactly the
/// canvas width in columns; `spans` cover it from column 0 with consecutive runs of one style.
struct Line {
  std::string text;
  struct Span {
    int col = 0;
    int len = 0;
    Style style = Style::normal;
    friend bool operator==(const Span&, const Span&) = default;
  };
  std::vector<Span> spans;
  friend bool operator==(const Line&, const Line&) = default;
};

class Canvas {
 public:
  /// `utf8` false: every code point outside ASCII is drawn as '?', so the screen is pure ASCII.
  /// Negative sizes count as 0.
  Canvas(int width, int height, bool utf8);

  [[nodiscard]] int width() const noexcept { return width_; }
  [[nodiscard]] int height() const noexcept { return height_; }
  [[nodiscard]] bool utf8() const noexcept { return utf8_; }

  /// Writes UTF-8 `text` from (row, col), cut at the right edge: one cell per code point, two for a
  /// double-width one (text::column_width; the second cell holds kWideTail), whose neighbours are
  /// all kept. Controls, invalid bytes and zero-width code points (combining marks) are drawn as
  /// '?' (text::is_terminal_control: nothing can reach the terminal as a control), as is a
  /// double-width character with only one column left. Overwriting half of a double-width
  /// character blanks its other half. Rows or columns outside the canvas draw nothing. Returns the
  /// column after the last cell written (col + the columns of `text`, even where cut).
  int put(int row, int col, std::string_view text, Style style = Style::normal);
  /// Sets the style of `len` cells from (row, col) without changing their characters.
  void set_style(int row, int col, int len, Style style);
  /// Fills a rectangle with spaces of `style`.
  void clear_rect(int row, int col, int height, int width, Style style = Style::normal);

  /// The character (code point, or kWideTail) and style at a cell; ' ' / normal outside the canvas.
  [[nodiscard]] char32_t at(int row, int col) const noexcept;
  [[nodiscard]] Style style_at(int row, int col) const noexcept;

  /// Whether row `row` holds the same cells (characters and styles) here and in `other`; false
  /// when the widths differ or the row is outside either canvas.
  [[nodiscard]] bool row_equals(const Canvas& other, int row) const noexcept;
  /// The cells of row `row`: width() code points and width() styles, in column order; empty spans
  /// when the row is outside the canvas. Valid until the canvas changes.
  [[nodiscard]] std::span<const char32_t> row_chars(int row) const noexcept;
  [[nodiscard]] std::span<const Style> row_styles(int row) const noexcept;
  /// Row `row` as a Line (UTF-8 text plus style runs).
  [[nodiscard]] Line line(int row) const;
  /// Row `row` as text, trailing spaces removed (tests).
  [[nodiscard]] std::string row_text(int row) const;
  /// Every row joined by '\n', trailing spaces removed (tests, snapshots).
  [[nodiscard]] std::string text() const;

 private:
  void release(std::size_t k, std::size_t row_begin, std::size_t row_end) noexcept;
  int width_ = 0, height_ = 0;
  bool utf8_ = true;
  std::vector<char32_t> chars_;
  std::vector<Style> styles_;
};

/// Appends the UTF-8 encoding of `cp` to `out`.
void append_utf8(std::string& out, char32_t cp);

}  // namespace trainmon::tui
