// SPDX-License-Identifier: Apache-2.0
// uid → user name, cached. Reads a passwd file when one is given (a fixture tree's etc/passwd),
// else asks the C library (getpwuid_r: NSS, LDAP ...). A uid without an entry is named by its number.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace trainmon {

/// Parses passwd(5) text ("name:x:uid:gid:gecos:home:shell") into uid → name; the first entry of a
/// uid wins; malformed lines are skipped.
std::unordered_map<std::uint32_t, std::string> parse_passwd(std::string_view text);

/// The passwd file that goes with a proc root: empty for the live "/proc" (use the C library), else
/// the proc root's sibling "etc/passwd" ("/tmp/tree/proc" → "/tmp/tree/etc/passwd").
std::string passwd_path_for_proc_root(std::string_view proc_root);

class UserNames {
 public:
  /// `passwd_path` empty: getpwuid_r. Otherwise that file, read once on first use.
  explicit UserNames(std::string passwd_path = {});
  /// The user name of `uid`, or its decimal number when there is no entry. Cached (one lookup per
  /// uid; at most kMaxCachedUsers entries from the C library, then the cache starts over). The
  /// reference is valid until the next call.
  const std::string& name(std::uint32_t uid);
  static constexpr std::size_t kMaxCachedUsers = 4096;
  /// Entries cached now (tests).
  std::size_t cached() const noexcept { return cache_.size(); }

 private:
  std::string passwd_path_;
  bool file_loaded_ = false;
  std::unordered_map<std::uint32_t, std::string> cache_;
  std::string unknown_;  ///< the last uid missing from the passwd file, as a number
};

}  // namespace trainmon
