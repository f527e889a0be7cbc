// SPDX-License-Identifier: Apache-2.0
// CLI11's parse errors (unknown argument, missing value, a value that is no number, a refused
// choice ...) in the chosen language (docs/language.md). CLI11 2.x keeps no fields in its exceptions,
// only the English sentence it built from them; the exception's type says which sentence it is, and
// the option, the value and the counts are taken back out of that sentence's fixed frame (CLI11's
// Error.hpp and Validators.hpp) as data, then put into the translated one. A sentence whose frame is
// not one we know (a newer CLI11) stays CLI11's English: never a wrong translation.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "trainmon/core/error.h"

namespace trainmon::cli {

/// `text` said in the chosen language when it is one of `frames` (English fmt strings marked N_,
/// their fields {} or {0} {1} {2}, at most three), its values kept as data; nullopt when `text` is none
/// of them. For sentences made elsewhere in English whose maker cannot translate them.
std::optional<std::string> reframed(std::span<const std::string_view> frames, std::string_view text);

/// An Error's message for stderr in the chosen language: the run store's sentences (a missing,
/// damaged or unwritable store, an unknown or ambiguous RUN) and a refused Prometheus URL's
/// translated, any other as it is.
std::string said(const Error& e);

/// The message of `e` in the chosen language, without a trailing newline; e.what() unchanged for
/// English and for a message not recognised.
std::string parse_error_message(const CLI::Error& e);

/// What CLI11 prints on a parse error (App::failure_message): "trainmon COMMAND: " when the error is
/// in a command's options, the message, then "Run with --help for more information." (the help
/// flag's name, as CLI11 gives it). Without a command, byte-identical to CLI11's own
/// FailureMessage::simple in English.
std::string failure_message(const CLI::App* app, const CLI::Error& e);

}  // namespace trainmon::cli
