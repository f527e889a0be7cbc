// SPDX-License-Identifier: Apache-2.0
// Files in shared places: a link or FIFO planted by someone else is never followed or waited on.
// (The attacker is simulated here by files we make ourselves; tests/e2e/test_hostile_neighbours.py
// plants them as a real second user.)
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "trainmon/core/private_files.h"

using namespace trainmon;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  auto p = fs::temp_directory_path() / ("trainmon-files-test-" + std::to_string(::getpid())) / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST(PrivateFiles, AtomicWriteReplacesAPlantedLinkInsteadOfFollowingIt) {
  const auto d = scratch("write");
  std::ofstream(d / "victim") << "precious";
  fs::create_symlink(d / "victim", d / "agent.json");
  ASSERT_TRUE(files::write_file_atomic((d / "agent.json").string(), "{\"v\":1}"));
  EXPECT_EQ(slurp(d / "victim"), "precious") << "the link target is untouched";
  EXPECT_FALSE(fs::is_symlink(d / "agent.json"));
  EXPECT_EQ(slurp(d / "agent.json"), "{\"v\":1}");
  struct stat st {};
  ASSERT_EQ(::stat((d / "agent.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_TRUE(files::write_file_atomic((d / "report.html").string(), "x", 0644));
  ASSERT_EQ(::stat((d / "report.html").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  // No temporary file is left behind.
  int n = 0;
  for (const auto& e : fs::directory_iterator(d)) n += e.path().filename().string().starts_with(".") ? 1 : 0;
  EXPECT_EQ(n, 0);
}

TEST(PrivateFiles, OutputFileIsWrittenIntoDevicesAndFifosAndThroughOurLinks) {
  // `-o FILE` as a shell redirection treats what is there: /dev/null stays a device (root replacing
  // it with a regular file broke the machine), a FIFO with a reader gets the text, a rules file
  // linked from elsewhere stays a link and keeps its mode.
  const auto d = scratch("output");
  // A private copy of /dev/null (never the machine's own: a wrong writer would replace it).
  const std::string dev_null = (d / "null").string();
  if (::mknod(dev_null.c_str(), S_IFCHR | 0666, ::makedev(1, 3)) == 0) {
    ASSERT_TRUE(files::write_output_file(dev_null, "rules\n", 0644));
    struct stat st {};
    ASSERT_EQ(::stat(dev_null.c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the device was replaced by a file";
    fs::create_symlink(dev_null, d / "to-null");
    ASSERT_TRUE(files::write_output_file((d / "to-null").string(), "x", 0644));
    EXPECT_TRUE(fs::is_symlink(d / "to-null"));
    ASSERT_EQ(::stat(dev_null.c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
  }
  struct stat st {};

  // A regular file behind our own link: the link stays, the file gets the text and keeps its mode.
  std::ofstream(d / "real.yml") << "old";
  ::chmod((d / "real.yml").c_str(), 0640);
  fs::create_symlink(d / "real.yml", d / "linked.yml");
  ASSERT_TRUE(files::write_output_file((d / "linked.yml").string(), "new", 0644));
  EXPECT_TRUE(fs::is_symlink(d / "linked.yml"));
  EXPECT_EQ(slurp(d / "real.yml"), "new");
  ASSERT_EQ(::stat((d / "real.yml").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  // A new file gets the mode asked for.
  ASSERT_TRUE(files::write_output_file((d / "fresh.yml").string(), "y", 0604));
  ASSERT_EQ(::stat((d / "fresh.yml").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0604u);

  // A FIFO without a reader: an error at once, no wait; with one: the reader gets every byte.
  ASSERT_EQ(::mkfifo((d / "fifo").c_str(), 0600), 0);
  const auto t0 = std::chrono::steady_clock::now();
  auto none = files::write_output_file((d / "fifo").string(), "z", 0644);
  ASSERT_FALSE(none);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  std::string got;
  std::thread reader([&] { got = slurp(d / "fifo"); });
  const std::string big(200'000, 'q');  // more than a pipe holds: the writer waits for the reader
  bool ok = false;
  for (int i = 0; i < 200 && !ok; ++i) {  // until the reader has opened its end
    ok = files::write_output_file((d / "fifo").string(), big, 0644).has_value();
    if (!ok) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  reader.join();
  EXPECT_TRUE(ok);
  EXPECT_EQ(got.size(), big.size());
  struct stat fst {};
  ASSERT_EQ(::lstat((d / "fifo").c_str(), &fst), 0);
  EXPECT_TRUE(S_ISFIFO(fst.st_mode));

  // A link to nothing, a directory: errors, nothing created.
  fs::create_symlink(d / "missing", d / "dangling");
  EXPECT_FALSE(files::write_output_file((d / "dangling").string(), "x", 0644));
  EXPECT_FALSE(fs::exists(d / "missing"));
  EXPECT_FALSE(files::write_output_file(d.string(), "x", 0644));

  // Another user's link (planted in a shared folder) is replaced, never followed.
  if (::geteuid() == 0) {
    std::ofstream(d / "victim") << "precious";
    fs::create_symlink(d / "victim", d / "planted");
    ASSERT_EQ(::lchown((d / "planted").c_str(), 65534, 65534), 0);
    ASSERT_TRUE(files::write_output_file((d / "planted").string(), "report", 0644));
    EXPECT_EQ(slurp(d / "victim"), "precious");
    EXPECT_FALSE(fs::is_symlink(d / "planted"));
    EXPECT_EQ(slurp(d / "planted"), "report");
  }
}

TEST(PrivateFiles, ReadRefusesFifosLinksAndDevicesWithoutWaiting) {
  const auto d = scratch("read");
  ASSERT_EQ(::mkfifo((d / "fifo").c_str(), 0600), 0);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = files::read_regular_file((d / "fifo").string(), 1 << 20);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1)) << "a FIFO must not block";
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("not a regular file"), std::string::npos) << r.error().message;
  std::ofstream(d / "real") << "data";
  fs::create_symlink(d / "real", d / "link");
  r = files::read_regular_file((d / "link").string(), 1 << 20);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("symbolic link"), std::string::npos);
  EXPECT_FALSE(files::read_regular_file("/dev/zero", 1 << 20));
  auto ok = files::read_regular_file((d / "real").string(), 1 << 20);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(*ok, "data");
  EXPECT_FALSE(files::read_regular_file((d / "real").string(), 2)) << "larger than the limit";
  if (::geteuid() == 0) {  // root can give a file away: someone else's file is refused
    ASSERT_EQ(::chown((d / "real").c_str(), 65534, 65534), 0);
    EXPECT_FALSE(files::read_regular_file((d / "real").string(), 1 << 20));
    EXPECT_TRUE(files::read_regular_file((d / "real").string(), 1 << 20, /*own=*/false));
  }
}

TEST(PrivateFiles, PrivateDirIsOursClosedAndNoLink) {
  const auto d = scratch("dirs");
  ASSERT_TRUE(files::ensure_private_dir((d / "mine").string()));
  struct stat st {};
  ASSERT_EQ(::stat((d / "mine").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  fs::create_directory_symlink(d / "mine", d / "link");
  EXPECT_FALSE(files::ensure_private_dir((d / "link").string()));
  fs::create_directories(d / "open");
  fs::permissions(d / "open", fs::perms::all);
  auto r = files::ensure_private_dir((d / "open").string());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("writable by other users"), std::string::npos);
  if (::geteuid() == 0) {
    fs::create_directories(d / "theirs");
    ASSERT_EQ(::chown((d / "theirs").c_str(), 65534, 65534), 0);
    EXPECT_FALSE(files::ensure_private_dir((d / "theirs").string()));
  }
}

TEST(PrivateFiles, RemoveDirNeverFollowsALinkInside) {
  const auto d = scratch("remove");
  fs::create_directories(d / "outside");
  std::ofstream(d / "outside" / "keep") << "x";
  fs::create_directories(d / "run" / "py" / "trainmon");  // the Python hook's tree
  std::ofstream(d / "run" / "py" / "trainmon" / "__init__.py") << "";
  std::ofstream(d / "run" / "snapshot.json") << "{}";
  fs::create_directory_symlink(d / "outside", d / "run" / "evil");
  fs::create_directory_symlink(d / "outside", d / "run" / "py" / "deeper");
  ASSERT_TRUE(files::remove_private_dir((d / "run").string()));
  EXPECT_FALSE(fs::exists(d / "run"));
  EXPECT_TRUE(fs::exists(d / "outside" / "keep"));
  // A link in the folder's own place is not followed either.
  fs::create_directory_symlink(d / "outside", d / "run2");
  EXPECT_FALSE(files::remove_private_dir((d / "run2").string()));
  EXPECT_TRUE(fs::exists(d / "outside" / "keep"));
}
