// SPDX-License-Identifier: Apache-2.0
#include "trainmon/diagnose/stacks.h"

#include <charconv>

#include <fmt/format.h>

namespace trainmon::diagnose {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

/// `  File "path", line 42 in func` -> frame; false when the line is not a frame.
bool parse_frame(std::string_view line, StackFrame& f) {
  line = trim(line);
  if (!line.starts_with("File \"")) return false;
  line.remove_prefix(6);
  // The file name may itself hold `", line ` only in pathological names: take the last one.
  const auto end = line.rfind("\", line ");
  if (end == std::string_view::npos) {
    const auto q = line.rfind('"');  // `File "x" in f` without a line
    if (q == std::string_view::npos) return false;
    f.file = std::string(line.substr(0, q));
    const auto in = line.find(" in ", q);
    f.line = 0;
    f.func = in == std::string_view::npos ? "???" : std::string(trim(line.substr(in + 4)));
    return true;
  }
  f.file = std::string(line.substr(0, end));
  std::string_view rest = line.substr(end + 8);
  int n = 0;
  auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), n);
  f.line = ec == std::errc{} ? n : 0;
  rest.remove_prefix(static_cast<std::size_t>(p - rest.data()));
  const auto in = rest.find(" in ");
  f.func = in == std::string_view::npos ? "???" : std::string(trim(rest.substr(in + 4)));
  return true;
}

std::string_view base_name(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::vector<ThreadStack> parse_faulthandler(std::string_view text) {
  std::vector<ThreadStack> out;
  ThreadStack* cur = nullptr;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    const std::string_view t = trim(line);
    if (t.starts_with("Thread 0x") || t.starts_with("Current thread 0x") || t.starts_with("Stack (most")) {
      ThreadStack th;
      th.current = t.starts_with("Current thread");
      if (!t.starts_with("Stack")) {
        const auto at = t.find("0x");
        const auto sp = t.find(' ', at);
        th.id = std::string(t.substr(at, sp == std::string_view::npos ? std::string_view::npos : sp - at));
      }
      out.push_back(std::move(th));
      cur = &out.back();
      continue;
    }
    if (!cur) continue;
    if (t == "...") {
      cur->truncated = true;
      continue;
    }
    StackFrame f;
    if (parse_frame(line, f)) {
      cur->frames.push_back(std::move(f));
    } else if (!t.empty()) {
      cur = nullptr;  // something else: the block ended
    }
  }
  std::erase_if(out, [](const ThreadStack& th) { return th.frames.empty() && !th.truncated; });
  return out;
}

const ThreadStack* main_thread(const std::vector<ThreadStack>& threads) {
  const ThreadStack* first = nullptr;
  for (const auto& th : threads) {
    const bool started_by_python = !th.frames.empty() && th.frames.back().func == "_bootstrap" &&
                                   base_name(th.frames.back().file) == "threading.py";
    if (started_by_python) continue;
    if (th.current) return &th;
    if (!first) first = &th;
  }
  if (first) return first;
  return threads.empty() ? nullptr : &threads.front();
}

namespace {

// trainmon's own package (python/trainmon/*.py): its hooks wrap the user's calls (and torch's: the
// collective timing wraps Work.wait(), which torch's all_reduce calls)
bool own_file(std::string_view f) {
  const auto base = base_name(f);
  const auto dir = f.substr(0, f.size() - base.size());
  return dir.ends_with("/trainmon/") &&
         (base.starts_with("_") || base == "hf.py" || base == "lightning.py" || base == "ultralytics.py");
}

}  // namespace

bool library_file(std::string_view f) {
  if (f.starts_with("<")) return true;  // <frozen importlib._bootstrap>, <string>
  if (f.find("/site-packages/") != std::string_view::npos ||
      f.find("/dist-packages/") != std::string_view::npos)
    return true;
  if (const auto p = f.find("/lib/python3"); p != std::string_view::npos) return true;
  return own_file(f);
}

namespace {

/// The file as frame_text() names it (see there).
std::string_view display_path(std::string_view f) {
  for (std::string_view marker : {"/site-packages/", "/dist-packages/"}) {
    if (const auto p = f.rfind(marker); p != std::string_view::npos && p + marker.size() < f.size())
      return f.substr(p + marker.size());
  }
  if (const auto p = f.find("/lib/python3"); p != std::string_view::npos) {
    if (const auto slash = f.find('/', p + 5); slash != std::string_view::npos && slash + 1 < f.size())
      return f.substr(slash + 1);
  }
  return base_name(f);
}

}  // namespace

std::string frame_text(const StackFrame& f) {
  const auto file = display_path(f.file);
  return f.line > 0 ? fmt::format("{}:{} in {}", file, f.line, f.func)
                    : fmt::format("{} in {}", file, f.func);
}

std::string collective_of(const ThreadStack& t) {
  for (const auto& f : t.frames) {
    const std::string_view file = f.file;
    const std::string_view path = display_path(file);
    const bool comm =
        path.starts_with("torch/distributed/") || path.starts_with("torch/nn/parallel/distributed") ||
        path.starts_with("torch/autograd/") || path.starts_with("deepspeed/comm/") ||
        path.starts_with("horovod/") || (path.starts_with("torch/cuda/") && f.func == "synchronize");
    if (comm) return f.func;
  }
  return {};
}

StuckAt stuck_at(const ThreadStack& t) {
  StuckAt s;
  if (t.frames.empty()) return s;
  // trainmon's own wrappers are never where a thread is: the frame they wrap is
  const StackFrame* at = &t.frames.front();
  for (const auto& f : t.frames) {
    if (!own_file(f.file)) {
      at = &f;
      break;
    }
  }
  s.where = frame_text(*at);
  if (!library_file(at->file)) return s;
  for (const auto& f : t.frames) {
    if (!library_file(f.file)) {
      s.caller = frame_text(f);
      break;
    }
  }
  return s;
}

std::string thread_text(const ThreadStack& t, std::size_t max_bytes) {
  std::string out;
  for (const auto& f : t.frames) {
    std::string line = f.line > 0 ? fmt::format("  File \"{}\", line {} in {}\n", f.file, f.line, f.func)
                                  : fmt::format("  File \"{}\" in {}\n", f.file, f.func);
    if (out.size() + line.size() > max_bytes) break;
    out += line;
  }
  return out;
}

}  // namespace trainmon::diagnose
