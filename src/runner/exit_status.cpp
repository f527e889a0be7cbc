// SPDX-License-Identifier: Apache-2.0
#include "trainmon/runner/exit_status.h"

#include <fmt/format.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

namespace trainmon::runner {

ChildExit decode_wait_status(int status) noexcept {
  ChildExit e;
  if (WIFEXITED(status)) {
    e.exited = true;
    e.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    e.signal = WTERMSIG(status);
    e.core_dumped = WCOREDUMP(status);
  }
  return e;
}

int exit_code_for(const ChildExit& e) noexcept {
  if (e.signal) return 128 + *e.signal;
  return e.code;
}

std::string signal_name(int sig) {
  if (const char* abbrev = ::sigabbrev_np(sig)) return fmt::format("SIG{}", abbrev);
  // real-time signals have no abbreviation: named as `kill -l` names them
  if (sig >= SIGRTMIN && sig <= SIGRTMAX)
    return sig == SIGRTMIN ? std::string("SIGRTMIN") : fmt::format("SIGRTMIN+{}", sig - SIGRTMIN);
  return fmt::format("signal {}", sig);
}

std::string describe_exit(const ChildExit& e) {
  if (e.signal) {
    return fmt::format("killed by {} (signal {}{})", signal_name(*e.signal), *e.signal,
                       e.core_dumped ? ", core dumped" : "");
  }
  return fmt::format("exit status {}", e.code);
}

}  // namespace trainmon::runner
