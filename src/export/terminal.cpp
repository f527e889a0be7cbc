// SPDX-License-Identifier: Apache-2.0
#include "trainmon/export/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>

namespace trainmon::exp {

namespace {
const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}
}  // namespace

bool locale_is_utf8(const std::string& locale_name) noexcept {
  std::string lower;
  lower.reserve(locale_name.size());
  for (char c : locale_name) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return lower.find("utf-8") != std::string::npos || lower.find("utf8") != std::string::npos;
}

std::optional<std::size_t> parse_columns(const char* text) noexcept {
  if (!text || !*text) return std::nullopt;
  std::size_t value = 0;
  const char* end = text + std::strlen(text);
  auto [ptr, ec] = std::from_chars(text, end, value);
  if (ec != std::errc{} || ptr != end || value == 0) return std::nullopt;
  return value;
}

TerminalInfo probe_terminal(int fd) {
  TerminalInfo info;
  info.is_tty = ::isatty(fd) == 1;
  if (info.is_tty) {
    winsize ws{};
    if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) info.columns = ws.ws_col;
  }
  if (info.columns == 0) info.columns = parse_columns(std::getenv("COLUMNS")).value_or(0);
  // The locale as setlocale(LC_CTYPE, "") would pick it: LC_ALL, then LC_CTYPE, then LANG.
  const char* loc = env("LC_ALL");
  if (!loc) loc = env("LC_CTYPE");
  if (!loc) loc = env("LANG");
  info.utf8 = loc && locale_is_utf8(loc);
  info.no_color_env = env("NO_COLOR") != nullptr;
  const char* term = env("TERM");
  info.dumb = !term || std::strcmp(term, "dumb") == 0;
  return info;
}

bool use_color(ColorMode mode, const TerminalInfo& term) noexcept {
  switch (mode) {
    case ColorMode::always: return true;
    case ColorMode::never: return false;
    case ColorMode::automatic: return term.is_tty && !term.dumb && !term.no_color_env;
  }
  return false;
}

}  // namespace trainmon::exp
