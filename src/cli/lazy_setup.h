// SPDX-License-Identifier: Apache-2.0
// Which command's options to define before parsing. Each command's setup adds its options to its
// own CLI::App; defining all of them costs every start ~0.7 ms (19 commands, ~400 options: CLI11
// parses each option's names and builds its validators), a tenth of `trainmon status`
// (bench/compare_status_startup.sh; issue 20). main.cpp defines only the command the command line
// names, and parses again with every command defined when that parse does not succeed.
#pragma once

#include <string_view>
#include <vector>

#include "cli/command.h"

namespace trainmon::cli {

/// The command `argv` names: its first word that is a registered command's name and is not the
/// value of one of the root's options that take a value (`--lang zh_CN`, `--proc-root DIR`...;
/// `value_options`, spelled as on the command line). Empty when no word names a command (no
/// command: top or status; a mistyped one: "did you mean"), after "--" only, or when the command
/// line asks for the man pages or completions (--print-man, --print-completion), which need
/// every command's options.
/// A word that only looks like the command (the value of a command's option given before the
/// command, `--db top runs`) is not told apart here: the parse then fails, or parses another
/// command than the one defined, and main.cpp parses again with every command.
std::string_view named_command(int argc, const char* const* argv, const std::vector<CommandSpec>& registry,
                               const std::vector<std::string_view>& value_options);

}  // namespace trainmon::cli
