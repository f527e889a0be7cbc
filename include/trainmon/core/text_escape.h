// SPDX-License-Identifier: Apache-2.0
// The one place where text from outside (the driver, /proc, the training process, the user: GPU
// names, process names and command lines, labels, event fields, run names) is made safe for the
// output it goes to. Every view calls the escaper of its format; none writes such a string raw.
//
//   terminal      stderr summaries, `show`, `runs`, `status`, `query`, dmon/pmon text, `top`
//   csv_smi       nvidia-smi style CSV (`query`, dmon/pmon --csv): byte-identical for normal strings
//   csv           RFC 4180 CSV (`export --format csv`)
//   prometheus_*  /metrics label values, HELP text and label names
//   html, html_script   the HTML report and anything put into a page
//   markdown_*    the Markdown report
//   json_dump     every JSON document (never throws on invalid UTF-8; no C1 or bidi controls raw)
//
// Control characters are replaced, not dropped, so a reader sees that something was there: '?' on
// terminals and in CSV (as nvidia-smi's own tools show unprintable bytes), U+FFFD where the format
// is UTF-8 data (Prometheus, HTML, JSON) and the byte was not valid UTF-8.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace trainmon::text {

/// One UTF-8 sequence decoded: `cp` and how many bytes it took; `valid` false for a byte that does
/// not start a well-formed sequence (overlong forms, surrogates and values above U+10FFFF included):
/// then `len` is 1 and `cp` is U+FFFD.
struct Decoded {
  char32_t cp = 0;
  std::size_t len = 1;
  bool valid = true;
};
/// Decodes the sequence at `s[i]` (i < s.size()).
Decoded decode_utf8(std::string_view s, std::size_t i) noexcept;
/// Appends the UTF-8 encoding of `cp`.
void append_utf8(std::string& out, char32_t cp);

/// Whether `cp` must never reach a terminal as itself: C0 controls (newline and tab too: a name must
/// not break a row), DEL, the C1 range U+0080..U+009F (xterm and others act on them in UTF-8 too:
/// U+009B is CSI), the line and paragraph separators U+2028/U+2029, and the bidirectional embeddings,
/// overrides and isolates U+202A..U+202E, U+2066..U+2069 (they reorder what follows on screen:
/// "Trojan Source", CVE-2021-42574).
bool is_terminal_control(char32_t cp) noexcept;

/// Columns `cp` takes on a terminal: 2 for East Asian Wide and Fullwidth characters and emoji
/// presentation (Unicode 15.0 EastAsianWidth.txt classes W and F), 0 for combining marks, variation
/// selectors and zero-width format characters (the set of Markus Kuhn's wcwidth), 1 otherwise.
/// Controls (is_terminal_control) count 1: the '?' they are drawn as.
int column_width(char32_t cp) noexcept;

/// Columns UTF-8 `s` takes once made terminal-safe (invalid bytes count 1 each).
std::size_t columns(std::string_view s) noexcept;

/// `s` with every invalid UTF-8 byte replaced by U+FFFD; valid text comes back unchanged.
std::string valid_utf8(std::string_view s);

/// For a terminal: every control (is_terminal_control) and every invalid UTF-8 byte becomes '?';
/// `utf8` false (a non-UTF-8 locale): every non-ASCII code point becomes one '?' as well.
/// Printable text comes back unchanged.
std::string terminal(std::string_view s, bool utf8 = true);

/// One field of nvidia-smi's CSV (", " between fields, no quoting of its own): terminal-safe (no
/// newline can start a fake row, no escape sequence reaches a terminal), and put in double quotes,
/// inner quotes doubled (RFC 4180), only when it holds a comma or a double quote or starts with a
/// blank, so that csv readers (Python's csv with skipinitialspace, pandas) see one field.
/// Every string nvidia-smi itself prints comes back byte-identical.
std::string csv_smi(std::string_view s);

/// One RFC 4180 field: controls as in terminal() ('?': no raw newline), quoted when it holds a comma
/// or a double quote or starts with a blank.
std::string csv(std::string_view s);

/// A Prometheus label value (text exposition format 0.0.4): backslash, double quote and newline
/// escaped (\\ \" \n), other controls '?', invalid UTF-8 U+FFFD (one bad name must not break a scrape).
std::string prometheus_label_value(std::string_view s);
/// Prometheus HELP text: backslash and newline escaped, other controls '?', invalid UTF-8 U+FFFD.
std::string prometheus_help(std::string_view s);
/// A valid Prometheus label name, lower case: [a-z_][a-z0-9_]*, other characters '_', a leading
/// digit gets a '_' in front; a leading "__" (reserved by Prometheus) becomes one '_'.
std::string prometheus_label_name(std::string_view s);

/// HTML text or a double- or single-quoted attribute value: & < > " ' as entities, controls other
/// than tab / newline / carriage return '?', invalid UTF-8 U+FFFD.
std::string html(std::string_view s);
/// Text put inside an inline <script> or <style> element: "</script" (any case) becomes "<\/script"
/// and "<!--" becomes "<\!--", so the element cannot be closed or turned into a comment from inside.
std::string html_script(std::string_view s);

/// Inline Markdown (CommonMark / GFM), a table cell included: the ASCII punctuation that starts
/// inline markup or ends a cell (\ ` * _ [ ] < > | ! ~ # &) backslash-escaped, so names render as
/// the text they are and raw HTML never reaches the page; newlines as spaces; other controls '?'.
std::string markdown_inline(std::string_view s);
/// A GFM code span (`like this`) holding `s` literally: the fence is one backtick longer than the
/// longest backtick run inside, newlines become spaces, other controls '?'; `in_table`: '|' escaped
/// as well (GFM splits table cells before it reads code spans).
std::string markdown_code_span(std::string_view s, bool in_table = true);

/// `j` serialised (indent < 0: one line), safe for any destination: invalid UTF-8 in strings becomes
/// U+FFFD (nlohmann would throw), and the C1 controls, U+2028/U+2029 and bidi controls that JSON
/// may carry raw are written as \u escapes (the same document for a parser). Never throws.
std::string json_dump(const nlohmann::json& j, int indent = -1);
/// The same for ordered JSON documents (dmon/pmon --json keep nvidia-smi's column order).
std::string json_dump(const nlohmann::ordered_json& j, int indent = -1);

}  // namespace trainmon::text
