// SPDX-License-Identifier: Apache-2.0
// Exit statuses of the trainmon binary, decided in one place (documented in docs/cli.md).
#pragma once

#include <string_view>

namespace trainmon::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,        ///< an operation failed (I/O, store, unexpected error)
  kExitUsage = 2,          ///< bad command line (unknown option, unknown query field, bad id)
  kExitNoGpu = 3,          ///< GPU data was required but NVML is missing or found no GPU
  kExitNvmlError = 4,      ///< NVML loaded but failed (init error, every GPU lost)
  kExitInterrupted = 130,  ///< stopped by SIGINT (128 + 2)
};

/// What each exit status means, for the man pages' EXIT STATUS section (help_export.h) and the
/// table in docs/cli.md (tests/e2e/test_package.py checks that the two agree). `x` marks a literal.
struct ExitStatusDoc {
  ExitCode status;
  std::string_view meaning;
};
inline constexpr ExitStatusDoc kExitStatusDocs[] = {
    {kExitOk, "success (also a monitoring loop ended with Ctrl-C)"},
    {kExitFailure, "an operation failed (cannot open the `-f` file, internal error)"},
    {kExitUsage,
     "bad command line: unknown option, unknown query field, bad `--format`, `-s`, `-o`, unknown GPU id, "
     "unknown or ambiguous RUN, a loop interval or sample count that is not a positive number (0, negative, "
     "NaN, inf, too large)"},
    {kExitNoGpu, "GPU data was required but NVML could not be loaded, or found no GPU"},
    {kExitNvmlError,
     "NVML was loaded but failed (initialisation error), or did not answer: `status`, `query`, `dmon` and "
     "`pmon` wait 10 s for a slow nvmlInit (seconds without persistence mode), then say `NVML is not "
     "answering: nvmlInit_v2 has not returned since 14:02:11 ...`"},
    {kExitInterrupted, "interrupted by SIGINT where a command is not a loop"},
};

}  // namespace trainmon::cli
