// SPDX-License-Identifier: Apache-2.0
// The signal dialog's identity check (signal_target.h) against hand-made /proc trees, and the
// dialog remembering the selected process's start time (keys.h).
#include "trainmon/tui/signal_target.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>

#include "../host/host_fixture_util.h"
#include "trainmon/host/parse_process.h"
#include "trainmon/tui/keys.h"

namespace trainmon::tui {
namespace {

// A /proc/PID/stat line as the kernel writes it (proc(5)); field 22 is `start`.
std::string stat_line(std::uint32_t pid, const std::string& comm, std::uint64_t start) {
  return std::to_string(pid) + " (" + comm + ") S 1 100 100 0 -1 4194304 120 0 0 0 3 1 0 0 20 0 1 0 " +
         std::to_string(start) +
         " 8392704 250 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 2 0 0 0 0 0\n";
}

void write_stat(const std::string& root, std::uint32_t pid, const std::string& text) {
  std::filesystem::create_directories(root + "/" + std::to_string(pid));
  std::ofstream(root + "/" + std::to_string(pid) + "/stat") << text;
}

TEST(SignalTarget, StatLineParsesAsTheKernelsWould) {
  test::TempDir dir;
  write_stat(dir.path(), 4321, stat_line(4321, "python3) S (x", 777123));  // comm with ") "
  EXPECT_EQ(check_signal_target(dir.path(), 4321, 777123), TargetCheck::same);
}

TEST(SignalTarget, SameStartTimeIsAllowed) {
  test::TempDir dir;
  write_stat(dir.path(), 1234, stat_line(1234, "sleep", 5550001));
  EXPECT_EQ(check_signal_target(dir.path(), 1234, 5550001), TargetCheck::same);
}

TEST(SignalTarget, OtherStartTimeMeansThePidWasReused) {
  test::TempDir dir;
  write_stat(dir.path(), 1234, stat_line(1234, "bash", 5559999));
  EXPECT_EQ(check_signal_target(dir.path(), 1234, 5550001), TargetCheck::reused);
  const SignalOutcome o = send_signal_checked(dir.path(), 1234, 5550001, SIGTERM);
  EXPECT_EQ(o.check, TargetCheck::reused);
  EXPECT_EQ(describe_not_sent(1234, o.check),
            "process 1234 exited (pid now used by another process): nothing sent");
}

TEST(SignalTarget, MissingPidIsGone) {
  test::TempDir dir;
  write_stat(dir.path(), 1234, stat_line(1234, "sleep", 5550001));
  EXPECT_EQ(check_signal_target(dir.path(), 1235, 5550001), TargetCheck::gone);
  EXPECT_EQ(check_signal_target(dir.path(), 0, 0), TargetCheck::gone);
  EXPECT_EQ(check_signal_target(dir.path() + "/no-such-root", 1234, 5550001), TargetCheck::gone);
  EXPECT_EQ(describe_not_sent(1235, TargetCheck::gone), "process 1235 exited: nothing sent");
}

TEST(SignalTarget, MalformedStatIsRefused) {
  test::TempDir dir;
  write_stat(dir.path(), 10, "");
  write_stat(dir.path(), 11, "11 (sleep) S 1 100\n");                         // too short
  write_stat(dir.path(), 12, "12 sleep S 1 100 100 0 -1 4194304 120 0 0\n");  // no parentheses
  std::string bad_start = stat_line(13, "sleep", 1);
  const auto at = bad_start.find(" 1 8392704");
  ASSERT_NE(at, std::string::npos);
  bad_start[at + 1] = 'x';  // field 22 not a number
  write_stat(dir.path(), 13, bad_start);
  write_stat(dir.path(), 14, stat_line(41, "sleep", 5550001));   // another pid inside
  std::filesystem::create_directories(dir.path() + "/15/stat");  // a directory, not a file
  for (std::uint32_t pid = 10; pid <= 15; ++pid)
    EXPECT_EQ(check_signal_target(dir.path(), pid, 5550001), TargetCheck::unreadable) << pid;
  EXPECT_NE(describe_not_sent(10, TargetCheck::unreadable).find("nothing sent"), std::string::npos);
  EXPECT_EQ(describe_not_sent(10, TargetCheck::same), "");
}

// Against the real /proc: this test process itself (its start time read the same way), and a
// start time it does not have, which must send nothing (this process would die of SIGTERM).
TEST(SignalTarget, RealProcSelf) {
  const auto self = static_cast<std::uint32_t>(::getpid());
  std::ifstream in("/proc/" + std::to_string(self) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto st = parse_pid_stat(text);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(check_signal_target("/proc", self, st->start_time_ticks), TargetCheck::same);
  const SignalOutcome wrong = send_signal_checked("/proc", self, st->start_time_ticks + 1, SIGTERM);
  EXPECT_EQ(wrong.check, TargetCheck::reused);
  // Signal 0 checks existence and permission without delivering anything.
  const SignalOutcome ok = send_signal_checked("/proc", self, st->start_time_ticks, 0);
  EXPECT_EQ(ok.check, TargetCheck::same);
  EXPECT_EQ(ok.err, 0);
}

TEST(SignalTarget, DialogRemembersTheStartTimeOfTheSelectedRow) {
  UiState ui;
  KeyContext ctx{{10, 20}, {"a", "b"}, 5, {std::uint64_t{1000}, std::nullopt}};
  ui.selected_pid = 10;
  handle_key(ui, 'k', ctx);
  ASSERT_EQ(ui.dialog.stage, DialogStage::confirm_term);
  EXPECT_EQ(ui.dialog.start_time_ticks, std::optional<std::uint64_t>(1000));
  KeyResult r = handle_key(ui, 'y', ctx);
  EXPECT_EQ(r.kind, KeyResult::send_signal);
  EXPECT_EQ(r.pid, 10U);
  EXPECT_EQ(r.start_time_ticks, std::optional<std::uint64_t>(1000));
  handle_key(ui, 'K', ctx);
  r = handle_key(ui, 'y', ctx);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_EQ(r.start_time_ticks, std::optional<std::uint64_t>(1000));
  signal_not_sent(ui, "process 10 exited: nothing sent");
  EXPECT_EQ(ui.dialog.stage, DialogStage::none);
  EXPECT_EQ(ui.message, "process 10 exited: nothing sent");

  UiState other;
  other.selected_pid = 20;  // a driver-listed row with no /proc entry: no dialog, nothing to send
  handle_key(other, 'k', ctx);
  EXPECT_EQ(other.dialog.stage, DialogStage::none);
  EXPECT_TRUE(other.selected_no_local);
  EXPECT_NE(other.message.find("pid 20 has no process in this PID namespace"), std::string::npos)
      << other.message;
  r = handle_key(other, 'y', ctx);
  EXPECT_NE(r.kind, KeyResult::send_signal);
}

}  // namespace
}  // namespace trainmon::tui
