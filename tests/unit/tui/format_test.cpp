// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "trainmon/core/text_escape.h"
#include "trainmon/tui/canvas.h"
#include "trainmon/tui/format.h"
#include "trainmon/tui/history.h"
#include "trainmon/tui/panels.h"

namespace trainmon::tui {
namespace {

TEST(TuiFormat, HumanBytesRatesElapsed) {
  EXPECT_EQ(human_bytes(512), "512B");
  EXPECT_EQ(human_bytes(1536), "1.5K");
  EXPECT_EQ(human_bytes(61ull << 30), "61G");
  EXPECT_EQ(human_bytes(143771ull << 20), "140G");
  EXPECT_EQ(human_bytes(1ull << 40), "1.0T");
  EXPECT_EQ(human_rate(-1), "0B/s");
  EXPECT_EQ(human_rate(NAN), "0B/s");
  EXPECT_EQ(human_rate(2.0 * 1024 * 1024), "2.0M/s");
  EXPECT_EQ(human_elapsed(59), "59s");
  EXPECT_EQ(human_elapsed(723), "12:03");
  EXPECT_EQ(human_elapsed(3 * 3600 + 4 * 60 + 5), "3:04:05");
  EXPECT_EQ(human_elapsed(2 * 86400 + 4 * 3600), "2d04h");
  EXPECT_EQ(human_elapsed(-5), "0s");
}

TEST(TuiFormat, BarsAndSparklines) {
  EXPECT_EQ(bar_text(50, 10, false), "|||||     ");
  EXPECT_EQ(bar_text(150, 4, false), "||||");
  EXPECT_EQ(bar_text(-3, 4, false), "    ");
  EXPECT_EQ(bar_text(50, 0, true), "");
  EXPECT_EQ(bar_text(100, 2, true), "██");
  EXPECT_EQ(bar_text(25, 2, true), "▌ ");
  EXPECT_EQ(bar_filled_cells(1, 10), 1);
  std::vector<double> v{0, 50, 100, NAN};
  EXPECT_EQ(sparkline(v, 6, false), "  _:# ");
  EXPECT_EQ(sparkline(v, 2, true), "█ ");
  EXPECT_EQ(sparkline(v, 0, true), "");
}

TEST(TuiFormat, ThrottleWords) {
  EXPECT_EQ(throttle_words(0), "none");
  EXPECT_EQ(throttle_words(0x1), "idle");
  EXPECT_EQ(throttle_words(0x4 | 0x40), "power cap, HW thermal");
  EXPECT_EQ(throttle_words(0x1 | 0x20), "SW thermal");
}

TEST(TuiCanvas, PutCutsAndReplacesNonAscii) {
  Canvas c(6, 2, false);
  EXPECT_EQ(c.put(0, 2, "héllo!"), 8);
  EXPECT_EQ(c.row_text(0), "  h?ll");
  c.put(1, -2, "abcd\x01", Style::bad);
  EXPECT_EQ(c.row_text(1), "cd?");
  EXPECT_EQ(c.style_at(1, 0), Style::bad);
  c.put(5, 0, "outside");
  Canvas u(3, 1, true);
  u.put(0, 0, "°C\xff");
  EXPECT_EQ(u.line(0).text, "°C\xef\xbf\xbd");
}

TEST(TuiHistory, KeepsCapacityAndNaNForMissing) {
  History h(3);
  Snapshot s;
  GpuSample g;
  g.index = 2;
  g.utilization_gpu_pct = Reading<unsigned>::of(40);
  g.memory_used_bytes = Reading<std::uint64_t>::of(25);
  g.memory_total_bytes = Reading<std::uint64_t>::of(100);
  s.gpus.push_back(g);
  for (int i = 0; i < 5; ++i) h.add(s);
  s.gpus[0].utilization_gpu_pct = Reading<unsigned>::fail(ReadStatus::gpu_lost);
  h.add(s);
  auto u = h.util(2);
  ASSERT_EQ(u.size(), 3u);
  EXPECT_EQ(u[0], 40);
  EXPECT_TRUE(std::isnan(u[2]));
  EXPECT_EQ(h.memory(2)[0], 25);
  EXPECT_TRUE(h.util(0).empty());
}

}  // namespace
}  // namespace trainmon::tui

namespace trainmon::tui {
namespace {

TEST(TuiCanvas, RowEqualsComparesCharactersAndStyles) {
  Canvas a(4, 2, true), b(4, 2, true);
  a.put(0, 0, "ab");
  b.put(0, 0, "ab");
  EXPECT_TRUE(a.row_equals(b, 0));
  b.set_style(0, 1, 1, Style::bad);
  EXPECT_FALSE(a.row_equals(b, 0));
  EXPECT_TRUE(a.row_equals(b, 1));
  EXPECT_FALSE(a.row_equals(b, 2));
  EXPECT_FALSE(a.row_equals(Canvas(5, 2, true), 1));
}

}  // namespace
}  // namespace trainmon::tui

namespace trainmon::tui {
namespace {

// Double-width characters (CJK, emoji, full-width forms) take two cells; the text around them keeps
// every character and column.
TEST(TuiCanvas, WideCharactersTakeTwoCellsAndKeepTheirNeighbours) {
  Canvas c(12, 3, true);
  // "训练" (2 x 2 columns), a rocket (2), then ASCII right after each.
  const int end = c.put(0, 0, "\xE8\xAE\xAD\xE7\xBB\x83X\xF0\x9F\x9A\x80Y|Z");
  EXPECT_EQ(end, 10);
  EXPECT_EQ(c.at(0, 0), U'\u8bad');
  EXPECT_EQ(c.at(0, 1), kWideTail);
  EXPECT_EQ(c.at(0, 2), U'\u7ec3');
  EXPECT_EQ(c.at(0, 4), U'X') << "the character after a wide one is not dropped";
  EXPECT_EQ(c.at(0, 5), U'\U0001F680');
  EXPECT_EQ(c.at(0, 7), U'Y');
  EXPECT_EQ(c.at(0, 8), U'|');
  EXPECT_EQ(c.at(0, 9), U'Z');
  EXPECT_EQ(c.row_text(0), "\xE8\xAE\xAD\xE7\xBB\x83X\xF0\x9F\x9A\x80Y|Z");
  EXPECT_EQ(text::columns(c.line(0).text), 12u) << "a line still takes exactly the width";
  // A full-width letter in the last column cannot be drawn whole: '?', and nothing spills over.
  EXPECT_EQ(c.put(1, 11, "\xEF\xBC\xA1"), 13);
  EXPECT_EQ(c.at(1, 11), U'?');
  // Overwriting half of a wide character blanks its other half.
  c.put(0, 1, "a");
  EXPECT_EQ(c.at(0, 0), U' ');
  EXPECT_EQ(c.at(0, 1), U'a');
  EXPECT_EQ(c.at(0, 2), U'\u7ec3');
  c.put(0, 2, "b");
  EXPECT_EQ(c.at(0, 3), U' ') << "the right half of a replaced wide character";
  c.clear_rect(0, 6, 1, 1);
  EXPECT_EQ(c.at(0, 5), U' ') << "clearing a right half clears its left half";
  // A wide character whose left half is off the canvas shows its right half as a blank.
  c.put(2, -1, "\xE4\xB8\xADQ");
  EXPECT_EQ(c.at(2, 0), U' ');
  EXPECT_EQ(c.at(2, 1), U'Q');
  // Combining marks take no cell of their own: drawn as '?', never merged into a neighbour.
  Canvas m(4, 1, true);
  EXPECT_EQ(m.put(0, 0, "e\xCC\x81x"), 3);
  EXPECT_EQ(m.row_text(0), "e?x");
}

TEST(TuiCanvas, NoControlReachesTheScreen) {
  Canvas c(40, 1, true);
  c.put(0, 0,
        "a\x1b[31mb\xC2\x9B"
        "1m\xE2\x80\xAE"
        "c\x07\n");
  for (int col = 0; col < c.width(); ++col) EXPECT_FALSE(text::is_terminal_control(c.at(0, col))) << col;
  EXPECT_EQ(c.row_text(0), "a?[31mb?1m?c??");
}

TEST(WrapText, BreaksAtBlanksInTerminalColumnsAndMarksWhatItCuts) {
  using V = std::vector<std::string>;
  EXPECT_EQ(wrap_text("short", 20, 20, 3, true), V{"short"});
  EXPECT_EQ(wrap_text("", 20, 20, 3, true), V{});
  EXPECT_EQ(wrap_text("anything", 20, 20, 0, true), V{});
  // The first line may be narrower (after a label); the others take the width.
  EXPECT_EQ(wrap_text("reason: do this and that (detail)", 10, 14, 4, true),
            (V{"reason: do", "this and that", "(detail)"}));
  // Left over after the last line: the mark, never a line that reads as the whole.
  EXPECT_EQ(wrap_text("one two three four five", 9, 9, 2, true), (V{"one two", "three fo…"}));
  EXPECT_EQ(wrap_text("one two three four five", 9, 9, 2, false), (V{"one two", "three fo~"}));
  // A word wider than the line is cut to it.
  EXPECT_EQ(wrap_text("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 ok", 10, 10, 5, true),
            (V{"/usr/lib/x", "86_64-linu", "x-gnu/libn", "vidia-ml.s", "o.1 ok"}));
  // CJK characters take two columns each.
  EXPECT_EQ(wrap_text("驱动 未加载 请检查", 6, 6, 3, true), (V{"驱动", "未加载", "请检查"}));
  for (const auto& l : wrap_text("驱动程序未加载：请检查 nvidia-smi 和 dmesg", 9, 9, 3, true))
    EXPECT_LE(text::columns(l), 9u) << l;
}

}  // namespace
}  // namespace trainmon::tui
