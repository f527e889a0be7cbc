// SPDX-License-Identifier: Apache-2.0
// UserNames stays bounded on a machine (or user namespace) with very many uids.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "trainmon/host/user_names.h"

using namespace trainmon;

TEST(UserNames, CacheIsBoundedForUnknownUids) {
  UserNames libc;  // getpwuid_r: uids far above any real account have no entry
  for (std::uint32_t uid = 3'000'000'000u; uid < 3'000'000'000u + 3 * UserNames::kMaxCachedUsers; ++uid) {
    EXPECT_EQ(libc.name(uid), std::to_string(uid));
  }
  EXPECT_LE(libc.cached(), UserNames::kMaxCachedUsers);
  EXPECT_EQ(libc.name(0), "root");

  const auto dir = std::filesystem::temp_directory_path() / ("trainmon-users-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "passwd") << "root:x:0:0::/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh\n";
  UserNames file((dir / "passwd").string());
  EXPECT_EQ(file.name(1000), "alice");
  for (std::uint32_t uid = 5000; uid < 15000; ++uid) EXPECT_EQ(file.name(uid), std::to_string(uid));
  EXPECT_EQ(file.cached(), 2u) << "unknown uids are not cached";
  EXPECT_EQ(file.name(1000), "alice");
  std::filesystem::remove_all(dir);
}
