// SPDX-License-Identifier: Apache-2.0
#include "trainmon/tui/canvas.h"

#include <algorithm>

#include "trainmon/core/text_escape.h"

namespace trainmon::tui {

void append_utf8(std::string& out, char32_t cp) {
  text::append_utf8(out, cp);
}

Canvas::Canvas(int width, int height, bool utf8)
    : width_(std::max(0, width)), height_(std::max(0, height)), utf8_(utf8) {
  const auto n = static_cast<std::size_t>(width_) * static_cast<std::size_t>(height_);
  chars_.assign(n, U' ');
  styles_.assign(n, Style::normal);
}

void Canvas::release(std::size_t k, std::size_t row_begin, std::size_t row_end) noexcept {
  // A cell about to change stops being half of a double-width character: its other half becomes
  // a blank, so the terminal never shows half a character or loses the one next to it.
  if (chars_[k] == kWideTail) {
    if (k > row_begin) chars_[k - 1] = U' ';
  } else if (k + 1 < row_end && chars_[k + 1] == kWideTail) {
    chars_[k + 1] = U' ';
  }
}

int Canvas::put(int row, int col, std::string_view text, Style style) {
  const bool row_ok = row >= 0 && row < height_;
  const std::size_t base = row_ok ? static_cast<std::size_t>(row) * static_cast<std::size_t>(width_) : 0;
  const std::size_t end = base + static_cast<std::size_t>(width_);
  std::size_t i = 0;
  while (i < text.size()) {
    char32_t cp = static_cast<unsigned char>(text[i]);
    int w = 1;
    if (cp < 0x80) {
      ++i;  // ASCII, most of every screen
    } else {
      const text::Decoded d = text::decode_utf8(text, i);
      i += d.len;
      cp = d.valid ? d.cp : char32_t{0xFFFD};  // an invalid byte: the replacement character
      w = text::column_width(cp);
    }
    // Controls (text::is_terminal_control), code points that take no column of their own
    // (combining marks) and, on ASCII canvases, anything outside ASCII become '?'.
    if (text::is_terminal_control(cp) || w == 0 || (!utf8_ && cp > 0x7E)) {
      cp = U'?';
      w = 1;
    }
    if (col >= width_) {
      // Cut at the right edge: only the count of the rest is needed.
      col += w;
      for (; i < text.size(); ++col) {
        if (static_cast<unsigned char>(text[i]) < 0x80) {
          ++i;
          continue;
        }
        const text::Decoded d = text::decode_utf8(text, i);
        i += d.len;
        const int cw = d.valid ? text::column_width(d.cp) : 1;
        if (cw == 2) ++col;
      }
      return col;
    }
    if (row_ok && col >= 0) {
      const auto k = base + static_cast<std::size_t>(col);
      release(k, base, end);
      if (w == 2 && col + 1 < width_) {
        release(k + 1, base, end);
        chars_[k] = cp;
        chars_[k + 1] = kWideTail;
        styles_[k] = styles_[k + 1] = style;
      } else {
        chars_[k] = w == 2 ? U'?' : cp;  // half a character in the last column: a '?'
        styles_[k] = style;
      }
    } else if (row_ok && w == 2 && col == -1) {
      // The left half is off the canvas: the right half shows as a blank.
      release(base, base, end);
      chars_[base] = U' ';
      styles_[base] = style;
    }
    col += w;
  }
  return col;
}

void Canvas::set_style(int row, int col, int len, Style style) {
  if (row < 0 || row >= height_) return;
  for (int c = std::max(0, col); c < std::min(width_, col + len); ++c)
    styles_[static_cast<std::size_t>(row) * static_cast<std::size_t>(width_) + static_cast<std::size_t>(c)] =
        style;
}

void Canvas::clear_rect(int row, int col, int height, int width, Style style) {
  for (int r = std::max(0, row); r < std::min(height_, row + height); ++r) {
    const auto base = static_cast<std::size_t>(r) * static_cast<std::size_t>(width_);
    const auto end = base + static_cast<std::size_t>(width_);
    for (int c = std::max(0, col); c < std::min(width_, col + width); ++c) {
      const auto k = base + static_cast<std::size_t>(c);
      release(k, base, end);
      chars_[k] = U' ';
      styles_[k] = style;
    }
  }
}

char32_t Canvas::at(int row, int col) const noexcept {
  if (row < 0 || row >= height_ || col < 0 || col >= width_) return U' ';
  return chars_[static_cast<std::size_t>(row) * static_cast<std::size_t>(width_) +
                static_cast<std::size_t>(col)];
}

Style Canvas::style_at(int row, int col) const noexcept {
  if (row < 0 || row >= height_ || col < 0 || col >= width_) return Style::normal;
  return styles_[static_cast<std::size_t>(row) * static_cast<std::size_t>(width_) +
                 static_cast<std::size_t>(col)];
}

bool Canvas::row_equals(const Canvas& other, int row) const noexcept {
  if (width_ != other.width_ || row < 0 || row >= height_ || row >= other.height_) return false;
  const auto from = static_cast<std::size_t>(row) * static_cast<std::size_t>(width_);
  const auto to = from + static_cast<std::size_t>(width_);
  return std::equal(chars_.begin() + static_cast<std::ptrdiff_t>(from),
                    chars_.begin() + static_cast<std::ptrdiff_t>(to),
                    other.chars_.begin() + static_cast<std::ptrdiff_t>(from)) &&
         std::equal(styles_.begin() + static_cast<std::ptrdiff_t>(from),
                    styles_.begin() + static_cast<std::ptrdiff_t>(to),
                    other.styles_.begin() + static_cast<std::ptrdiff_t>(from));
}

std::span<const char32_t> Canvas::row_chars(int row) const noexcept {
  if (row < 0 || row >= height_) return {};
  return std::span<const char32_t>(chars_).subspan(
      static_cast<std::size_t>(row) * static_cast<std::size_t>(width_), static_cast<std::size_t>(width_));
}

std::span<const Style> Canvas::row_styles(int row) const noexcept {
  if (row < 0 || row >= height_) return {};
  return std::span<const Style>(styles_).subspan(
      static_cast<std::size_t>(row) * static_cast<std::size_t>(width_), static_cast<std::size_t>(width_));
}

Line Canvas::line(int row) const {
  Line out;
  if (row < 0 || row >= height_) return out;
  out.text.reserve(static_cast<std::size_t>(width_));
  for (int c = 0; c < width_; ++c) {
    const auto k =
        static_cast<std::size_t>(row) * static_cast<std::size_t>(width_) + static_cast<std::size_t>(c);
    // The right half of a double-width character: its left half's text takes both columns.
    if (chars_[k] != kWideTail) text::append_utf8(out.text, chars_[k]);
    if (out.spans.empty() || out.spans.back().style != styles_[k])
      out.spans.push_back({c, 1, styles_[k]});
    else
      ++out.spans.back().len;
  }
  return out;
}

std::string Canvas::row_text(int row) const {
  std::string s = line(row).text;
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

std::string Canvas::text() const {
  std::string out;
  for (int r = 0; r < height_; ++r) {
    out += row_text(r);
    out.push_back('\n');
  }
  return out;
}

}  // namespace trainmon::tui
