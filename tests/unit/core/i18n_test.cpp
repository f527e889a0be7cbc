// SPDX-License-Identifier: Apache-2.0
// core/i18n.h: catalogues compiled by the real GNU msgfmt, read back; damaged files mean English;
// a translation whose placeholders do not fit falls back to the msgid; the detectors' both-language
// evidence (diagnose/detail.h say/phrase/word).
#include "trainmon/core/i18n.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "diagnose/detail.h"
#include "diagnose/detail_plural.h"
#include "trainmon/core/i18n_plural.h"

namespace trainmon {
namespace {

namespace fs = std::filesystem;

class I18nTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("trainmon-i18n-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    i18n::load_catalogue({}, {});  // English again for the other tests
    fs::remove_all(dir_);
  }
  // Compiles `entries` (PO syntax after the header) with msgfmt; "" when msgfmt is missing.
  std::string compile(const std::string& entries) {
    const auto po = dir_ / "t.po", mo = dir_ / "t.mo";
    std::ofstream(po) << "msgid \"\"\nmsgstr \"Content-Type: text/plain; charset=UTF-8\\n\"\n\n" << entries;
    const std::string cmd = "msgfmt -o '" + mo.string() + "' '" + po.string() + "' 2>/dev/null";
    return std::system(cmd.c_str()) == 0 ? mo.string() : std::string();
  }
  fs::path dir_;
};

TEST_F(I18nTest, TranslatesFromAMsgfmtCatalogueAndFallsBackToTheMsgid) {
  const auto mo = compile(
      "msgid \"GPU memory\"\nmsgstr \"显存\"\n\n"
      "msgid \"GPU{} at {} %\"\nmsgstr \"GPU{} 利用率 {} %\"\n\n"
      "msgid \"{} of {}\"\nmsgstr \"{1} 中的 {0}\"\n\n"
      "msgid \"bad {}\"\nmsgstr \"坏 {:d}\"\n");
  if (mo.empty()) GTEST_SKIP() << "msgfmt is not installed";
  ASSERT_TRUE(i18n::load_catalogue(mo, "zh_CN"));
  EXPECT_EQ(i18n::language(), "zh_CN");
  EXPECT_EQ(i18n::tr("GPU memory"), "显存");
  EXPECT_EQ(i18n::tr("not in the catalogue"), "not in the catalogue");
  EXPECT_EQ(i18n::trf("GPU{} at {} %", 1, 93), "GPU1 利用率 93 %");
  EXPECT_EQ(i18n::trf("{} of {}", "a", "b"), "b 中的 a");  // reordered by number
  // a translation that does not fit its arguments: the English, never an exception
  EXPECT_EQ(i18n::trf("bad {}", "x"), "bad x");
  EXPECT_EQ(i18n::translations().size(), 4u);
}

TEST_F(I18nTest, TwoNumberFormsInEnglishOneInChinese) {
  // Issue 33: never "1 processes"; each form its own msgid, Chinese gives both the same text.
  for (auto [n, want] :
       {std::pair{0u, "0 processes"}, {1u, "1 process"}, {2u, "2 processes"}, {11u, "11 processes"}})
    EXPECT_EQ(i18n::trfn(n, "{} process", "{} processes", n), want);
  EXPECT_EQ(english(diagnose::detail::phrasen(1, "{} core", "{} cores", 1)), "1 core");
  EXPECT_EQ(english(diagnose::detail::phrasen(2, "{} core", "{} cores", 2)), "2 cores");
  const auto mo =
      compile("msgid \"{} process\"\nmsgstr \"{} 个进程\"\n\nmsgid \"{} processes\"\nmsgstr \"{} 个进程\"\n");
  if (mo.empty()) GTEST_SKIP() << "msgfmt is not installed";
  ASSERT_TRUE(i18n::load_catalogue(mo, "zh_CN"));
  for (unsigned n : {0u, 1u, 2u, 11u})
    EXPECT_EQ(i18n::trfn(n, "{} process", "{} processes", n), std::to_string(n) + " 个进程");
}

TEST_F(I18nTest, ADamagedOrMissingCatalogueMeansEnglish) {
  EXPECT_FALSE(i18n::load_catalogue((dir_ / "missing.mo").string(), "zh_CN"));
  EXPECT_EQ(i18n::language(), "");
  const auto mo = compile("msgid \"GPU memory\"\nmsgstr \"显存\"\n");
  if (mo.empty()) GTEST_SKIP() << "msgfmt is not installed";
  // every truncation of a real catalogue: no crash, and either the whole catalogue or English
  std::string bytes;
  {
    std::ifstream in(mo, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    const auto cut = dir_ / "cut.mo";
    std::ofstream(cut, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(n));
    if (!i18n::load_catalogue(cut.string(), "zh_CN")) {
      EXPECT_EQ(i18n::language(), "") << n;
      EXPECT_EQ(i18n::tr("GPU memory"), "GPU memory") << n;
    }
  }
  // offsets pointing outside the file
  std::string bad = bytes;
  bad[12] = '\x7f';
  bad[13] = '\x7f';
  std::ofstream(dir_ / "bad.mo", std::ios::binary) << bad;
  EXPECT_FALSE(i18n::load_catalogue((dir_ / "bad.mo").string(), "zh_CN"));
  EXPECT_EQ(i18n::tr("GPU memory"), "GPU memory");
}

TEST_F(I18nTest, InitChoosesByTheVariablesInGettextsOrder) {
  const auto mo = compile("msgid \"GPU memory\"\nmsgstr \"显存\"\n");
  if (mo.empty()) GTEST_SKIP() << "msgfmt is not installed";
  const auto locale_dir = dir_ / "locale";
  fs::create_directories(locale_dir / "zh_CN" / "LC_MESSAGES");
  fs::copy_file(mo, locale_dir / "zh_CN" / "LC_MESSAGES" / "trainmon.mo");
  ::setenv("TRAINMON_LOCALEDIR", locale_dir.c_str(), 1);
  for (const char* v : {"TRAINMON_LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"}) ::unsetenv(v);
  ::setenv("LANG", "zh_CN.UTF-8", 1);
  i18n::init();
  EXPECT_EQ(i18n::language(), "zh_CN");
  EXPECT_EQ(i18n::tr("GPU memory"), "显存");
  ::setenv("LC_ALL", "C", 1);  // LC_ALL over LANG
  i18n::init();
  EXPECT_EQ(i18n::language(), "");
  ::setenv("LANGUAGE", "zh:en", 1);  // ignored under the C locale, as gettext does
  i18n::init();
  EXPECT_EQ(i18n::language(), "");
  ::setenv("LC_ALL", "en_US.UTF-8", 1);  // then its first entry wins
  i18n::init();
  EXPECT_EQ(i18n::language(), "zh_CN");
  i18n::init("en");  // --lang over everything
  EXPECT_EQ(i18n::language(), "");
  ::setenv("TRAINMON_LANG", "zh_CN", 1);
  ::setenv("LANGUAGE", "en", 1);
  i18n::init();
  EXPECT_EQ(i18n::language(), "zh_CN");
  for (const char* v : {"TRAINMON_LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG", "TRAINMON_LOCALEDIR"})
    ::unsetenv(v);
}

TEST_F(I18nTest, DetectorsWriteEnglishEvidenceAndItsTranslationWithTheSameNumbers) {
  using namespace diagnose::detail;
  diagnose::Finding english;
  say(english, "GPU{} at {} %{}", 1, num(93.4), word(" (busy)"));
  EXPECT_EQ(english.evidence, "GPU1 at 93 % (busy)");
  EXPECT_EQ(english.evidence_local, "");  // English: no second text
  const auto mo = compile(
      "msgid \"GPU{} at {} %{}\"\nmsgstr \"GPU{} 利用率 {} %{}\"\n\n"
      "msgid \" (busy)\"\nmsgstr \"（忙）\"\n\n"
      "msgid \"; {}\"\nmsgstr \"；{}\"\n\n"
      "msgid \"throttled ({})\"\nmsgstr \"降频（{}）\"\n\n"
      "msgid \"power cap\"\nmsgstr \"功耗上限\"\n");
  if (mo.empty()) GTEST_SKIP() << "msgfmt is not installed";
  ASSERT_TRUE(i18n::load_catalogue(mo, "zh_CN"));
  diagnose::Finding f;
  say(f, "GPU{} at {} %{}", 1, num(93.4), word(" (busy)"));
  say(f, "; {}", phrase("throttled ({})", word("power cap")));
  EXPECT_EQ(f.evidence, "GPU1 at 93 % (busy); throttled (power cap)");  // what JSON keeps
  EXPECT_EQ(f.evidence_local, "GPU1 利用率 93 %（忙）；降频（功耗上限）");
  EXPECT_EQ(diagnose::shown_evidence(f), f.evidence_local);
  f.advice = N_(" (busy)");  // a fixed advice is looked up where shown (also after the store)
  EXPECT_EQ(diagnose::shown_advice(f), "（忙）");
}

}  // namespace
}  // namespace trainmon
