// SPDX-License-Identifier: Apache-2.0
// Spool write / replay order, backoff schedule, rate limiter, delivery through a command sink,
// spooled alerts delivered by the next Delivery, credentials file permissions.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <unistd.h>

#include "trainmon/alerts/backoff.h"
#include "trainmon/alerts/delivery.h"
#include "trainmon/alerts/sinks.h"
#include "trainmon/alerts/spool.h"

namespace trainmon::alerts {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir(const char* name) {
  fs::path p = fs::temp_directory_path() / fmt::format("trainmon-alerts-{}-{}", name, ::getpid());
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

Notification note(int i) {
  Notification n;
  n.id = fmt::format("id-{}", i);
  n.state = "firing";
  n.rule = "r";
  n.severity = "warning";
  n.target = "gpu0";
  n.value = i;
  n.message = fmt::format("message {}", i);
  n.time_unix_ns = 1'700'000'000'000'000'000 + i;
  return n;
}

// The spool may sit in a shared place (--alerts-spool DIR): a folder others can write, a link or a
// FIFO in it is refused, never followed or waited on.
TEST(AlertSpool, RefusesFoldersOthersControlAndFilesThatAreNotOurs) {
  const auto root = temp_dir("spool-hostile");
  fs::create_directories(root / "open");
  fs::permissions(root / "open", fs::perms::all);
  auto put = Spool((root / "open").string()).put(note(1));
  ASSERT_FALSE(put);
  EXPECT_NE(put.error().message.find("writable by other users"), std::string::npos) << put.error().message;
  fs::create_directories(root / "elsewhere");
  fs::create_directory_symlink(root / "elsewhere", root / "link");
  EXPECT_FALSE(Spool((root / "link").string()).put(note(1)));
  EXPECT_TRUE(fs::is_empty(root / "elsewhere"));

  Spool ok((root / "sink").string());
  ASSERT_TRUE(ok.put(note(1)));
  ASSERT_EQ(::mkfifo((root / "sink" / "00000000000000000001-fifo.json").c_str(), 0600), 0);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(Spool::read((root / "sink" / "00000000000000000001-fifo.json").string()));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1)) << "a FIFO must not block";
  std::ofstream(root / "target.json") << "{}";
  fs::create_symlink(root / "target.json", root / "sink" / "00000000000000000002-link.json");
  EXPECT_FALSE(Spool::read((root / "sink" / "00000000000000000002-link.json").string()));
  fs::remove_all(root);
}

TEST(AlertSpool, WritesAtomicallyAndListsInOrder) {
  auto dir = temp_dir("spool");
  Spool s((dir / "hook").string());
  EXPECT_TRUE(s.list().empty());
  for (int i = 0; i < 12; ++i) ASSERT_TRUE(s.put(note(i)));
  auto files = s.list();
  ASSERT_EQ(files.size(), 12u);
  for (int i = 0; i < 12; ++i) {
    auto n = Spool::read(files[static_cast<std::size_t>(i)]);
    ASSERT_TRUE(n);
    EXPECT_EQ(*n, note(i));
  }
  EXPECT_EQ(fs::status(dir / "hook").permissions() & fs::perms::all, fs::perms::owner_all);
  std::ofstream(dir / "hook" / "00-garbage.json") << "{not json";
  auto bad = Spool::read(s.list().front());
  EXPECT_FALSE(bad);
  Spool::quarantine(s.list().front());
  EXPECT_EQ(s.list().size(), 12u);
  for (const auto& f : s.list()) EXPECT_TRUE(Spool::remove(f));
  EXPECT_TRUE(s.list().empty());
  fs::remove_all(dir);
}

TEST(AlertBackoff, DoublesUpToTheCeiling) {
  std::vector<double> got;
  for (int i = 0; i <= 8; ++i) got.push_back(backoff_delay_s(i, 5, 300));
  EXPECT_EQ(got, (std::vector<double>{0, 5, 10, 20, 40, 80, 160, 300, 300}));
  EXPECT_EQ(backoff_delay_s(1000, 5, 300), 300);
}

TEST(AlertRateLimit, AtMostPerHour) {
  RateLimiter r(3);
  EXPECT_TRUE(r.allow(0));
  EXPECT_TRUE(r.allow(1));
  EXPECT_TRUE(r.allow(2));
  EXPECT_FALSE(r.allow(3));
  EXPECT_FALSE(r.allow(1000));  // 1000 s refill 0.83 of a token
  EXPECT_TRUE(r.allow(1300));
}

RuleSet command_rules(const fs::path& script, const fs::path& out, bool fail) {
  std::ofstream(script) << "#!/bin/sh\n"
                        << (fail ? "exit 3\n" : "")
                        << "echo \"$TRAINMON_ALERT_ID $TRAINMON_ALERT_STATE $TRAINMON_ALERT_MESSAGE\" >> "
                        << out << "\n";
  fs::permissions(script, fs::perms::owner_all);
  RuleSet rs;
  rs.sinks["cmd"] =
      SinkConfig{.name = "cmd", .type = SinkType::command, .command = {script.string()}, .timeout_s = 10};
  rs.delivery.retry_initial_s = 0.05;
  rs.delivery.retry_max_s = 0.1;
  rs.delivery.finish_grace_s = 0;
  return rs;
}

std::vector<std::string> lines(const fs::path& p) {
  std::vector<std::string> out;
  std::ifstream in(p);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(AlertDelivery, FailedDeliveriesStaySpooledAndTheNextDeliveryReplaysThemInOrder) {
  auto dir = temp_dir("delivery");
  auto out = dir / "out.txt";
  {
    Delivery d(command_rules(dir / "sink.sh", out, true), (dir / "spool").string(), "test");
    for (int i = 0; i < 3; ++i) d.send(note(i), {"cmd"});
    d.finish();
    EXPECT_GE(d.stats()["cmd"].failures, 1);
  }
  EXPECT_EQ(Spool((dir / "spool" / "cmd").string()).list().size(), 3u);
  EXPECT_FALSE(fs::exists(out));
  {
    auto rs = command_rules(dir / "sink.sh", out, false);
    rs.delivery.finish_grace_s = 30;
    Delivery d(rs, (dir / "spool").string(), "test");
    d.send(note(3), {"cmd"});
    d.finish();
    EXPECT_EQ(d.stats()["cmd"].delivered, 4);
  }
  EXPECT_EQ(lines(out), (std::vector<std::string>{"id-0 firing message 0", "id-1 firing message 1",
                                                  "id-2 firing message 2", "id-3 firing message 3"}));
  EXPECT_TRUE(Spool((dir / "spool" / "cmd").string()).list().empty());
  fs::remove_all(dir);
}

TEST(AlertDelivery, RateLimitDropsAndCounts) {
  auto dir = temp_dir("rate");
  auto out = dir / "out.txt";
  auto rs = command_rules(dir / "sink.sh", out, false);
  rs.sinks["cmd"].rate_per_hour = 2;
  rs.delivery.finish_grace_s = 30;
  {
    Delivery d(rs, (dir / "spool").string(), "test");
    for (int i = 0; i < 5; ++i) d.send(note(i), {"cmd"});
    d.finish();
    EXPECT_EQ(d.stats()["cmd"].rate_limited, 3);
  }
  EXPECT_EQ(lines(out).size(), 2u);
  fs::remove_all(dir);
}

TEST(AlertSmtp, CredentialsFileMustBePrivate) {
  auto dir = temp_dir("cred");
  auto f = dir / "cred";
  std::ofstream(f) << "user:secret\n";
  SinkConfig c;
  c.credentials_file = f.string();
  ::unsetenv("TRAINMON_SMTP_USER");
  ::chmod(f.c_str(), 0644);
  auto r = smtp_credentials(c);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("refused"), std::string::npos);
  ::chmod(f.c_str(), 0600);
  r = smtp_credentials(c);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->first, "user");
  EXPECT_EQ(r->second, "secret");
  fs::remove_all(dir);
}

TEST(AlertBodies, WebhookAndEmail) {
  Notification n = note(1);
  auto j = nlohmann::json::parse(webhook_body(n, false));
  EXPECT_EQ(j["id"], "id-1");
  auto s = nlohmann::json::parse(webhook_body(n, true));
  EXPECT_EQ(s["text"], ":warning: [warning] FIRING r gpu0: message 1");
  SinkConfig c;
  c.from = "a@b";
  c.to = {"c@d", "e@f"};
  std::string m = email_message(n, c);
  EXPECT_NE(m.find("To: c@d, e@f\r\n"), std::string::npos);
  EXPECT_NE(m.find("Subject: [trainmon] warning r gpu0 on "), std::string::npos);
}

TEST(AlertBodies, NonAsciiSubjectIsEncodedWords) {
  EXPECT_EQ(encode_header_words("[trainmon] warning r gpu0 on vm"), "[trainmon] warning r gpu0 on vm");
  EXPECT_EQ(encode_header_words("显存"), "=?UTF-8?B?5pi+5a2Y?=");
  // 20 three-byte characters: two words, each of whole characters (15 = 45 bytes, then 5), folded
  std::string many;
  for (int i = 0; i < 20; ++i) many += "显";
  const std::string e = encode_header_words(many);
  const auto fold = e.find("\r\n ");
  ASSERT_NE(fold, std::string::npos);
  EXPECT_LE(fold, 75u);
  EXPECT_LE(e.size() - fold - 3, 75u);
  EXPECT_EQ(e.find("\r\n", fold + 1), std::string::npos);
  EXPECT_EQ(encode_header_words("a\r\nBcc: x@y \xe6"),
            "=?UTF-8?B?YSAgQmNjOiB4QHkg5g==?=");  // no header injection
}

}  // namespace
}  // namespace trainmon::alerts
