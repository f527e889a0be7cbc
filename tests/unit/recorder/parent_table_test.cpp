// SPDX-License-Identifier: Apache-2.0
// ParentTable against a hand-made proc tree: it scans /proc again only when /proc/loadavg's last pid
// moved (and then at once for an unknown root, else after min_rescan), and finds the same descendants
// as a scan at every tick would.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <string>

#include "trainmon/recorder/job_tree.h"

namespace trainmon::recorder {
namespace {

namespace fs = std::filesystem;

class ProcTree {
 public:
  ProcTree()
      : root_(fs::temp_directory_path() /
              ("trainmon-parent-table-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++))) {
    fs::create_directories(root_);
  }
  ~ProcTree() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  void add(std::uint32_t pid, std::uint32_t ppid) {
    fs::create_directories(root_ / std::to_string(pid));
    std::ofstream(root_ / std::to_string(pid) / "stat")
        << pid << " (worker (1)) S " << ppid << " " << pid << " " << pid << " 0 -1\n";
  }
  void remove(std::uint32_t pid) { fs::remove_all(root_ / std::to_string(pid)); }
  void last_pid(std::uint32_t pid) {
    std::ofstream(root_ / "loadavg") << "0.20 0.18 0.12 1/80 " << pid << "\n";
  }
  std::string path() const { return root_.string(); }

 private:
  static inline int counter_ = 0;
  fs::path root_;
};

constexpr std::int64_t kSecond = 1'000'000'000;

TEST(ParentTable, ReadsTheLastPidOfLoadavg) {
  ProcTree t;
  EXPECT_FALSE(read_last_pid(t.path()));  // no loadavg
  t.last_pid(11206);
  EXPECT_EQ(read_last_pid(t.path()), 11206u);
  std::ofstream(t.path() + "/loadavg") << "garbage\n";
  EXPECT_FALSE(read_last_pid(t.path()));
  std::ofstream(t.path() + "/loadavg") << "0.1 0.2 0.3 1/80 12x\n";
  EXPECT_FALSE(read_last_pid(t.path()));
}

TEST(ParentTable, ScansOnlyWhenAProcessAppeared) {
  ProcTree t;
  t.add(1, 0);
  t.add(200, 1);
  t.add(201, 200);
  t.last_pid(201);
  ParentTable table(t.path(), 5 * kSecond);
  const std::vector<std::uint32_t> roots{200};
  EXPECT_EQ(table.descendants_of(roots, 0, 0), (std::vector<std::uint32_t>{200, 201}));
  EXPECT_EQ(table.scans(), 1u);
  // Nothing created: no scan, same answer (an exited child stays listed until a scan; the sampler
  // drops what it cannot read).
  t.remove(201);
  EXPECT_EQ(table.descendants_of(roots, 0, 1 * kSecond), (std::vector<std::uint32_t>{200, 201}));
  EXPECT_EQ(table.scans(), 1u);
  // A new worker elsewhere in the tree: found after min_rescan, not before.
  t.add(202, 200);
  t.last_pid(202);
  EXPECT_EQ(table.descendants_of(roots, 0, 2 * kSecond), (std::vector<std::uint32_t>{200, 201}));
  EXPECT_EQ(table.scans(), 1u);
  EXPECT_EQ(table.descendants_of(roots, 0, 6 * kSecond), (std::vector<std::uint32_t>{200, 202}));
  EXPECT_EQ(table.scans(), 2u);
}

TEST(ParentTable, ANewRootScansAtOnceButAnInvisibleOneDoesNotRepeat) {
  ProcTree t;
  t.add(1, 0);
  t.add(200, 1);
  t.last_pid(200);
  ParentTable table(t.path(), 5 * kSecond);
  std::vector<std::uint32_t> roots{200};
  (void)table.descendants_of(roots, 0, 0);
  // A new GPU process 300 with a child: scanned at the next tick, whatever min_rescan says.
  t.add(300, 1);
  t.add(301, 300);
  t.last_pid(301);
  roots = {200, 300};
  EXPECT_EQ(table.descendants_of(roots, 0, 1), (std::vector<std::uint32_t>{200, 300, 301}));
  EXPECT_EQ(table.scans(), 2u);
  // A root this /proc cannot show (another pid namespace): no scan while no pid is created.
  roots = {200, 999};
  EXPECT_EQ(table.descendants_of(roots, 0, 2), (std::vector<std::uint32_t>{200, 999}));
  EXPECT_EQ(table.descendants_of(roots, 0, 3), (std::vector<std::uint32_t>{200, 999}));
  EXPECT_EQ(table.scans(), 2u);
  // Processes keep appearing elsewhere (a busy machine): the invisible root costs one scan, then
  // waits for min_rescan like everything else.
  t.last_pid(400);
  (void)table.descendants_of(roots, 0, 4);
  EXPECT_EQ(table.scans(), 3u);
  t.last_pid(401);
  (void)table.descendants_of(roots, 0, 5);
  EXPECT_EQ(table.scans(), 3u);
  t.last_pid(402);
  (void)table.descendants_of(roots, 0, 5 * kSecond + 4);
  EXPECT_EQ(table.scans(), 4u);
}

TEST(ParentTable, WithoutLoadavgAndNoMinimumItScansEveryTick) {
  ProcTree t;
  t.add(100, 1);
  t.add(200, 100);
  ParentTable table(t.path(), 0);
  const std::vector<std::uint32_t> roots{200, 100};
  EXPECT_EQ(table.descendants_of(roots, 100, 0), (std::vector<std::uint32_t>{200}));
  t.add(201, 200);
  EXPECT_EQ(table.descendants_of(roots, 100, 1), (std::vector<std::uint32_t>{200, 201}));
  EXPECT_EQ(table.scans(), 2u);
}

}  // namespace
}  // namespace trainmon::recorder
