// SPDX-License-Identifier: Apache-2.0
#include "cli/threshold_options.h"
#include "trainmon/core/i18n.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace trainmon::cli {

std::optional<diagnose::Thresholds> thresholds_from_options(std::string_view cmd, const std::string& config,
                                                            const std::vector<std::string>& overrides,
                                                            const diagnose::Thresholds& base) {
  const std::string name(cmd);
  diagnose::Thresholds th = base;
  if (!config.empty()) {
    std::ifstream in(config);
    if (!in) {
      std::fputs(i18n::trf("trainmon {}: cannot read {}\n", name, config).c_str(), stderr);
      return std::nullopt;
    }
    std::stringstream text;
    text << in.rdbuf();
    auto t = diagnose::thresholds_from_toml(text.str(), th);
    if (!t) {
      std::fprintf(stderr, "trainmon %s: %s: %s\n", name.c_str(), config.c_str(), t.error().c_str());
      return std::nullopt;
    }
    th = *t;
  }
  for (const auto& kv : overrides) {
    if (auto r = diagnose::set_threshold(th, kv); !r) {
      std::fprintf(stderr, "trainmon %s: --threshold %s\n", name.c_str(), r.error().c_str());
      return std::nullopt;
    }
  }
  if (auto rel = diagnose::check_threshold_relations(th); !rel) {
    std::fprintf(stderr, "trainmon %s: thresholds: %s\n", name.c_str(), rel.error().c_str());
    return std::nullopt;
  }
  return th;
}

}  // namespace trainmon::cli
