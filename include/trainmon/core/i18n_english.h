// SPDX-License-Identifier: Apache-2.0
// English for a while, whatever language core/i18n.h selected: for text that is English whatever the
// locale, made in a program that otherwise speaks the user's language (the man pages and shell
// completions, generated from the option definitions that --help prints: cli/main.cpp).
#pragma once

namespace trainmon::i18n {

/// While one lives, tr() and trf() give every msgid unchanged and language() is "" (English); the
/// selected catalogue stays loaded, so what tr() returned before stays valid, and the language is
/// back when it ends. Scopes nest. Not thread-safe: main's thread, before threads start.
class EnglishScope {
 public:
  EnglishScope() noexcept;
  ~EnglishScope();
  EnglishScope(const EnglishScope&) = delete;
  EnglishScope& operator=(const EnglishScope&) = delete;

 private:
  bool was_;
};

}  // namespace trainmon::i18n
