// SPDX-License-Identifier: Apache-2.0
// What the output stream is: a terminal or not, how wide, whether colours and UTF-8 are welcome.
// Decisions are pure functions of explicit inputs (testable); `probe_terminal` gathers the inputs.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace trainmon::exp {

/// Colour request from the command line.
enum class ColorMode { automatic, never, always };

/// Facts about one output stream and the environment.
struct TerminalInfo {
  bool is_tty = false;        ///< isatty(fd)
  std::size_t columns = 0;    ///< TIOCGWINSZ, else $COLUMNS, else 0 (unknown: do not truncate)
  bool utf8 = false;          ///< the locale's codeset is UTF-8 (LC_ALL / LC_CTYPE / LANG)
  bool no_color_env = false;  ///< $NO_COLOR set and non-empty (https://no-color.org)
  bool dumb = false;          ///< $TERM is "dumb" or unset
};

/// Inspect file descriptor `fd` and the environment. `columns` from the ioctl when fd is a
/// terminal, else from a numeric $COLUMNS, else 0.
TerminalInfo probe_terminal(int fd);

/// Whether to emit ANSI colours: `always` wins; `never` or $NO_COLOR turn them off; `automatic`
/// colours only a TTY whose $TERM is not dumb. Pipes and files get no escape codes.
bool use_color(ColorMode mode, const TerminalInfo& term) noexcept;

/// Whether a locale name ("en_US.UTF-8", "C.utf8", "C", "POSIX") selects UTF-8.
bool locale_is_utf8(const std::string& locale_name) noexcept;

/// Parse $COLUMNS-style text: a positive integer, else nullopt.
std::optional<std::size_t> parse_columns(const char* text) noexcept;

}  // namespace trainmon::exp
