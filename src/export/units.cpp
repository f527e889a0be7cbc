// SPDX-License-Identifier: Apache-2.0
#include "trainmon/export/units.h"

#include <fmt/format.h>

#include <ctime>

namespace trainmon::exp {

std::string mw_to_watts_2dp(std::uint64_t mw) {
  // Integer arithmetic: 631950 mW -> "631.95", no binary-float rounding surprises.
  const std::uint64_t centiwatts = (mw + 5) / 10;
  return fmt::format("{}.{:02}", centiwatts / 100, centiwatts % 100);
}

namespace {
struct LocalParts {
  std::tm tm{};
  unsigned micros = 0;
};
LocalParts local_parts(std::int64_t time_unix_ns) {
  LocalParts p;
  std::int64_t secs = time_unix_ns / 1'000'000'000;
  std::int64_t rem = time_unix_ns % 1'000'000'000;
  if (rem < 0) {
    rem += 1'000'000'000;
    --secs;
  }
  const std::time_t t = static_cast<std::time_t>(secs);
  ::localtime_r(&t, &p.tm);
  p.micros = static_cast<unsigned>(rem / 1000);
  return p;
}
}  // namespace

std::string nvidia_smi_timestamp(std::int64_t time_unix_ns) {
  const LocalParts p = local_parts(time_unix_ns);
  return fmt::format("{:04}/{:02}/{:02} {:02}:{:02}:{:02}.{:03}", p.tm.tm_year + 1900, p.tm.tm_mon + 1,
                     p.tm.tm_mday, p.tm.tm_hour, p.tm.tm_min, p.tm.tm_sec, p.micros / 1000);
}

std::string iso_local_time(std::int64_t time_unix_ns) {
  const LocalParts p = local_parts(time_unix_ns);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}", p.tm.tm_year + 1900, p.tm.tm_mon + 1,
                     p.tm.tm_mday, p.tm.tm_hour, p.tm.tm_min, p.tm.tm_sec, p.micros);
}

std::string_view nvidia_smi_na_text(ReadStatus status) noexcept {
  switch (status) {
    case ReadStatus::no_permission: return "[Insufficient Permissions]";
    case ReadStatus::gpu_lost: return "[GPU is lost]";
    case ReadStatus::timeout:
    case ReadStatus::failed:
    case ReadStatus::invalid_value: return "[Unknown Error]";
    default: return "[N/A]";
  }
}

std::string_view degree_sign(bool utf8) noexcept {
  return utf8 ? "\xC2\xB0" : "";
}

std::string to_ascii(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      out.push_back(c < 0x20 || c == 0x7F ? '?' : static_cast<char>(c));
      continue;
    }
    // One '?' per code point: skip the continuation bytes.
    out.push_back('?');
    while (i + 1 < text.size() && (static_cast<unsigned char>(text[i + 1]) & 0xC0) == 0x80) ++i;
  }
  return out;
}

std::string terminal_text(std::string_view s, bool utf8) {
  if (!utf8) return to_ascii(s);
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F) {
      out.push_back('?');
    } else if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(s[i + 1]) <= 0x9F) {
      out.push_back('?');
      ++i;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

namespace {
/// Length of the escape sequence starting at text[i] (which is ESC), 1 if malformed.
std::size_t escape_length(std::string_view text, std::size_t i) noexcept {
  if (i + 1 < text.size() && text[i + 1] == '[') {
    std::size_t j = i + 2;
    while (j < text.size() && !(text[j] >= 0x40 && text[j] <= 0x7E)) ++j;
    return j < text.size() ? j - i + 1 : text.size() - i;
  }
  return 1;
}
std::size_t utf8_length(unsigned char lead) noexcept {
  if (lead >= 0xF0) return 4;
  if (lead >= 0xE0) return 3;
  if (lead >= 0xC0) return 2;
  return 1;
}
}  // namespace

std::size_t display_width(std::string_view text) noexcept {
  std::size_t width = 0;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] == '\x1b') {
      i += escape_length(text, i);
      continue;
    }
    i += utf8_length(static_cast<unsigned char>(text[i]));
    ++width;
  }
  return width;
}

std::string truncate_display(std::string_view text, std::size_t columns) {
  std::string out;
  std::size_t width = 0;
  bool coloured = false;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] == '\x1b') {
      const std::size_t n = escape_length(text, i);
      out.append(text.substr(i, n));
      coloured = true;
      i += n;
      continue;
    }
    if (width == columns) {
      if (coloured) out += "\x1b[0m";
      return out;
    }
    const std::size_t n = std::min(utf8_length(static_cast<unsigned char>(text[i])), text.size() - i);
    out.append(text.substr(i, n));
    i += n;
    ++width;
  }
  return out;
}

std::string_view path_basename(std::string_view path) noexcept {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace trainmon::exp
