// SPDX-License-Identifier: Apache-2.0
// The embedded assets: uPlot from npm is there, byte-identical to the file, with its content type.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "trainmon/web/assets.h"

namespace trainmon::web {
namespace {

TEST(WebAssets, UplotIsEmbeddedByteForByte) {
  const Asset* js = find_asset("uplot/uPlot.iife.min.js");
  ASSERT_NE(js, nullptr);
  EXPECT_EQ(js->content_type, "text/javascript; charset=utf-8");
  std::ifstream f(std::string(TRAINMON_SOURCE_DIR) + "/web/node_modules/uplot/dist/uPlot.iife.min.js",
                  std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_GT(ss.str().size(), 10'000u);
  EXPECT_EQ(js->data, ss.str());
  EXPECT_EQ(js->data.data()[js->data.size()], '\0');
  const Asset* css = find_asset("uplot/uPlot.min.css");
  ASSERT_NE(css, nullptr);
  EXPECT_EQ(css->content_type, "text/css; charset=utf-8");
}

TEST(WebAssets, UnknownNamesAreNotFound) {
  EXPECT_EQ(find_asset("../CMakeLists.txt"), nullptr);
  EXPECT_EQ(find_asset(""), nullptr);
  EXPECT_EQ(find_asset("uplot/uPlot.iife.min.js/"), nullptr);
}

}  // namespace
}  // namespace trainmon::web
