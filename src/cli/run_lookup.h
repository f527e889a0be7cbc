// SPDX-License-Identifier: Apache-2.0
// One exit status for "RUN does not name a run" in every command that takes a RUN argument
// (diagnose, export, report, rm, show): unknown or ambiguous RUN is a bad argument (status 2);
// a store that cannot be read is a failure (status 1). Documented in docs/recording.md, docs/cli.md.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cli/exit_codes.h"
#include "trainmon/core/error.h"
#include "trainmon/core/i18n.h"
#include "trainmon/store/store.h"

namespace trainmon::cli {

/// Exit status for an error of Store::resolve_run.
inline int run_lookup_exit(const Error& e) {
  return e.name == store::kErrNotFound || e.name == store::kErrAmbiguous ? kExitUsage : kExitFailure;
}

/// Why `name` cannot be given to a run (in the chosen language), or nullopt when it can. RUN arguments read `last` and
/// anything that parses as an integer ("12", "-1", "007") as the newest run / a run id first
/// (Store::resolve_run), so a run named so could never be reached by its name.
inline std::optional<std::string> reserved_run_name(std::string_view name) {
  if (name == "last") return std::string(i18n::tr("'last' is reserved (RUN 'last' means the newest run)"));
  std::int64_t id = 0;
  auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), id);
  if (!name.empty() && ec == std::errc() && p == name.data() + name.size())
    return i18n::trf("'{}' is a number, which RUN arguments read as a run id", name);
  return std::nullopt;
}

}  // namespace trainmon::cli
