// SPDX-License-Identifier: Apache-2.0
// One exit status for "RUN does not name a run" in every command that takes a RUN argument
// (diagnose, export, report, rm, show): unknown or ambiguous RUN is a bad argument (status 2);
// a store that cannot be read is a failure (status 1). Documented in docs/recording.md, docs/cli.md.
#pragma once

#include "cli/exit_codes.h"
#include "trainmon/core/error.h"
#include "trainmon/store/store.h"

namespace trainmon::cli {

/// Exit status for an error of Store::resolve_run.
inline int run_lookup_exit(const Error& e) {
  return e.name == store::kErrNotFound || e.name == store::kErrAmbiguous ? kExitUsage : kExitFailure;
}

}  // namespace trainmon::cli
