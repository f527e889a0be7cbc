// SPDX-License-Identifier: Apache-2.0
#include "trainmon/tui/canvas.h"

#include <algorithm>

namespace trainmon::tui {

namespace {
// Decodes one UTF-8 code point at text[i]; advances i. Invalid bytes give U+FFFD (one byte each).
char32_t next_code_point(std::string_view text, std::size_t& i) {
  const auto b0 = static_cast<unsigned char>(text[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  int len = (b0 & 0xE0) == 0xC0 ? 2 : (b0 & 0xF0) == 0xE0 ? 3 : (b0 & 0xF8) == 0xF0 ? 4 : 0;
  if (len == 0 || i + static_cast<std::size_t>(len) > text.size()) {
    ++i;
    return 0xFFFD;
  }
  char32_t cp = b0 & (0xFF >> (len + 1));
  for (int k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(text[i + static_cast<std::size_t>(k)]);
    if ((b & 0xC0) != 0x80) {
      ++i;
      return 0xFFFD;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  i += static_cast<std::size_t>(len);
  return cp;
}
}  // namespace

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

Canvas::Canvas(int width, int height, bool utf8)
    : width_(std::max(0, width)), height_(std::max(0, height)), utf8_(utf8) {
  const auto n = static_cast<std::size_t>(width_) * static_cast<std::size_t>(height_);
  chars_.assign(n, U' ');
  styles_.assign(n, Style::normal);
}

int Canvas::put(int row, int col, std::string_view text, Style style) {
  const bool row_ok = row >= 0 && row < height_;
  const std::size_t base = row_ok ? static_cast<std::size_t>(row) * static_cast<std::size_t>(width_) : 0;
  std::size_t i = 0;
  while (i < text.size()) {
    char32_t cp = static_cast<unsigned char>(text[i]);
    if (cp < 0x80) {
      ++i;  // ASCII, most of every screen
    } else {
      cp = next_code_point(text, i);
    }
    // Control characters and (on ASCII canvases) anything outside ASCII become '?'.
    // C1 controls (U+0080..U+009F) are control characters on a UTF-8 terminal as well.
    if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || (!utf8_ && cp > 0x7E)) cp = U'?';
    if (row_ok && col >= 0 && col < width_) {
      const auto k = base + static_cast<std::size_t>(col);
      chars_[k] = cp;
      styles_[k] = style;
    } else if (col >= width_) {
      // Cut at the right edge: only the count of the rest is needed.
      for (++col; i < text.size(); ++col) {
        if (static_cast<unsigned char>(text[i]) < 0x80)
          ++i;
        else
          next_code_point(text, i);
      }
      return col;
    }
    ++col;
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
  for (int r = std::max(0, row); r < std::min(height_, row + height); ++r)
    for (int c = std::max(0, col); c < std::min(width_, col + width); ++c) {
      const auto k =
          static_cast<std::size_t>(r) * static_cast<std::size_t>(width_) + static_cast<std::size_t>(c);
      chars_[k] = U' ';
      styles_[k] = style;
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
    append_utf8(out.text, chars_[k]);
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
