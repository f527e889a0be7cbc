// SPDX-License-Identifier: Apache-2.0
#include "cli/output.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cli/exit_codes.h"
#include "trainmon/core/i18n.h"

namespace trainmon::cli {

namespace {
void ignore_signal(int) {}
/// The errno of the first failed write that was not a reader going away (finish_stdout says it).
thread_local int g_failed_errno = 0;
}  // namespace

void catch_sigpipe() {
  struct sigaction sa {};
  sa.sa_handler = ignore_signal;  // not SIG_IGN: that would be inherited by the commands we run
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGPIPE, &sa, nullptr);
}

bool reader_gone(int fd) {
  if (fd < 0) return false;
  pollfd p{fd, 0, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP)) != 0;
}

WriteResult check_out(std::FILE* out) {
  errno = 0;
  const bool bad = std::fflush(out) != 0 || std::ferror(out) != 0;
  if (!bad) return WriteResult::ok;
  const int err = errno;
  if (err == EPIPE || reader_gone(::fileno(out))) return WriteResult::reader_gone;
  if (g_failed_errno == 0) g_failed_errno = err;
  errno = g_failed_errno;
  return WriteResult::failed;
}

WriteResult write_out(std::FILE* out, std::string_view text) {
  if (!text.empty()) std::fwrite(text.data(), 1, text.size(), out);
  return check_out(out);
}

int finish_stdout(int rc, const char* tool) {
  const WriteResult r = check_out(stdout);
  if (r != WriteResult::failed) return rc;
  const int err = g_failed_errno != 0 ? g_failed_errno : errno;
  std::fputs(i18n::trf("trainmon {}: cannot write the output: {}\n", tool,
                       err != 0 ? std::string_view(std::strerror(err)) : i18n::tr("the write failed"))
                 .c_str(),
             stderr);
  return rc == kExitOk ? kExitFailure : rc;
}

}  // namespace trainmon::cli
