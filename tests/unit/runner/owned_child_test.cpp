// SPDX-License-Identifier: Apache-2.0
// The reaper in wait_for_event leaves owned children (the alert command sink's) to their owner and
// reaps every other exited child, so the owner's waitpid() gets its exit status.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "trainmon/runner/launcher.h"

namespace trainmon::runner {
namespace {

pid_t start_exiting(int status) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(status);
  return pid;
}

bool is_zombie(pid_t pid) {
  siginfo_t si{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

TEST(OwnedChild, TheReaperLeavesItToItsOwnerAndReapsTheRest) {
  const pid_t owned = spawn_owned_child([] { return start_exiting(7); });
  ASSERT_GT(owned, 0);
  const pid_t other = start_exiting(3);
  ASSERT_GT(other, 0);
  for (int i = 0; i < 500 && !(is_zombie(owned) && is_zombie(other)); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(is_zombie(owned));
  ASSERT_TRUE(is_zombie(other));
  // Sweep until the other child is gone (the owned zombie may come first and stop a sweep; the
  // owner reaps it in between, as the command sink does within milliseconds).
  (void)wait_for_event(0, std::chrono::milliseconds(1));
  int st = 0;
  ASSERT_EQ(::waitpid(owned, &st, 0), owned);  // still there for its owner
  EXPECT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 7);
  release_owned_child(owned);
  (void)wait_for_event(0, std::chrono::milliseconds(1));
  EXPECT_FALSE(is_zombie(other));
  EXPECT_EQ(::waitpid(other, &st, WNOHANG), -1);  // reaped by the sweep
}

TEST(OwnedChild, NothingStartedRegistersNothing) {
  EXPECT_EQ(spawn_owned_child([] { return pid_t{0}; }), 0);
  const pid_t other = start_exiting(0);
  ASSERT_GT(other, 0);
  for (int i = 0; i < 500 && !is_zombie(other); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  (void)wait_for_event(0, std::chrono::milliseconds(1));
  EXPECT_FALSE(is_zombie(other));
}

}  // namespace
}  // namespace trainmon::runner
