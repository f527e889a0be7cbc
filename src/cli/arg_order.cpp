// SPDX-License-Identifier: Apache-2.0
#include "cli/arg_order.h"

#include <cstddef>
#include <string_view>

namespace trainmon::cli {

namespace {

/// The subcommand `word` names, or nullptr.
const CLI::App* command_named(const CLI::App& root, const std::string& word) {
  for (const CLI::App* s : root.get_subcommands(std::function<bool(const CLI::App*)>{}))
    if (s->get_name() == word) return s;
  return nullptr;
}

/// "--db=FILE" -> ("--db", true); "--db" -> ("--db", false); "-i" -> ("-i", false).
std::pair<std::string, bool> option_name(const std::string& token) {
  if (token.starts_with("--")) {
    const auto eq = token.find('=');
    return {token.substr(0, eq), eq != std::string::npos};
  }
  return {token.substr(0, 2), token.size() > 2};
}

bool takes_value(const CLI::Option& o) {
  return o.get_items_expected_max() != 0;
}

}  // namespace

std::vector<std::string> command_options_after_command(const CLI::App& root, std::vector<std::string> args) {
  // The command: the first word that is neither an option nor a value of one.
  std::size_t cmd_at = args.size();
  const CLI::App* cmd = nullptr;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") return args;
    if (a.size() < 2 || a[0] != '-') {
      cmd = command_named(root, a);
      if (!cmd) return args;  // not a command: CLI11's error ("did you mean" in main.cpp)
      cmd_at = i;
      break;
    }
    const auto [name, joined] = option_name(a);
    const CLI::Option* o = root.get_option_no_throw(name);
    if (!o) {
      // Not the root's: the command's, if it takes a value the next word is that value. Which
      // command is decided below; here only whether the next word can be skipped, for which the
      // first later word naming a command that knows the option decides.
      // (`--db status runs`: status has no --db, runs has, and "status" is its value). A value that
      // may be left out is not the command right after it (`-i status`).
      for (std::size_t j = i + 1; j < args.size(); ++j) {
        const CLI::App* c = command_named(root, args[j]);
        if (!c) continue;
        const CLI::Option* co = c->get_option_no_throw(name);
        if (!co) continue;
        const bool value_optional = co->get_items_expected_min() == 0;
        if (takes_value(*co) && !joined && !(value_optional && j == i + 1)) ++i;
        break;
      }
      continue;
    }
    if (takes_value(*o) && !joined) ++i;
  }
  if (!cmd || cmd_at == 0) return args;
  std::vector<std::string> before, moved;
  for (std::size_t i = 0; i < cmd_at; ++i) {
    const auto [name, joined] = option_name(args[i]);
    if (const CLI::Option* o = root.get_option_no_throw(name)) {
      before.push_back(args[i]);
      if (takes_value(*o) && !joined && i + 1 < cmd_at) before.push_back(args[++i]);
      continue;
    }
    const CLI::Option* co = cmd->get_option_no_throw(name);
    if (!co || (co->get_lnames().empty() && co->get_snames().empty())) return args;  // neither's
    moved.push_back(args[i]);
    if (takes_value(*co) && !joined && i + 1 < cmd_at) moved.push_back(args[++i]);
  }
  std::vector<std::string> out = std::move(before);
  out.push_back(args[cmd_at]);
  out.insert(out.end(), moved.begin(), moved.end());
  out.insert(out.end(), args.begin() + static_cast<std::ptrdiff_t>(cmd_at) + 1, args.end());
  return out;
}

}  // namespace trainmon::cli
