// SPDX-License-Identifier: Apache-2.0
// /proc/PID/cmdline: untrusted NUL-separated bytes to one display line of valid UTF-8.
#include "trainmon/host/parse_process.h"

namespace trainmon {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

/// Length of the valid UTF-8 sequence at s[i], or 0 when the bytes there are invalid
/// (overlong forms, surrogates and code points above U+10FFFF are invalid, RFC 3629).
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) noexcept {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return 1;
  std::size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF)
    len = 2;
  else if (b0 == 0xE0)
    len = 3, lo = 0xA0;
  else if (b0 >= 0xE1 && b0 <= 0xEC)
    len = 3;
  else if (b0 == 0xED)
    len = 3, hi = 0x9F;
  else if (b0 >= 0xEE && b0 <= 0xEF)
    len = 3;
  else if (b0 == 0xF0)
    len = 4, lo = 0x90;
  else if (b0 >= 0xF1 && b0 <= 0xF3)
    len = 4;
  else if (b0 == 0xF4)
    len = 4, hi = 0x8F;
  else
    return 0;
  if (i + len > s.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (b < lo || b > hi) return 0;
    lo = 0x80;
    hi = 0xBF;
  }
  return len;
}

std::string_view trim_nul_padding(std::string_view raw) noexcept {
  while (!raw.empty() && raw.back() == '\0') raw.remove_suffix(1);
  return raw;
}

}  // namespace

std::string sanitize_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size();) {
    const auto len = utf8_sequence_length(bytes, i);
    if (len == 0) {
      out += kReplacement;
      ++i;
    } else {
      out.append(bytes.substr(i, len));
      i += len;
    }
  }
  return out;
}

std::string parse_cmdline(std::string_view raw, std::size_t max_bytes) {
  raw = trim_nul_padding(raw);
  std::string out;
  out.reserve(raw.size() < max_bytes ? raw.size() : max_bytes);
  for (std::size_t i = 0; i < raw.size();) {
    const auto b = static_cast<unsigned char>(raw[i]);
    std::string_view piece;
    std::size_t advance = 1;
    char space = ' ';
    if (b < 0x20 || b == 0x7F) {
      piece = std::string_view(&space, 1);  // NUL separators and control bytes
    } else if (const auto len = utf8_sequence_length(raw, i); len == 0) {
      piece = kReplacement;
    } else {
      piece = raw.substr(i, len);
      advance = len;
    }
    if (out.size() + piece.size() > max_bytes) break;  // cut on a character boundary
    out.append(piece);
    i += advance;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::vector<std::string> split_cmdline(std::string_view raw) {
  raw = trim_nul_padding(raw);
  std::vector<std::string> args;
  if (raw.empty()) return args;
  std::size_t start = 0;
  while (true) {
    const auto nul = raw.find('\0', start);
    args.push_back(sanitize_utf8(raw.substr(start, nul == std::string_view::npos ? raw.npos : nul - start)));
    if (nul == std::string_view::npos) break;
    start = nul + 1;
  }
  return args;
}

std::vector<std::string> parse_cmdline_args(std::string_view raw, std::size_t max_bytes) {
  const bool nul_terminated = !raw.empty() && raw.back() == '\0';
  raw = trim_nul_padding(raw);
  std::vector<std::string_view> pieces;
  auto split = [&](std::string_view text, char sep, bool keep_empty) {
    pieces.clear();
    for (std::size_t start = 0;;) {
      const auto at = text.find(sep, start);
      const auto piece = text.substr(start, at == std::string_view::npos ? text.npos : at - start);
      if (keep_empty || !piece.empty()) pieces.push_back(piece);
      if (at == std::string_view::npos) break;
      start = at + 1;
    }
  };
  if (raw.empty()) return {};
  split(raw, '\0', true);
  // A rewritten argv (setproctitle): one text with blanks, split at them as psutil does.
  if (!nul_terminated || (pieces.size() == 1 && raw.find(' ') != std::string_view::npos)) {
    const std::vector<std::string_view> texts = pieces;
    std::vector<std::string_view> words;
    for (const auto text : texts) {
      split(text, ' ', false);
      words.insert(words.end(), pieces.begin(), pieces.end());
    }
    pieces = std::move(words);
  }
  std::vector<std::string> args;
  std::size_t total = 0;
  for (const auto p : pieces) {
    std::string a = sanitize_utf8(p);
    if (total + a.size() > max_bytes) {
      std::size_t cut = max_bytes - total;  // on a character boundary
      while (cut > 0 && (static_cast<unsigned char>(a[cut]) & 0xC0) == 0x80) --cut;
      a.resize(cut);
      if (!a.empty()) args.push_back(std::move(a));
      break;
    }
    total += a.size();
    args.push_back(std::move(a));
  }
  return args;
}

}  // namespace trainmon
