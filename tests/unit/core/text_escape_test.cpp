// SPDX-License-Identifier: Apache-2.0
// The escapers of every output format (trainmon/core/text_escape.h), on literal hostile strings.
#include <gtest/gtest.h>

#include <clocale>
#include <cwchar>
#include <string>

#include <nlohmann/json.hpp>

#include "trainmon/core/text_escape.h"

using namespace trainmon;

namespace {

// Strings a hostile driver, process or user can hand us: escape sequences (7-bit and 8-bit CSI,
// OSC title setting), newlines, bidi overrides, invalid UTF-8, format delimiters.
const std::string kEsc = "GPU\x1b[31mred\x1b]0;pwned\x07";
const std::string kC1 =
    "a\xC2\x9B"
    "31mb";  // U+009B CSI, UTF-8 encoded
const std::string kRawC1 =
    "a\x9B"
    "31mb";  // a bare 0x9B byte (CSI on 8-bit terminals)
const std::string kBidi =
    "abc\xE2\x80\xAE"
    "def";  // U+202E RIGHT-TO-LEFT OVERRIDE
const std::string kLines = "one\ntwo\rthree\tfour";

bool has_control(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto d = text::decode_utf8(s, i);
    if (!d.valid || text::is_terminal_control(d.cp)) return true;
    i += d.len;
  }
  return false;
}

}  // namespace

TEST(TextEscape, TerminalReplacesEveryControlAndKeepsPrintableText) {
  EXPECT_EQ(text::terminal(kEsc), "GPU?[31mred?]0;pwned?");
  EXPECT_EQ(text::terminal(kC1), "a?31mb");
  EXPECT_EQ(text::terminal(kRawC1), "a?31mb");
  EXPECT_EQ(text::terminal(kBidi), "abc?def");
  EXPECT_EQ(text::terminal(kLines), "one?two?three?four");
  EXPECT_EQ(text::terminal("\xE2\x80\xA8x\xE2\x81\xA6"), "?x?") << "U+2028, U+2066";
  EXPECT_EQ(text::terminal("caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x9A\x80"),
            "caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x9A\x80")
      << "accents, CJK and emoji are printable";
  EXPECT_EQ(text::terminal("py\xFFthon\xC3"), "py?thon?") << "invalid bytes";
  EXPECT_EQ(text::terminal("\xC0\xAF\xED\xA0\x80"), "?????") << "overlong form, surrogate";
  EXPECT_EQ(text::terminal("caf\xC3\xA9\x1b", false), "caf??") << "ASCII locale";
  EXPECT_EQ(text::terminal("NVIDIA H100 80GB HBM3"), "NVIDIA H100 80GB HBM3");
}

TEST(TextEscape, CsvSmiIsNvidiaSmiForNormalStringsAndOneFieldForOthers) {
  for (const char* normal : {"NVIDIA H100 80GB HBM3", "GPU-6f8e2a10-0000-4000-8000-000000000001", "[N/A]",
                             "/usr/bin/python3", "00000000:18:00.0", "Not Active", "python train.py"})
    EXPECT_EQ(text::csv_smi(normal), normal);
  EXPECT_EQ(text::csv_smi("A, B"), "\"A, B\"");
  EXPECT_EQ(text::csv_smi("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(text::csv_smi(" lead"), "\" lead\"") << "a leading blank would be eaten by skipinitialspace";
  EXPECT_EQ(text::csv_smi("x\ny, z"), "\"x?y, z\"") << "no raw newline";
  EXPECT_FALSE(has_control(text::csv_smi(kEsc)));
  EXPECT_EQ(text::csv("a,b\n\"c\""), "\"a,b?\"\"c\"\"\"");
}

TEST(TextEscape, PrometheusLabelValues) {
  EXPECT_EQ(text::prometheus_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(text::prometheus_label_value(kEsc), "GPU?[31mred?]0;pwned?");
  EXPECT_EQ(text::prometheus_label_value("py\xFFthon"), "py\xEF\xBF\xBDthon");
  EXPECT_EQ(text::prometheus_help("x\\y\nz\""), "x\\\\y\\nz\"");
  EXPECT_EQ(text::prometheus_label_name("SLURM_JOB_ID"), "slurm_job_id");
  EXPECT_EQ(text::prometheus_label_name("\x1b[0m"), "_0m");
}

TEST(TextEscape, Html) {
  EXPECT_EQ(text::html("<script>alert('x')</script>&\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;");
  EXPECT_EQ(text::html("a\x1b"
                       "b\xFF\n"),
            "a?b\xEF\xBF\xBD\n");
  EXPECT_EQ(text::html_script("x</SCRIPT><!--y</style>"), "x<\\/SCRIPT><\\!--y<\\/style>");
}

TEST(TextEscape, MarkdownInlineEscapesMarkupPipesAndNewlines) {
  EXPECT_EQ(text::markdown_inline("a|b"), "a\\|b");
  EXPECT_EQ(text::markdown_inline("<img src=x onerror=alert(1)>"), "\\<img src=x onerror=alert(1)\\>");
  EXPECT_EQ(text::markdown_inline("`code` *b* _i_ [l](u) ![i](u) ~~s~~ # & \\"),
            "\\`code\\` \\*b\\* \\_i\\_ \\[l\\](u) \\!\\[i\\](u) \\~\\~s\\~\\~ \\# \\& \\\\");
  EXPECT_EQ(text::markdown_inline("one\ntwo\r\x1b"), "one two ?");
}

TEST(TextEscape, MarkdownCodeSpanHoldsAnyTextLiterally) {
  EXPECT_EQ(text::markdown_code_span("python train.py"), "`python train.py`");
  EXPECT_EQ(text::markdown_code_span("a`b"), "``a`b``");
  EXPECT_EQ(text::markdown_code_span("``x"), "``` ``x ```");
  EXPECT_EQ(text::markdown_code_span("a|b\nc"), "`a\\|b c`");
  EXPECT_EQ(text::markdown_code_span("a|b", false), "`a|b`");
  EXPECT_EQ(text::markdown_code_span(""), "` `");
}

TEST(TextEscape, JsonDumpNeverThrowsAndEscapesC1AndBidi) {
  nlohmann::json j = {{"name",
                       "bad\xFF"
                       "byte"},
                      {"c1", kC1},
                      {"bidi", kBidi},
                      {"esc", kEsc}};
  std::string out;
  ASSERT_NO_THROW(out = text::json_dump(j));
  EXPECT_FALSE(has_control(out)) << out;
  const auto back = nlohmann::json::parse(out);
  EXPECT_EQ(back["c1"], kC1) << "the same document for a parser";
  EXPECT_EQ(back["bidi"], kBidi);
  EXPECT_EQ(back["esc"], kEsc);
  EXPECT_EQ(back["name"],
            "bad\xEF\xBF\xBD"
            "byte");
  EXPECT_NE(out.find("\\u009b"), std::string::npos);
  EXPECT_NE(out.find("\\u202e"), std::string::npos);
  nlohmann::ordered_json o = {{"z", 1}, {"a", "x\xFE"}};
  EXPECT_EQ(text::json_dump(o), "{\"z\":1,\"a\":\"x\xEF\xBF\xBD\"}");
}

TEST(TextEscape, ColumnWidthsAgreeWithTheCLibrary) {
  // glibc's wcwidth (Unicode 15 in bookworm) under a UTF-8 locale is what terminals' width tables
  // follow; ours must agree on the characters names and commands carry.
  ASSERT_NE(std::setlocale(LC_CTYPE, "C.UTF-8"), nullptr);
  int checked = 0;
  for (char32_t cp :
       {U'a',      U'\u00e9', U'\u4e2d',     U'\u6587',     U'\uac00',     U'\u3042', U'\uff21',
        U'\uff01', U'\u3000', U'\U0001F680', U'\U0001F600', U'\U0001F44D', U'\u231A', U'\u2614',
        U'\u0301', U'\u200b', U'\ufe0f',     U'\u2500',     U'\u25cf',     U'\u00b0', U'\U00020000',
        U'\u1100', U'\u2e80', U'\U0001F9D1', U'\U0001FA70'}) {
    const int libc = ::wcwidth(static_cast<wchar_t>(cp));
    EXPECT_EQ(text::column_width(cp), libc) << "U+" << std::hex << static_cast<unsigned>(cp);
    ++checked;
  }
  // Every wide code point of the main blocks.
  for (char32_t cp = 0x4E00; cp < 0x9FFF; cp += 97) {
    EXPECT_EQ(text::column_width(cp), ::wcwidth(static_cast<wchar_t>(cp)));
  }
  for (char32_t cp = 0x1F300; cp < 0x1F64F; ++cp) {
    if (::wcwidth(static_cast<wchar_t>(cp)) == 2) {
      EXPECT_EQ(text::column_width(cp), 2) << std::hex << static_cast<unsigned>(cp);
    }
  }
  std::setlocale(LC_CTYPE, "C");
  EXPECT_GT(checked, 20);
  EXPECT_EQ(text::columns("\xE4\xB8\xAD\xE6\x96\x87x"), 5u);
  EXPECT_EQ(text::columns("e\xCC\x81"), 1u) << "e + combining acute";
}
