// SPDX-License-Identifier: Apache-2.0
#include "trainmon/recorder/recording.h"

#include <pwd.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace trainmon::recorder {

std::string current_boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

store::RunInfo this_process_run_info(std::string kind, std::string name, std::int64_t start_unix_ns,
                                     std::optional<std::int64_t> start_monotonic_ns) {
  store::RunInfo r;
  r.boot_id = current_boot_id();
  r.start_monotonic_ns = start_monotonic_ns;
  r.kind = std::move(kind);
  r.name = std::move(name);
  r.start_unix_ns = start_unix_ns;
  std::error_code ec;
  r.cwd = std::filesystem::current_path(ec).string();
  if (const passwd* pw = ::getpwuid(::geteuid())) {
    r.user = pw->pw_name;
  } else {
    r.user = std::to_string(::geteuid());
  }
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) r.host = host;
  r.recorder_pid = ::getpid();
  return r;
}

std::string default_run_name(const std::vector<std::string>& command) {
  if (command.empty()) return "record";
  std::string prog = std::filesystem::path(command[0]).filename().string();
  // python train.py / python3 -u train.py / torchrun --nproc_per_node 8 train.py: name the script
  if (prog.starts_with("python") || prog == "torchrun" || prog == "accelerate" || prog == "deepspeed") {
    for (std::size_t i = 1; i < command.size(); ++i) {
      if (command[i].ends_with(".py")) return std::filesystem::path(command[i]).filename().string();
    }
  }
  return prog;
}

Expected<Recording> start_recording(const std::string& db_path, const store::RunInfo& run,
                                    std::chrono::nanoseconds wait, store::WriterOptions options) {
  Recording rec;
  rec.writer = std::make_unique<store::StoreWriter>(db_path, run, options);
  rec.run_id = rec.writer->wait_for_run(wait);
  if (auto e = rec.writer->error(); e && rec.run_id == 0) return std::unexpected(*e);
  return rec;
}

}  // namespace trainmon::recorder
