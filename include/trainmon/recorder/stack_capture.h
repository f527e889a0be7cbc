// SPDX-License-Identifier: Apache-2.0
// Asking the training processes for their Python stacks when a hang is found (docs/python.md
// "Stacks", docs/diagnosis.md D23). A process of the job that announced `stack_signal` in its hello
// has registered faulthandler on that real-time signal, writing every thread's stack to
// `stacks-PID.txt` in the run's private directory. trainmon sends the signal only when
// /proc/PID/status SigCgt shows a handler installed for it (the signal's default action,
// termination, would otherwise kill the job), through a pidfd so that a reused pid is never
// signalled, then reads what the file gained: bounded in size, waiting a bounded time, never
// following a link, only a regular file of its own user. The job is never paused or killed.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainmon::recorder {

/// The SigCgt mask of a /proc/PID/status text (bit n-1 set: signal n has a handler); nullopt when
/// the line is missing or malformed.
std::optional<std::uint64_t> parse_sigcgt(std::string_view status_text);

/// Whether `proc_root`/PID/status says signal `sig` (1..64) has a handler installed. False when it
/// cannot be read.
bool signal_caught(const std::string& proc_root, std::uint32_t pid, int sig);

/// One process to ask.
struct StackTarget {
  std::int64_t rank_key = 0;  ///< diagnose::TrainRank::key
  std::uint32_t pid = 0;
  int signal = 0;  ///< the stack_signal it announced (a real-time signal)
};

struct StackCaptureOptions {
  std::string proc_root = "/proc";
  std::string directory;                 ///< where stacks-PID.txt lives (ipc::TrainChannel::directory())
  std::chrono::milliseconds wait{2000};  ///< the longest wait for all of them together
  std::size_t max_bytes = 1 << 20;       ///< kept of what one process wrote (store::TrainStack)
};

/// What one process gave.
struct StackResult {
  StackTarget target;
  std::string text;     ///< what its stacks file gained (empty when nothing came)
  std::string skipped;  ///< why nothing was sent or read ("SigCgt shows no handler for 40"), else empty
};

/// Asks every target (signals first, then one bounded wait for all) and returns one result per
/// target, in order. Never throws; a target that is not a real-time signal, has no handler, no
/// regular stacks file of ours, or has exited is skipped with the reason.
std::vector<StackResult> capture_stacks(const std::vector<StackTarget>& targets,
                                        const StackCaptureOptions& options);

}  // namespace trainmon::recorder
