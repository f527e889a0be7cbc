// SPDX-License-Identifier: Apache-2.0
#include "trainmon/serve/accept_language.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace trainmon::serve;

using Tags = std::vector<std::string>;

TEST(AcceptLanguage, OrderedByQThenAsWritten) {
  EXPECT_EQ(accepted_languages("zh-CN,zh;q=0.9,en;q=0.8"), (Tags{"zh-CN", "zh", "en"}));
  EXPECT_EQ(accepted_languages("en;q=0.5, zh-CN , fr;q=0.5"), (Tags{"zh-CN", "en", "fr"}));
  EXPECT_EQ(accepted_languages("de;Q=1.000,ja;q=0.001"), (Tags{"de", "ja"}));
}

TEST(AcceptLanguage, LeavesOutZeroWildcardAndMalformed) {
  EXPECT_EQ(accepted_languages("zh-CN;q=0, *, en"), (Tags{"en"}));
  EXPECT_EQ(accepted_languages("zh-CN;q=2,en;q=abc,fr;q=0.1234,de;x=1,<script>,ja;q=0.3"), (Tags{"ja"}));
  EXPECT_EQ(accepted_languages(""), Tags{});
  EXPECT_EQ(accepted_languages(",,;;, ;q=1"), Tags{});
  EXPECT_EQ(accepted_languages(std::string(200, 'a')), Tags{});  // not a language tag: too long
}

TEST(AcceptLanguage, ChoosesTheFirstAvailableBeforeAnyEnglish) {
  const std::vector<std::string> zh{"zh_CN"};
  EXPECT_EQ(choose_language("zh-CN,zh;q=0.9,en;q=0.8", zh), "zh_CN");
  EXPECT_EQ(choose_language("zh", zh), "zh_CN");     // the primary subtag, as the binary maps "zh"
  EXPECT_EQ(choose_language("ZH-cn", zh), "zh_CN");  // case ignored
  EXPECT_EQ(choose_language("fr-FR,zh-SG;q=0.5", zh), "zh_CN");      // no French: the next one asked for
  EXPECT_EQ(choose_language("en-US,en;q=0.9,zh-CN;q=0.8", zh), "");  // English first: English
  EXPECT_EQ(choose_language("zh-CN;q=0.1,en;q=0.2", zh), "");
  EXPECT_EQ(choose_language("fr,de", zh), "");  // none available: English
  EXPECT_EQ(choose_language("", zh), "");
  EXPECT_EQ(choose_language("zh-CN", {}), "");  // no catalogue found by the server
}
