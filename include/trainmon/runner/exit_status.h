// SPDX-License-Identifier: Apache-2.0
// How a child's wait status becomes trainmon's own exit status (as a shell reports it).
#pragma once

#include <optional>
#include <string>

namespace trainmon::runner {

/// A decoded wait status.
struct ChildExit {
  bool exited = false;        ///< ended by exit(): `code` is valid
  int code = 0;               ///< exit code (0..255) when `exited`
  std::optional<int> signal;  ///< the signal that ended it, when killed
  bool core_dumped = false;
};

/// Decode a status from waitpid().
ChildExit decode_wait_status(int wait_status) noexcept;
/// trainmon's exit status for a child's end: its code, or 128 + N when signal N killed it.
int exit_code_for(const ChildExit& exit) noexcept;
/// "exit status 3", "killed by SIGTERM (signal 15)", "killed by SIGSEGV (signal 11, core dumped)".
std::string describe_exit(const ChildExit& exit);
/// "SIGTERM" for 15, "SIGRTMIN+6" for 40 (as `kill -l` names real-time signals), "signal 99" for a
/// number without a name.
std::string signal_name(int signal);

}  // namespace trainmon::runner
