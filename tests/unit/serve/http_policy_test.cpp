// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "trainmon/serve/http_policy.h"

using namespace trainmon::serve;

TEST(HttpPolicy, ParseListen) {
  auto a = parse_listen("127.0.0.1:9400");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 9400);
  a = parse_listen("[::1]:0");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "::1");
  EXPECT_EQ(a->port, 0);
  a = parse_listen(":9400");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "0.0.0.0");
  EXPECT_FALSE(parse_listen("127.0.0.1"));
  EXPECT_FALSE(parse_listen("127.0.0.1:99999"));
  EXPECT_FALSE(parse_listen("127.0.0.1:-1"));
  EXPECT_FALSE(parse_listen("::1:9400"));
  EXPECT_FALSE(parse_listen("[::1]9400"));
  EXPECT_FALSE(parse_listen("host:"));
}

TEST(HttpPolicy, Loopback) {
  EXPECT_TRUE(is_loopback_host("127.0.0.1"));
  EXPECT_TRUE(is_loopback_host("127.1.2.3"));
  EXPECT_TRUE(is_loopback_host("::1"));
  EXPECT_TRUE(is_loopback_host("localhost"));
  EXPECT_FALSE(is_loopback_host("0.0.0.0"));
  EXPECT_FALSE(is_loopback_host("::"));
  EXPECT_FALSE(is_loopback_host("10.0.0.1"));
  EXPECT_FALSE(is_loopback_host("127.0.0.1.evil.com"));
  EXPECT_FALSE(is_loopback_host("127.0.0.256"));
  EXPECT_FALSE(is_loopback_host("127.evil"));
}

TEST(HttpPolicy, TokenChecks) {
  EXPECT_EQ(bearer_token("Bearer abc123"), "abc123");
  EXPECT_EQ(bearer_token("bearer  abc123 "), "abc123");
  EXPECT_EQ(bearer_token("Basic abc123"), "");
  EXPECT_EQ(bearer_token("Bearer"), "");
  EXPECT_EQ(bearer_token(""), "");
  EXPECT_EQ(cookie_value("a=1; trainmon_token=xyz; b=2", kTokenCookie), "xyz");
  EXPECT_EQ(cookie_value("a=1", kTokenCookie), "");
  EXPECT_TRUE(token_equals("secret", "secret"));
  EXPECT_FALSE(token_equals("secreT", "secret"));
  EXPECT_FALSE(token_equals("secret2", "secret"));
  EXPECT_FALSE(token_equals("", "secret"));
  EXPECT_FALSE(token_equals("", "")) << "an empty expected token never matches";
}

TEST(HttpPolicy, TokenFile) {
  auto dir = std::filesystem::temp_directory_path() / ("trainmon_token_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string err;
  { std::ofstream(dir / "t") << "  s3cret  \nsecond line\n"; }
  auto t = read_token_file((dir / "t").string(), err);
  ASSERT_TRUE(t) << err;
  EXPECT_EQ(*t, "s3cret");
  { std::ofstream(dir / "empty") << "\n"; }
  EXPECT_FALSE(read_token_file((dir / "empty").string(), err));
  EXPECT_NE(err.find("empty"), std::string::npos);
  EXPECT_FALSE(read_token_file((dir / "missing").string(), err));
  std::filesystem::remove_all(dir);
}

TEST(HttpPolicy, AssetPaths) {
  const auto* index = asset_for_path("/");
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index->name, "dashboard/index.html");
  EXPECT_EQ(asset_for_path("/runs/12"), index);
  ASSERT_NE(asset_for_path("/assets/dashboard/app.js"), nullptr);
  ASSERT_NE(asset_for_path("/assets/uplot/uPlot.iife.min.js"), nullptr);
  EXPECT_EQ(asset_for_path("/runs/12x"), nullptr);
  EXPECT_EQ(asset_for_path("/assets/../CMakeLists.txt"), nullptr);
  EXPECT_EQ(asset_for_path("/assets/dashboard/../dashboard/app.js"), nullptr);
  EXPECT_EQ(asset_for_path("/assets/%2e%2e/etc/passwd"), nullptr);
  EXPECT_EQ(asset_for_path("/assets//etc/passwd"), nullptr);
  EXPECT_EQ(asset_for_path("/assets/..\\..\\etc\\passwd"), nullptr);
  EXPECT_EQ(asset_for_path(std::string_view("/assets/dashboard/app.js\0x", 26)), nullptr);
  EXPECT_EQ(asset_for_path("/etc/passwd"), nullptr);
  EXPECT_EQ(asset_for_path("/assets/"), nullptr);
  EXPECT_EQ(asset_for_path("/assets/dashboard"), nullptr);
}

// DNS rebinding: a page on evil.example whose name now points at 127.0.0.1 sends its own name.
TEST(HttpPolicy, HostHeaderMustNameThisServer) {
  const auto lo = host_policy_for("127.0.0.1", {}, "gpu-node-7");
  EXPECT_TRUE(host_allowed(lo, "127.0.0.1:9400"));
  EXPECT_TRUE(host_allowed(lo, "localhost:9400"));
  EXPECT_TRUE(host_allowed(lo, "LOCALHOST."));
  EXPECT_TRUE(host_allowed(lo, "[::1]:9400"));
  EXPECT_TRUE(host_allowed(lo, "127.0.0.2"));
  EXPECT_TRUE(host_allowed(lo, "")) << "no Host: not a browser";
  EXPECT_FALSE(host_allowed(lo, "evil.example"));
  EXPECT_FALSE(host_allowed(lo, "evil.example:9400"));
  EXPECT_FALSE(host_allowed(lo, "127.0.0.1.evil.example"));
  EXPECT_FALSE(host_allowed(lo, "localhost.evil.example"));
  EXPECT_FALSE(host_allowed(lo, "gpu-node-7")) << "not on a loopback listener";
  EXPECT_FALSE(host_allowed(lo, "127.0.0.1:x"));
  EXPECT_FALSE(host_allowed(lo, "[::1"));

  const auto named = host_policy_for("127.0.0.1", {"Dash.Example.org", "other:8080"}, "");
  EXPECT_TRUE(host_allowed(named, "dash.example.org"));
  EXPECT_TRUE(host_allowed(named, "other"));
  EXPECT_FALSE(host_allowed(named, "evil.example"));

  const auto any = host_policy_for("0.0.0.0", {}, "gpu-node-7");
  EXPECT_TRUE(host_allowed(any, "10.1.2.3:9400"));
  EXPECT_TRUE(host_allowed(any, "[fe80::1]:9400"));
  EXPECT_TRUE(host_allowed(any, "gpu-node-7:9400"));
  EXPECT_FALSE(host_allowed(any, "evil.example"));

  const auto one = host_policy_for("10.0.0.5", {}, "gpu-node-7");
  EXPECT_TRUE(host_allowed(one, "10.0.0.5:9400"));
  EXPECT_FALSE(host_allowed(one, "10.0.0.6"));
  EXPECT_FALSE(host_allowed(one, "evil.example"));

  const auto v6 = host_policy_for("::1", {}, "");
  EXPECT_TRUE(host_allowed(v6, "[::1]:9400"));
  EXPECT_FALSE(host_allowed(v6, "evil.example"));

  EXPECT_TRUE(host_allowed(host_policy_for("127.0.0.1", {"*"}, ""), "anything.example"));
}

TEST(HttpPolicy, TokenFileWarnings) {
  EXPECT_TRUE(token_file_warnings("/t", 0600, 1000, 1000, "0123456789abcdef0123").empty());
  auto w = token_file_warnings("/t", 0644, 1000, 1000, "0123456789abcdef0123");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("mode 644"), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("chmod 600"), std::string::npos);
  w = token_file_warnings("/t", 0600, 0, 1000, "0123456789abcdef0123");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("another user"), std::string::npos);
  w = token_file_warnings("/t", 0660, 1000, 1000, "secret");
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NE(w[1].find("6 characters"), std::string::npos) << w[1];
  EXPECT_EQ(token_file_warnings("/t", 0400, 1, 1, std::string(kMinTokenLength, 'x')).size(), 0u);
  EXPECT_EQ(token_file_warnings("/t", 0400, 1, 1, std::string(kMinTokenLength - 1, 'x')).size(), 1u);
}
