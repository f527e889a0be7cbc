// SPDX-License-Identifier: Apache-2.0
// Exit statuses of the trainmon binary, decided in one place (documented in docs/cli.md).
#pragma once

namespace trainmon::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,        ///< an operation failed (I/O, store, unexpected error)
  kExitUsage = 2,          ///< bad command line (unknown option, unknown query field, bad id)
  kExitNoGpu = 3,          ///< GPU data was required but NVML is missing or found no GPU
  kExitNvmlError = 4,      ///< NVML loaded but failed (init error, every GPU lost)
  kExitInterrupted = 130,  ///< stopped by SIGINT (128 + 2)
};

}  // namespace trainmon::cli
