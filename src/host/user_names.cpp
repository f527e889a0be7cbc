// SPDX-License-Identifier: Apache-2.0
#include "trainmon/host/user_names.h"

#include <pwd.h>

#include <vector>

#include "file_reader.h"
#include "parse_util.h"

namespace trainmon {

using namespace host_detail;

std::unordered_map<std::uint32_t, std::string> parse_passwd(std::string_view text) {
  std::unordered_map<std::uint32_t, std::string> out;
  std::string_view line;
  while (next_line(text, line)) {
    if (line.empty() || line.front() == '#') continue;
    const auto c1 = line.find(':');
    if (c1 == std::string_view::npos || c1 == 0) continue;
    const auto c2 = line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    const auto c3 = line.find(':', c2 + 1);
    if (c3 == std::string_view::npos) continue;
    const auto uid = to_number<std::uint32_t>(line.substr(c2 + 1, c3 - c2 - 1));
    if (!uid) continue;
    out.emplace(*uid, std::string(line.substr(0, c1)));
  }
  return out;
}

std::string passwd_path_for_proc_root(std::string_view proc_root) {
  while (proc_root.size() > 1 && proc_root.back() == '/') proc_root.remove_suffix(1);
  if (proc_root == "/proc") return {};
  const auto slash = proc_root.rfind('/');
  const std::string parent =
      slash == std::string_view::npos ? std::string(".") : std::string(proc_root.substr(0, slash));
  return parent + "/etc/passwd";
}

UserNames::UserNames(std::string passwd_path) : passwd_path_(std::move(passwd_path)) {}

const std::string& UserNames::name(std::uint32_t uid) {
  if (const auto it = cache_.find(uid); it != cache_.end()) return it->second;
  if (!passwd_path_.empty()) {
    if (!file_loaded_) {
      file_loaded_ = true;
      FileReader reader;
      if (reader.read(passwd_path_) == 0) {
        for (auto& [k, v] : parse_passwd(reader.text())) cache_.emplace(k, std::move(v));
      }
      if (const auto it = cache_.find(uid); it != cache_.end()) return it->second;
    }
    // Not in the file: its number, not cached (the cache stays what the file holds).
    unknown_ = std::to_string(uid);
    return unknown_;
  }
  struct passwd pw {};
  struct passwd* result = nullptr;
  std::vector<char> buf(4096);
  int rc = 0;
  while ((rc = getpwuid_r(uid, &pw, buf.data(), buf.size(), &result)) == ERANGE && buf.size() < (1u << 20)) {
    buf.resize(buf.size() * 2);
  }
  std::string name =
      (rc == 0 && result != nullptr && pw.pw_name != nullptr) ? std::string(pw.pw_name) : std::to_string(uid);
  // Bounded: a machine (or a container's user namespace) with more distinct uids than this starts the
  // cache over instead of growing for ever; the file-backed cache above is bounded by its file.
  if (cache_.size() >= kMaxCachedUsers) cache_.clear();
  return cache_.emplace(uid, std::move(name)).first->second;
}

}  // namespace trainmon
