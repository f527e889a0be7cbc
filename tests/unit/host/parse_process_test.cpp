// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "trainmon/host/parse_process.h"
#include "trainmon/host/user_names.h"

using namespace trainmon;
using namespace std::string_literals;

TEST(ParsePidStat, CommWithParenthesesAndSpaces) {
  const auto s = parse_pid_stat(
      "4242 (my (weird) prog) x) S 1 4242 4242 0 -1 4194560 1000 0 5 0 250 50 0 0 20 0 7 0 123456 8000000 "
      "2048 18446744073709551615 1 1 0 0 0 0 0 4096 17663 0 0 0 17 3 0 0\n");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->pid, 4242u);
  EXPECT_EQ(s->comm, "my (weird) prog) x");
  EXPECT_EQ(s->state, 'S');
  EXPECT_EQ(s->ppid, 1u);
  EXPECT_EQ(s->utime_ticks, 250u);
  EXPECT_EQ(s->stime_ticks, 50u);
  EXPECT_EQ(s->num_threads, 7);
  EXPECT_EQ(s->start_time_ticks, 123456u);
  EXPECT_EQ(s->vsize_bytes, 8000000u);
  EXPECT_EQ(s->rss_pages, 2048u);
  EXPECT_EQ(s->processor, 3u);
}

TEST(ParsePidStat, RejectsTruncatedAndGarbage) {
  EXPECT_FALSE(parse_pid_stat("12 (x) S 1 2 3").has_value());
  EXPECT_FALSE(parse_pid_stat("").has_value());
  EXPECT_FALSE(
      parse_pid_stat("abc (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22").has_value());
  EXPECT_FALSE(parse_pid_stat("12 (x) SS 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1").has_value());
}

TEST(ParsePidStatus, UidNspidAndMemory) {
  const auto s = parse_pid_status(
      "Name:\tpython\nState:\tR (running)\nPPid:\t8948\nUid:\t1000\t1001\t1000\t1000\nNSpid:\t8955\t12\t1\n"
      "VmSize:\t    3060 kB\nVmRSS:\t    1688 kB\nRssFile:\t    1576 kB\nRssShmem:\t       8 kB\nVmSwap:\t 4 "
      "kB\n"
      "Threads:\t3\n");
  EXPECT_EQ(s.uid_real, 1000u);
  EXPECT_EQ(s.uid_effective, 1001u);
  EXPECT_EQ(s.ppid, 8948u);
  EXPECT_EQ(s.state, 'R');
  EXPECT_EQ(s.threads, 3u);
  EXPECT_EQ(s.vm_rss_bytes, 1688u * 1024);
  EXPECT_EQ(s.vm_size_bytes, 3060u * 1024);
  EXPECT_EQ(s.rss_file_bytes, 1576u * 1024);
  EXPECT_EQ(s.rss_shmem_bytes, 8u * 1024);
  EXPECT_EQ(s.vm_swap_bytes, 4u * 1024);
  EXPECT_EQ(s.nspid, (std::vector<std::uint32_t>{8955, 12, 1}));
}

TEST(ParsePidStatus, KernelThreadHasNoMemoryLines) {
  const auto s = parse_pid_status("Name:\tkthreadd\nState:\tS (sleeping)\nUid:\t0\t0\t0\t0\nThreads:\t1\n");
  EXPECT_EQ(s.uid_real, 0u);
  EXPECT_FALSE(s.vm_rss_bytes.has_value());
  EXPECT_TRUE(s.nspid.empty());
}

TEST(ParsePidIo, StorageAndCharCounters) {
  const auto io = parse_pid_io(
      "rchar: 6976\nwchar: 5\nsyscr: 10\nsyscw: 1\nread_bytes: 4096\nwrite_bytes: "
      "8192\ncancelled_write_bytes: 0\n");
  EXPECT_EQ(io.rchar, 6976u);
  EXPECT_EQ(io.read_bytes, 4096u);
  EXPECT_EQ(io.write_bytes, 8192u);
  EXPECT_EQ(io.cancelled_write_bytes, 0u);
  EXPECT_FALSE(parse_pid_io("").read_bytes.has_value());
}

TEST(ParseCmdline, NulSeparatorsAndPadding) {
  EXPECT_EQ(parse_cmdline("python\0train.py\0--lr\0"
                          "0.1\0"s),
            "python train.py --lr 0.1");
  EXPECT_EQ(parse_cmdline("nginx: worker process\0\0\0\0\0\0"s), "nginx: worker process");  // setproctitle
  EXPECT_EQ(parse_cmdline(""), "");
  EXPECT_EQ(parse_cmdline("a\tb\nc"), "a b c");  // control bytes cannot reach a terminal
}

TEST(ParseCmdline, InvalidUtf8IsReplaced) {
  EXPECT_EQ(parse_cmdline("caf\xc3\xa9 \xff x"s), "caf\xc3\xa9 \xEF\xBF\xBD x");
  EXPECT_EQ(parse_cmdline("\xe2\x82"s), "\xEF\xBF\xBD\xEF\xBF\xBD");  // truncated 3-byte sequence
  EXPECT_EQ(parse_cmdline("\xed\xa0\x80"s), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(parse_cmdline("\xc0\xaf"s), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong '/'
  EXPECT_EQ(sanitize_utf8("\xf0\x9f\x98\x80"s), "\xf0\x9f\x98\x80");  // a valid 4-byte emoji stays
}

TEST(ParseCmdline, LongLinesAreCutOnACharacterBoundary) {
  std::string raw(10000, 'a');
  EXPECT_EQ(parse_cmdline(raw, 100).size(), 100u);
  std::string e = "ab" + std::string(20, '\0');
  for (int i = 0; i < 10; ++i) e.insert(2, "\xc3\xa9");  // "ab" + 10 x "é"
  EXPECT_EQ(parse_cmdline(e, 5), "ab\xc3\xa9");          // 4 bytes: the next é would overflow 5
}

TEST(ParseCmdline, SplitKeepsEmptyArguments) {
  EXPECT_EQ(split_cmdline("a\0\0b\0"s), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_TRUE(split_cmdline("\0\0"s).empty());
}

// argv for machine-readable outputs (status --json full_command): argument boundaries kept, as psutil.
TEST(ParseCmdlineArgs, KeepsArgumentBoundaries) {
  using V = std::vector<std::string>;
  EXPECT_EQ(parse_cmdline_args("python\0-c\0a b\0"s), (V{"python", "-c", "a b"}));
  EXPECT_EQ(parse_cmdline_args("x\0line1\nline2\0\t\0\0z\0"s), (V{"x", "line1\nline2", "\t", "", "z"}));
  EXPECT_EQ(parse_cmdline_args("my trainer\0"
                               "60\0"s),
            (V{"my trainer", "60"}));  // argv[0] with a blank
  EXPECT_EQ(parse_cmdline_args("sleep\0"s), (V{"sleep"}));
  EXPECT_TRUE(parse_cmdline_args(""s).empty());
  EXPECT_TRUE(parse_cmdline_args("\0\0"s).empty());
}

TEST(ParseCmdlineArgs, RewrittenArgvIsSplitAtBlanksAsPsutil) {
  using V = std::vector<std::string>;
  // setproctitle: one text over the argv area, NUL padding after it
  EXPECT_EQ(parse_cmdline_args("trainer: rank 0 of 8\0\0\0\0"s), (V{"trainer:", "rank", "0", "of", "8"}));
  // no NUL terminator at all: split at blanks (and at any NUL left inside)
  EXPECT_EQ(parse_cmdline_args("nginx: worker  process"s), (V{"nginx:", "worker", "process"}));
}

TEST(ParseCmdlineArgs, InvalidUtf8AndTheCap) {
  using V = std::vector<std::string>;
  EXPECT_EQ(parse_cmdline_args("a\xff\0b\0"s), (V{"a\xEF\xBF\xBD", "b"}));
  // cut at 8 bytes: "abc" (3) + "de\u00fc" (4) = 7, then one byte of "fg" (the rest dropped)
  EXPECT_EQ(parse_cmdline_args("abc\0de\xC3\xBC\0fg\0hij\0"s, 8), (V{"abc", "de\xC3\xBC", "f"}));
  // never inside a character: "\u00fc" does not fit in the last byte
  EXPECT_EQ(parse_cmdline_args("abcdefg\0\xC3\xBC\0"s, 8), (V{"abcdefg"}));
}

TEST(ParseCgroup, V1V2AndMemoryLine) {
  const auto lines = parse_cgroup(
      "12:pids:/docker/abc\n4:cpu,memory:/docker/abc\n1:name=systemd:/docker/abc\n0::/ignored\nbogus\n");
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[1].controllers, "cpu,memory");
  const auto mem = memory_cgroup_line(lines);
  ASSERT_TRUE(mem.has_value());
  EXPECT_EQ(mem->hierarchy_id, 4u);  // v1 memory wins over the v2 line on hybrid systems
  const auto v2 = memory_cgroup_line(parse_cgroup("0::/user.slice/session-1.scope\n"));
  ASSERT_TRUE(v2.has_value());
  EXPECT_EQ(v2->path, "/user.slice/session-1.scope");
  EXPECT_FALSE(memory_cgroup_line(parse_cgroup("3:cpu:/\n")).has_value());
}

TEST(ParseCgroup, ContainerIdsOfEveryRuntime) {
  const std::string id = "3f4e5d6c7b8a99881726354453627180a1b2c3d4e5f60718293a4b5c6d7e8f90";
  EXPECT_EQ(container_id_from_cgroup("/docker/" + id), id);
  EXPECT_EQ(container_id_from_cgroup("/system.slice/docker-" + id + ".scope"), id);
  EXPECT_EQ(
      container_id_from_cgroup("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12_34.slice/"
                               "cri-containerd-" +
                               id + ".scope"),
      id);
  EXPECT_EQ(container_id_from_cgroup("/kubepods/besteffort/pod0a1b/crio-" + id), id);
  EXPECT_EQ(container_id_from_cgroup("/machine.slice/libpod-" + id + ".scope/container"), id);
  EXPECT_FALSE(container_id_from_cgroup("/user.slice/user-1000.slice/session-2.scope").has_value());
  EXPECT_FALSE(container_id_from_cgroup("/docker/" + id + "0").has_value());  // 65 hex digits: not an id
}

TEST(ParsePasswd, NamesByUid) {
  const auto m = parse_passwd(
      "root:x:0:0:root:/root:/bin/bash\n# comment\nalice:x:1000:1000::/home/a:/bin/sh\n"
      "broken line\nbob:x:notanumber:1\nroot2:x:0:0::/:/bin/sh\n");
  EXPECT_EQ(m.size(), 2u);
  EXPECT_EQ(m.at(0), "root");  // first entry wins
  EXPECT_EQ(m.at(1000), "alice");
  EXPECT_EQ(passwd_path_for_proc_root("/proc"), "");
  EXPECT_EQ(passwd_path_for_proc_root("/tmp/tree/proc/"), "/tmp/tree/etc/passwd");
}
