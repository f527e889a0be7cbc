// SPDX-License-Identifier: Apache-2.0
// A command's own options given before the command: `trainmon --db FILE runs`, `trainmon
// --no-color status` mean what `trainmon runs --db FILE` and `trainmon status --no-color` mean.
// CLI11 parses an option before the subcommand as the root's only (and trainmon's shared options,
// --db, --no-color, --json ..., belong to the commands), so they are moved after the command name
// before parsing.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace trainmon::cli {

/// `args` (argv[1..]) with every option before the first command name that the root does not know
/// but that command does (with its value, when it takes one and it is not joined as --opt=VALUE)
/// moved right after the command name, in the order given. Unchanged when no command is named, at
/// "--", or when an option before the command is neither the root's nor the command's (CLI11 then
/// reports it as before).
std::vector<std::string> command_options_after_command(const CLI::App& root, std::vector<std::string> args);

}  // namespace trainmon::cli
