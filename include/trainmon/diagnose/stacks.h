// SPDX-License-Identifier: Apache-2.0
// Python stacks as faulthandler writes them (faulthandler.dump_traceback(all_threads=True), the
// text the package's stack signal produces, docs/python.md "Stacks"):
//
//   Thread 0x00007fba01c216c0 (most recent call first):
//     File "/usr/lib/python3.11/threading.py", line 324 in wait
//     ...
//   Current thread 0x00007fba01edc040 (most recent call first):
//     File "train.py", line 42 in step
//     File "train.py", line 60 in <module>
//
// Pure parsing, for the hang finding (D23) and every view that shows where a rank is stuck.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace trainmon::diagnose {

/// One frame: file, line (0 when not given) and function ("???" when faulthandler had none).
struct StackFrame {
  std::string file;
  int line = 0;
  std::string func;
  friend bool operator==(const StackFrame&, const StackFrame&) = default;
};

/// One thread of a dump, innermost frame first (faulthandler's "most recent call first").
struct ThreadStack {
  std::string id;        ///< "0x00007fba01edc040" (the Python thread ident)
  bool current = false;  ///< "Current thread": the one that ran the signal handler
  std::vector<StackFrame> frames;
  bool truncated = false;  ///< faulthandler wrote "..." (more than 100 frames)
};

/// Every thread block of `text`, in the order written. Lines that are not part of a thread block
/// (a partial write, other output) are skipped; an empty result means no stack was found.
std::vector<ThreadStack> parse_faulthandler(std::string_view text);

/// The main thread: the one whose outermost frame is not threading.py's `_bootstrap` (threads that
/// Python started begin there), the current one when several qualify, else the first; nullptr
/// when `threads` is empty.
const ThreadStack* main_thread(const std::vector<ThreadStack>& threads);

/// Whether `file` belongs to Python itself or an installed package (…/lib/python3.*, site-packages,
/// dist-packages, <frozen …>, <string>) or to trainmon's own package files.
bool library_file(std::string_view file);

/// "train.py:42 in step": a user's file by its base name; an installed package's file by its path
/// inside site-packages / dist-packages ("torch/autograd/__init__.py:197 in backward"), Python's own
/// by its path inside lib/python3.N ("multiprocessing/connection.py:930 in wait"), so that the many
/// `__init__.py` are told apart.
std::string frame_text(const StackFrame& f);

/// The function of the innermost frame that waits in a collective operation: a frame in
/// torch.distributed (distributed_c10d: all_reduce, barrier, ...), DistributedDataParallel
/// (torch/nn/parallel/distributed.py), autograd's backward (DDP's all-reduce runs inside it), a
/// CUDA synchronize (a hung NCCL kernel blocks it), or DeepSpeed's / Horovod's communication
/// modules. Empty when no frame does (the thread is elsewhere: the user's code, a sleep, a lock,
/// the data loader). A heuristic over file paths and names, documented in docs/diagnosis.md (D23).
std::string collective_of(const ThreadStack& t);

/// Where a thread is: its innermost frame that is not trainmon's own package's (the collective timing
/// wraps Work.wait(), so a rank waiting in all_reduce has our frame innermost: torch's all_reduce is
/// where it is); and the innermost frame outside library_file() (the user's line that called into
/// the library), empty when that frame is already the user's or there is none.
struct StuckAt {
  std::string where;
  std::string caller;
};
StuckAt stuck_at(const ThreadStack& t);

/// The main thread's block as text ("  File ..., line N in f" lines, innermost first), at most
/// `max_bytes` (cut at a line end).
std::string thread_text(const ThreadStack& t, std::size_t max_bytes = 16384);

}  // namespace trainmon::diagnose
