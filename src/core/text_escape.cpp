// SPDX-License-Identifier: Apache-2.0
#include "trainmon/core/text_escape.h"

#include <algorithm>
#include <iterator>

#include <nlohmann/json.hpp>

namespace trainmon::text {

Decoded decode_utf8(std::string_view s, std::size_t i) noexcept {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return {b0, 1, true};
  std::size_t len = 0;
  char32_t min = 0;
  char32_t cp = 0;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, min = 0x80, cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, min = 0x800, cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, min = 0x10000, cp = b0 & 0x07;
  } else {
    return {0xFFFD, 1, false};
  }
  if (i + len > s.size()) return {0xFFFD, 1, false};
  for (std::size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return {0xFFFD, 1, false};
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0xFFFD, 1, false};
  return {cp, len, true};
}

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

bool is_terminal_control(char32_t cp) noexcept {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

namespace {

struct Range {
  char32_t first, last;
};

// East Asian Wide (W) and Fullwidth (F), Unicode 15.0 EastAsianWidth.txt, adjacent ranges merged
// (this includes the emoji with Emoji_Presentation=Yes, which are W since Unicode 9).
constexpr Range kWide[] = {
    {0x1100, 0x115F},   {0x231A, 0x231B},   {0x2329, 0x232A},   {0x23E9, 0x23EC},   {0x23F0, 0x23F0},
    {0x23F3, 0x23F3},   {0x25FD, 0x25FE},   {0x2614, 0x2615},   {0x2648, 0x2653},   {0x267F, 0x267F},
    {0x2693, 0x2693},   {0x26A1, 0x26A1},   {0x26AA, 0x26AB},   {0x26BD, 0x26BE},   {0x26C4, 0x26C5},
    {0x26CE, 0x26CE},   {0x26D4, 0x26D4},   {0x26EA, 0x26EA},   {0x26F2, 0x26F3},   {0x26F5, 0x26F5},
    {0x26FA, 0x26FA},   {0x26FD, 0x26FD},   {0x2705, 0x2705},   {0x270A, 0x270B},   {0x2728, 0x2728},
    {0x274C, 0x274C},   {0x274E, 0x274E},   {0x2753, 0x2755},   {0x2757, 0x2757},   {0x2795, 0x2797},
    {0x27B0, 0x27B0},   {0x27BF, 0x27BF},   {0x2B1B, 0x2B1C},   {0x2B50, 0x2B50},   {0x2B55, 0x2B55},
    {0x2E80, 0x2E99},   {0x2E9B, 0x2EF3},   {0x2F00, 0x2FD5},   {0x2FF0, 0x2FFB},   {0x3000, 0x303E},
    {0x3041, 0x3096},   {0x3099, 0x30FF},   {0x3105, 0x312F},   {0x3131, 0x318E},   {0x3190, 0x31E3},
    {0x31F0, 0x321E},   {0x3220, 0x3247},   {0x3250, 0x4DBF},   {0x4E00, 0xA48C},   {0xA490, 0xA4C6},
    {0xA960, 0xA97C},   {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},   {0xFE10, 0xFE19},   {0xFE30, 0xFE52},
    {0xFE54, 0xFE66},   {0xFE68, 0xFE6B},   {0xFF01, 0xFF60},   {0xFFE0, 0xFFE6},   {0x16FE0, 0x16FE4},
    {0x16FF0, 0x16FF1}, {0x17000, 0x187F7}, {0x18800, 0x18CD5}, {0x18D00, 0x18D08}, {0x1AFF0, 0x1AFF3},
    {0x1AFF5, 0x1AFFB}, {0x1AFFD, 0x1AFFE}, {0x1B000, 0x1B122}, {0x1B132, 0x1B132}, {0x1B150, 0x1B152},
    {0x1B155, 0x1B155}, {0x1B164, 0x1B167}, {0x1B170, 0x1B2FB}, {0x1F004, 0x1F004}, {0x1F0CF, 0x1F0CF},
    {0x1F18E, 0x1F18E}, {0x1F191, 0x1F19A}, {0x1F200, 0x1F202}, {0x1F210, 0x1F23B}, {0x1F240, 0x1F248},
    {0x1F250, 0x1F251}, {0x1F260, 0x1F265}, {0x1F300, 0x1F320}, {0x1F32D, 0x1F335}, {0x1F337, 0x1F37C},
    {0x1F37E, 0x1F393}, {0x1F3A0, 0x1F3CA}, {0x1F3CF, 0x1F3D3}, {0x1F3E0, 0x1F3F0}, {0x1F3F4, 0x1F3F4},
    {0x1F3F8, 0x1F43E}, {0x1F440, 0x1F440}, {0x1F442, 0x1F4FC}, {0x1F4FF, 0x1F53D}, {0x1F54B, 0x1F54E},
    {0x1F550, 0x1F567}, {0x1F57A, 0x1F57A}, {0x1F595, 0x1F596}, {0x1F5A4, 0x1F5A4}, {0x1F5FB, 0x1F64F},
    {0x1F680, 0x1F6C5}, {0x1F6CC, 0x1F6CC}, {0x1F6D0, 0x1F6D2}, {0x1F6D5, 0x1F6D7}, {0x1F6DC, 0x1F6DF},
    {0x1F6EB, 0x1F6EC}, {0x1F6F4, 0x1F6FC}, {0x1F7E0, 0x1F7EB}, {0x1F7F0, 0x1F7F0}, {0x1F90C, 0x1F93A},
    {0x1F93C, 0x1F945}, {0x1F947, 0x1F9FF}, {0x1FA70, 0x1FA7C}, {0x1FA80, 0x1FA88}, {0x1FA90, 0x1FABD},
    {0x1FABF, 0x1FAC5}, {0x1FACE, 0x1FADB}, {0x1FAE0, 0x1FAE8}, {0x1FAF0, 0x1FAF8}, {0x20000, 0x2FFFD},
    {0x30000, 0x3FFFD},
};

// Zero width: the common combining-mark blocks (Mn, Me), variation selectors and zero-width format
// characters (Cf), after Markus Kuhn's wcwidth (https://www.cl.cam.ac.uk/~mgk25/ucs/wcwidth.c).
constexpr Range kZero[] = {
    {0x0300, 0x036F},   {0x0483, 0x0489},   {0x0591, 0x05BD},   {0x05BF, 0x05BF},   {0x05C1, 0x05C2},
    {0x05C4, 0x05C5},   {0x05C7, 0x05C7},   {0x0610, 0x061A},   {0x064B, 0x065F},   {0x0670, 0x0670},
    {0x06D6, 0x06DC},   {0x06DF, 0x06E4},   {0x06E7, 0x06E8},   {0x06EA, 0x06ED},   {0x0E31, 0x0E31},
    {0x0E34, 0x0E3A},   {0x0E47, 0x0E4E},   {0x1AB0, 0x1AFF},   {0x1DC0, 0x1DFF},   {0x200B, 0x200F},
    {0x2060, 0x2064},   {0x20D0, 0x20FF},   {0x302A, 0x302D},   {0x3099, 0x309A},   {0xFE00, 0xFE0F},
    {0xFE20, 0xFE2F},   {0xFEFF, 0xFEFF},   {0x1D167, 0x1D169}, {0x1D173, 0x1D182}, {0x1D185, 0x1D18B},
    {0x1D1AA, 0x1D1AD}, {0xE0001, 0xE0001}, {0xE0020, 0xE007F}, {0xE0100, 0xE01EF},
};

template <std::size_t N>
bool in(const Range (&table)[N], char32_t cp) noexcept {
  const Range* it = std::upper_bound(std::begin(table), std::end(table), cp,
                                     [](char32_t c, const Range& r) { return c < r.first; });
  return it != std::begin(table) && cp <= std::prev(it)->last;
}

/// "\u009b": a JSON escape of a code point of the Basic Multilingual Plane.
std::string fmt_u(char32_t cp) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s = "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) s += kHex[(cp >> shift) & 0xF];
  return s;
}

/// Calls put(cp, valid) for each code point of `s` (invalid bytes one by one, cp U+FFFD).
template <typename Fn>
void each_code_point(std::string_view s, Fn&& put) {
  for (std::size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      put(static_cast<char32_t>(static_cast<unsigned char>(s[i])), true);
      ++i;
      continue;
    }
    const Decoded d = decode_utf8(s, i);
    put(d.cp, d.valid);
    i += d.len;
  }
}

bool is_blank(char c) noexcept {
  return c == ' ' || c == '\t';
}

std::string quoted_csv(std::string_view safe) {
  const bool quote =
      safe.find_first_of(",\"") != std::string_view::npos || (!safe.empty() && is_blank(safe.front()));
  if (!quote) return std::string(safe);
  std::string out = "\"";
  for (char c : safe) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

/// Shared by the Prometheus escapers: `escape_quote` for label values.
std::string prometheus_text(std::string_view s, bool escape_quote) {
  std::string out;
  out.reserve(s.size());
  each_code_point(s, [&](char32_t cp, bool valid) {
    if (!valid) {
      out += "\xEF\xBF\xBD";
    } else if (cp == '\\') {
      out += "\\\\";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '"' && escape_quote) {
      out += "\\\"";
    } else if (is_terminal_control(cp)) {
      out += '?';
    } else {
      append_utf8(out, cp);
    }
  });
  return out;
}

template <class Json>
std::string dump_safe(const Json& j, int indent) {
  std::string text;
  try {
    text = j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (const std::exception&) {
    return "null";  // only std::bad_alloc can get here
  }
  // Raw C1 controls (C2 80..C2 9F), U+2028/U+2029 and the bidi controls (E2 80 A8..AE, E2 81 A6..A9)
  // can only sit inside strings (JSON's structure is ASCII): write them as \u escapes.
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == 0xC2 && i + 1 < text.size()) {
      const auto n = static_cast<unsigned char>(text[i + 1]);
      if (n >= 0x80 && n <= 0x9F) {
        out += fmt_u(n);
        ++i;
        continue;
      }
    }
    if (c == 0xE2 && i + 2 < text.size()) {
      const Decoded d = decode_utf8(text, i);
      if (d.valid && is_terminal_control(d.cp)) {
        out += fmt_u(d.cp);
        i += 2;
        continue;
      }
    }
    out.push_back(static_cast<char>(c));
  }
  return out;
}

}  // namespace

int column_width(char32_t cp) noexcept {
  if (cp < 0x300) return 1;  // ASCII, Latin-1 and controls (drawn as '?')
  if (in(kZero, cp)) return 0;
  if (in(kWide, cp)) return 2;
  return 1;
}

std::size_t columns(std::string_view s) noexcept {
  std::size_t n = 0;
  each_code_point(
      s, [&](char32_t cp, bool valid) { n += valid ? static_cast<std::size_t>(column_width(cp)) : 1; });
  return n;
}

std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  each_code_point(s, [&](char32_t cp, bool valid) {
    if (valid) {
      append_utf8(out, cp);
    } else {
      out += "\xEF\xBF\xBD";
    }
  });
  return out;
}

std::string terminal(std::string_view s, bool utf8) {
  std::string out;
  out.reserve(s.size());
  each_code_point(s, [&](char32_t cp, bool valid) {
    if (!valid || is_terminal_control(cp) || (!utf8 && cp > 0x7E)) {
      out.push_back('?');
    } else {
      append_utf8(out, cp);
    }
  });
  return out;
}

std::string csv_smi(std::string_view s) {
  return quoted_csv(terminal(s));
}

std::string csv(std::string_view s) {
  return quoted_csv(terminal(s));
}

std::string prometheus_label_value(std::string_view s) {
  return prometheus_text(s, true);
}

std::string prometheus_help(std::string_view s) {
  return prometheus_text(s, false);
}

std::string prometheus_label_name(std::string_view name) {
  std::string s;
  for (char c : name) {
    if (c >= 'A' && c <= 'Z') {
      s += static_cast<char>(c - 'A' + 'a');
    } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_') {
      s += c;
    } else {
      s += '_';
    }
  }
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) s.insert(s.begin(), '_');
  while (s.size() > 1 && s[0] == '_' && s[1] == '_') s.erase(0, 1);
  return s;
}

std::string html(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  each_code_point(s, [&](char32_t cp, bool valid) {
    if (!valid) {
      out += "\xEF\xBF\xBD";
      return;
    }
    switch (cp) {
      case '&': out += "&amp;"; return;
      case '<': out += "&lt;"; return;
      case '>': out += "&gt;"; return;
      case '"': out += "&quot;"; return;
      case '\'': out += "&#39;"; return;
      case '\t':
      case '\n':
      case '\r': out.push_back(static_cast<char>(cp)); return;
      default: break;
    }
    if (is_terminal_control(cp)) {
      out += '?';
    } else {
      append_utf8(out, cp);
    }
  });
  return out;
}

std::string html_script(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 16);
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '<' && i + 1 < text.size()) {
      if (text.substr(i, 4) == "<!--") {
        out += "<\\!--";
        i += 3;
        continue;
      }
      if (text[i + 1] == '/' && text.size() - i >= 8) {
        std::string word(text.substr(i + 2, 6));
        for (auto& ch : word) {
          if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
        }
        if (word == "script" || word.substr(0, 5) == "style") {
          out += "<\\/";
          ++i;
          continue;
        }
      }
    }
    out += c;
  }
  return out;
}

std::string markdown_inline(std::string_view s) {
  static constexpr std::string_view kPunct = "\\`*_[]<>|!~#&";
  std::string out;
  out.reserve(s.size() + 8);
  each_code_point(s, [&](char32_t cp, bool valid) {
    if (!valid) {
      out += '?';
    } else if (cp == '\n' || cp == '\r') {
      out += ' ';
    } else if (is_terminal_control(cp)) {
      out += '?';
    } else if (cp < 0x80 && kPunct.find(static_cast<char>(cp)) != std::string_view::npos) {
      out += '\\';
      out += static_cast<char>(cp);
    } else {
      append_utf8(out, cp);
    }
  });
  return out;
}

std::string markdown_code_span(std::string_view s, bool in_table) {
  std::string body;
  body.reserve(s.size() + 4);
  std::size_t run = 0, longest = 0;
  each_code_point(s, [&](char32_t cp, bool valid) {
    run = cp == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
    if (!valid) {
      body += '?';
    } else if (cp == '\n' || cp == '\r') {
      body += ' ';
    } else if (is_terminal_control(cp)) {
      body += '?';
    } else if (cp == '|' && in_table) {
      body += "\\|";
    } else {
      append_utf8(body, cp);
    }
  });
  const std::string fence(longest + 1, '`');
  // A span that starts or ends with a backtick needs a space inside the fence (CommonMark strips
  // one space on each side when both are there).
  const bool pad = !body.empty() && (body.front() == '`' || body.back() == '`');
  if (body.empty()) return "` `";
  return fence + (pad ? " " : "") + body + (pad ? " " : "") + fence;
}

std::string json_dump(const nlohmann::json& j, int indent) {
  return dump_safe(j, indent);
}

std::string json_dump(const nlohmann::ordered_json& j, int indent) {
  return dump_safe(j, indent);
}

}  // namespace trainmon::text
