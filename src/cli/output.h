// SPDX-License-Identifier: Apache-2.0
// Writing a command's output to stdout or a file, and what a reader that went away means: `trainmon
// dmon | head -1` ends quietly with status 0 (as `yes | head -1` does for its user), never with a
// message or SIGPIPE's status 141; any other write failure is an error (status 1, said once).
//
// SIGPIPE is caught (main.cpp: a handler that does nothing, which exec() resets for the job we start),
// so a write to a closed pipe returns EPIPE instead of killing trainmon.
#pragma once

#include <cstdio>
#include <string_view>

namespace trainmon::cli {

/// Installs the SIGPIPE handler described above. Call once, first thing in main().
void catch_sigpipe();

/// What became of a write.
enum class WriteResult { ok, reader_gone, failed };

/// Writes `text` to `out` and flushes it. reader_gone: the pipe or socket has no reader any more
/// (EPIPE, or POLLERR/POLLHUP on its descriptor); failed: any other error (errno kept).
WriteResult write_out(std::FILE* out, std::string_view text);

/// The state of `out` after earlier writes (puts, printf): flushes it, then as write_out.
WriteResult check_out(std::FILE* out);

/// Whether descriptor `fd` is a pipe or socket whose reader has gone.
bool reader_gone(int fd);

/// The exit status of a command that printed to stdout: `rc` when the output is intact or its
/// reader simply left (that is no failure of ours); kExitFailure with one message naming `tool` when
/// stdout could not be written for another reason (a full disk) and `rc` was kExitOk.
int finish_stdout(int rc, const char* tool);

}  // namespace trainmon::cli
