// SPDX-License-Identifier: Apache-2.0
// Output-side unit conversions and text helpers shared by the nvidia-smi / gpustat compatible views,
// the terminal UI, the run summaries and the report (in core, namespace trainmon, so that every floor
// prints a value the same way: docs/architecture.md). Inside the program memory is bytes and power
// milliwatts (DESIGN.md); these convert at output only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "trainmon/core/reading.h"

namespace trainmon {

inline constexpr std::uint64_t kMiB = 1024ull * 1024ull;

/// Bytes to MiB, rounded down (nvidia-smi prints floor(bytes / 2^20): 143771 MiB on an H200).
constexpr std::uint64_t bytes_to_mib(std::uint64_t bytes) noexcept {
  return bytes / kMiB;
}

/// Milliwatts as watts with two decimals, the way nvidia-smi prints power ("631.95").
std::string mw_to_watts_2dp(std::uint64_t mw);

/// Local wall-clock time as nvidia-smi's `timestamp` field: "YYYY/MM/DD HH:MM:SS.mmm".
std::string nvidia_smi_timestamp(std::int64_t time_unix_ns);

/// Local time as ISO 8601 without zone, microseconds, as Python's datetime.isoformat()
/// (gpustat's `query_time`): "2026-07-03T22:10:46.109000".
std::string iso_local_time(std::int64_t time_unix_ns);

/// The text nvidia-smi prints for a value it could not read, by reason: "[N/A]" for not supported /
/// not available / not collected / missing symbol, "[Insufficient Permissions]", "[GPU is lost]",
/// "[Unknown Error]" for timeouts and other failures.
std::string_view nvidia_smi_na_text(ReadStatus status) noexcept;

/// Degree sign for temperatures: "°" on UTF-8 output, empty (so "28C") otherwise.
std::string_view degree_sign(bool utf8) noexcept;

/// Every non-ASCII code point (and control character) as '?', for non-UTF-8 locales:
/// text::terminal(text, false).
std::string to_ascii(std::string_view text);

/// Text from the driver, /proc or a recorded command line made safe for a terminal: the same as
/// text::terminal (core/text_escape.h, where the rules are), kept under this name for the views.
std::string terminal_text(std::string_view text, bool utf8 = true);

/// Number of terminal columns `text` takes: ANSI escape sequences our views add count 0, each code
/// point text::column_width (CJK and emoji 2, combining marks 0), an invalid byte 1.
std::size_t display_width(std::string_view text) noexcept;

/// Cut `text` to at most `columns` display columns, keeping escape sequences whole; appends a
/// reset ("\x1b[0m") when a cut happened inside coloured text. Never splits a UTF-8 sequence nor a
/// double-width character (one that would not fit whole is left out).
std::string truncate_display(std::string_view text, std::size_t columns);

/// Basename of a path ("/root/tools/memhog" -> "memhog").
std::string_view path_basename(std::string_view path) noexcept;

}  // namespace trainmon
