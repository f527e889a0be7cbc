// SPDX-License-Identifier: Apache-2.0
// Man pages and shell completions generated from the CLI11 option definitions that --help prints,
// so the three never disagree (written once, in each command's setup).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>

namespace trainmon::cli {

/// The roff man page (man(7) macros) of `app` (the root: trainmon(1)) or of one of its
/// subcommands (trainmon-NAME(1)): NAME, SYNOPSIS, DESCRIPTION, OPTIONS, for the root the COMMANDS
/// list, then EXIT STATUS (exit_codes.h's kExitStatusDocs), ENVIRONMENT (environment.h's
/// kEnvironmentDocs) and SEE ALSO. `version` goes in the footer. Hidden options (empty group) are
/// left out. A description that starts with the program's name and ':' ("trainmon: watch ...")
/// loses that prefix (NAME already says "trainmon \- ").
std::string man_page(const CLI::App& root, const CLI::App& app, std::string_view version);

/// `--print-man DIR`: creates DIR (and its parents) and writes trainmon.1 and trainmon-NAME.1 for
/// each subcommand there. false after one message on stderr naming the directory or the file
/// that could not be created or written (the first failure ends it).
bool write_man_pages(const CLI::App& root, const std::string& dir, std::string_view version);

/// A completion script for `shell` ("bash", "zsh" or "fish"): subcommands after `trainmon`, then
/// the options of the subcommand given (the global ones everywhere). Empty for another shell.
std::string completion_script(const CLI::App& root, std::string_view shell);

/// The subcommand name nearest to `word` (Levenshtein distance at most 2, or a prefix of a
/// command), for "did you mean"; empty when none is close.
std::string nearest_subcommand(const CLI::App& root, std::string_view word);

}  // namespace trainmon::cli
