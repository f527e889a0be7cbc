// SPDX-License-Identifier: Apache-2.0
// Syscall numbers of pidfd_open(2) and pidfd_send_signal(2), for signalling a process without a pid
// reuse race (the TUI's kill, the recorder's stack request). glibc < 2.36 has no wrappers and Debian 12's
// headers may lack the numbers; they are the same on every architecture (Linux 5.3 / 5.1).
#pragma once

#include <sys/syscall.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
