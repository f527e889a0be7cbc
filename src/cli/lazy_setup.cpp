// SPDX-License-Identifier: Apache-2.0
#include "cli/lazy_setup.h"

#include <algorithm>

namespace trainmon::cli {

std::string_view named_command(int argc, const char* const* argv, const std::vector<CommandSpec>& registry,
                               const std::vector<std::string_view>& value_options) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i] ? std::string_view(argv[i]) : std::string_view();
    if (a == "--") return {};
    if (a == "--print-man" || a == "--print-completion" || a.starts_with("--print-man=") ||
        a.starts_with("--print-completion="))
      return {};
    if (std::find(value_options.begin(), value_options.end(), a) != value_options.end()) {
      ++i;  // its value
      continue;
    }
    if (a.empty() || a[0] == '-') continue;
    for (const CommandSpec& spec : registry) {
      if (spec.name == a) return spec.name;
    }
  }
  return {};
}

}  // namespace trainmon::cli
