// SPDX-License-Identifier: Apache-2.0
// The recorder side of the stack capture (recorder/stack_capture.h) against real processes: a Python
// process that registers faulthandler on SIGRTMIN+6 itself, as the package does (docs/python.md
// "Stacks"); a process without the handler is never signalled; a link is never followed.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "trainmon/recorder/stack_capture.h"

namespace trainmon::recorder {
namespace {

namespace fs = std::filesystem;

struct Child {
  pid_t pid = -1;
  ~Child() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  bool alive() const { return pid > 0 && ::waitpid(pid, nullptr, WNOHANG) == 0; }
};

pid_t spawn(const std::vector<std::string>& argv) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    ::execv(a[0], a.data());
    ::_exit(127);
  }
  return pid;
}

fs::path temp_dir() {
  std::string tmpl = (fs::temp_directory_path() / "tm-stacks-XXXXXX").string();
  return fs::path(::mkdtemp(tmpl.data()));
}

bool wait_for_handler(pid_t pid, int sig) {
  for (int i = 0; i < 200; ++i) {  // up to 10 s for the interpreter to start
    if (signal_caught("/proc", static_cast<std::uint32_t>(pid), sig)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

TEST(StackCapture, SigCgtParsing) {
  EXPECT_EQ(parse_sigcgt("Name:\tpython3\nSigBlk:\t0000000000000000\nSigCgt:\t0000008100000000\n"),
            0x8100000000u);
  EXPECT_FALSE(parse_sigcgt("SigCgt:\tzz\n"));
  EXPECT_FALSE(parse_sigcgt("Name: x\n"));
  EXPECT_FALSE(parse_sigcgt("XSigCgt:\t01\n"));
}

TEST(StackCapture, AsksAProcessThatRegisteredFaulthandlerAndReadsWhatItWrote) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  const auto dir = temp_dir();
  const std::string script =
      "import faulthandler, os, signal, sys, time\n"
      "f = open(sys.argv[1] + '/stacks-%d.txt' % os.getpid(), 'a')\n"
      "faulthandler.register(signal.SIGRTMIN + 6, file=f, all_threads=True)\n"
      "def stuck_here():\n"
      "    time.sleep(60)\n"
      "stuck_here()\n";
  const auto py = dir / "stuck.py";
  std::ofstream(py) << script;
  Child c;
  c.pid = spawn({"/usr/bin/python3", py.string(), dir.string()});
  const int sig = SIGRTMIN + 6;
  ASSERT_TRUE(wait_for_handler(c.pid, sig));
  StackCaptureOptions o;
  o.directory = dir.string();
  const auto t0 = std::chrono::steady_clock::now();
  auto r = capture_stacks({{1, static_cast<std::uint32_t>(c.pid), sig}}, o);
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].skipped, "");
  EXPECT_NE(r[0].text.find("line 5 in stuck_here"), std::string::npos) << r[0].text;
  EXPECT_NE(r[0].text.find("line 6 in <module>"), std::string::npos) << r[0].text;
  EXPECT_LT(took, std::chrono::seconds(2));
  EXPECT_TRUE(c.alive()) << "asking for stacks never ends the job";
  // a second request reads only what the file gained since
  r = capture_stacks({{1, static_cast<std::uint32_t>(c.pid), sig}}, o);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].text.find("Current thread"), r[0].text.rfind("Current thread")) << "one dump, not two";
  // bounded: a small limit cuts the text
  o.max_bytes = 40;
  r = capture_stacks({{1, static_cast<std::uint32_t>(c.pid), sig}}, o);
  EXPECT_EQ(r[0].text.size(), 40u);
  EXPECT_TRUE(c.alive());
  fs::remove_all(dir);
}

TEST(StackCapture, NeverSignalsAProcessWithoutTheHandlerNorFollowsALink) {
  const auto dir = temp_dir();
  Child c;
  c.pid = spawn({"/bin/sleep", "60"});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const int sig = SIGRTMIN + 6;
  const auto file = dir / ("stacks-" + std::to_string(c.pid) + ".txt");
  std::ofstream(file) << "";
  StackCaptureOptions o;
  o.directory = dir.string();
  o.wait = std::chrono::milliseconds(200);
  auto r = capture_stacks({{0, static_cast<std::uint32_t>(c.pid), sig}}, o);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(r[0].skipped.find("SigCgt shows no handler"), std::string::npos) << r[0].skipped;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(c.alive()) << "SIGRTMIN+6's default action would have killed it";
  // not a real-time signal: refused whatever SigCgt says
  r = capture_stacks({{0, static_cast<std::uint32_t>(c.pid), SIGTERM}}, o);
  EXPECT_NE(r[0].skipped.find("not a real-time signal"), std::string::npos);
  EXPECT_TRUE(c.alive());
  // the stacks file is a link: not followed, nothing sent
  fs::remove(file);
  fs::create_symlink("/etc/passwd", file);
  r = capture_stacks({{0, static_cast<std::uint32_t>(c.pid), sig}}, o);
  EXPECT_NE(r[0].skipped.find("no stacks file"), std::string::npos) << r[0].skipped;
  EXPECT_TRUE(r[0].text.empty());
  EXPECT_TRUE(c.alive());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trainmon::recorder
