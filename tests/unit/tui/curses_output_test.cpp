// SPDX-License-Identifier: Apache-2.0
// Terminfo strings as the direct output of `top` writes them: padding removed.
#include <gtest/gtest.h>

#include "tui/curses_output.h"

namespace trainmon::tui {
namespace {

TEST(TuiCursesOutput, TerminfoPaddingIsDropped) {
  std::string out;
  append_unpadded(out, "\x1b[1m$<2>");  // vt100 bold
  EXPECT_EQ(out, "\x1b[1m");
  out.clear();
  append_unpadded(out, "\x1b[H\x1b[J$<50>x$<2*/>y$<1.5>");
  EXPECT_EQ(out, "\x1b[H\x1b[Jxy");
  out.clear();
  append_unpadded(out, "cost $5 and $<x> stay");  // not padding
  EXPECT_EQ(out, "cost $5 and $<x> stay");
  append_unpadded(out, nullptr);
  EXPECT_EQ(out, "cost $5 and $<x> stay");
  out.clear();
  append_unpadded(out, "$<");
  EXPECT_EQ(out, "$<");
}

}  // namespace
}  // namespace trainmon::tui
