// SPDX-License-Identifier: Apache-2.0
// The diagnosis thresholds a command was given (`--config FILE`, `--threshold name=value`...), read
// the same way by every command that takes them (diagnose, rules).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainmon/diagnose/thresholds.h"

namespace trainmon::cli {

/// `base` (the defaults, include/trainmon/diagnose/thresholds.h, unless given), then the [diagnose] table of
/// the TOML file `config` when it is not empty, then each `name=value` of `overrides` in order. nullopt when
/// the file cannot be read or parsed or a value is refused: the reason is printed to stderr as
/// "trainmon CMD: ..." (the caller exits with kExitUsage).
std::optional<diagnose::Thresholds> thresholds_from_options(std::string_view cmd, const std::string& config,
                                                            const std::vector<std::string>& overrides,
                                                            const diagnose::Thresholds& base = {});

}  // namespace trainmon::cli
