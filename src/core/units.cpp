// SPDX-License-Identifier: Apache-2.0
#include "trainmon/core/units.h"

#include <fmt/format.h>

#include <ctime>

#include "trainmon/core/text_escape.h"

namespace trainmon {

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
  return text::terminal(text, false);
}

std::string terminal_text(std::string_view s, bool utf8) {
  return text::terminal(s, utf8);
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
}  // namespace

std::size_t display_width(std::string_view text) noexcept {
  std::size_t width = 0;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] == '\x1b') {
      i += escape_length(text, i);
      continue;
    }
    const text::Decoded d = text::decode_utf8(text, i);
    i += d.len;
    width += d.valid ? static_cast<std::size_t>(text::column_width(d.cp)) : 1;
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
    const text::Decoded d = text::decode_utf8(text, i);
    const std::size_t w = d.valid ? static_cast<std::size_t>(text::column_width(d.cp)) : 1;
    if (width + w > columns) {  // a wide character that does not fit whole is left out
      if (coloured) out += "\x1b[0m";
      return out;
    }
    out.append(text.substr(i, d.len));
    i += d.len;
    width += w;
  }
  return out;
}

std::string_view path_basename(std::string_view path) noexcept {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace trainmon
