// SPDX-License-Identifier: Apache-2.0
#include "trainmon/runner/exit_status.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trainmon/runner/launcher.h"

namespace trainmon::runner {
namespace {

int real_status(const char* script) {
  pid_t p = ::fork();
  if (p == 0) {
    ::execl("/bin/sh", "sh", "-c", script, static_cast<char*>(nullptr));
    ::_exit(99);
  }
  int st = 0;
  ::waitpid(p, &st, 0);
  return st;
}

TEST(RunnerExitStatus, MapsExitCodesAndSignalsAsAShell) {
  auto ok = decode_wait_status(real_status("exit 0"));
  EXPECT_TRUE(ok.exited);
  EXPECT_EQ(exit_code_for(ok), 0);
  EXPECT_EQ(describe_exit(ok), "exit status 0");

  auto three = decode_wait_status(real_status("exit 3"));
  EXPECT_EQ(exit_code_for(three), 3);
  EXPECT_EQ(describe_exit(three), "exit status 3");

  auto term = decode_wait_status(real_status("kill -TERM $$"));
  EXPECT_FALSE(term.exited);
  ASSERT_TRUE(term.signal);
  EXPECT_EQ(*term.signal, SIGTERM);
  EXPECT_EQ(exit_code_for(term), 143);
  EXPECT_EQ(describe_exit(term), "killed by SIGTERM (signal 15)");

  auto kill9 = decode_wait_status(real_status("kill -KILL $$"));
  EXPECT_EQ(exit_code_for(kill9), 137);
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
  // real-time signals as `kill -l` names them, the number said once
  EXPECT_EQ(signal_name(SIGRTMIN), "SIGRTMIN");
  EXPECT_EQ(signal_name(SIGRTMIN + 6), "SIGRTMIN+6");
  EXPECT_EQ(signal_name(200), "signal 200");
}

TEST(RunnerLaunch, MissingProgramIs127AndNothingIsLeftRunning) {
  auto r = launch(LaunchOptions{{"/nonexistent/trainmon-no-such-program"}, {}});
  ASSERT_FALSE(r);
  EXPECT_EQ(exit_code_for_launch_error(r.error()), 127);
  EXPECT_NE(r.error().message.find("/nonexistent/trainmon-no-such-program"), std::string::npos);
  int st = 0;
  EXPECT_EQ(::waitpid(-1, &st, WNOHANG), -1);  // the failed child was reaped
}

TEST(RunnerLaunch, ChildGetsExtraEnvironmentAndItsStatusComesBack) {
  auto r = launch(
      LaunchOptions{{"sh", "-c", "test \"$TRAINMON_RUN_ID\" = 17 && exit 5"}, {{"TRAINMON_RUN_ID", "17"}}});
  ASSERT_TRUE(r) << r.error().message;
  int st = 0;
  ASSERT_EQ(::waitpid(*r, &st, 0), *r);
  EXPECT_EQ(exit_code_for(decode_wait_status(st)), 5);
}

}  // namespace
}  // namespace trainmon::runner
