// SPDX-License-Identifier: Apache-2.0
#include "trainmon/serve/http_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>

namespace trainmon::serve {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

std::optional<ListenAddress> parse_listen(std::string_view text) {
  ListenAddress a;
  std::string_view port;
  if (text.starts_with('[')) {
    auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return std::nullopt;
    a.host = std::string(text.substr(1, close - 1));
    port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return std::nullopt;
    a.host = std::string(text.substr(0, colon));
    if (a.host.find(':') != std::string::npos) return std::nullopt;  // IPv6 needs brackets
    port = text.substr(colon + 1);
  }
  if (a.host.empty()) a.host = "0.0.0.0";
  if (!all_digits(port) || port.size() > 5) return std::nullopt;
  int p = 0;
  std::from_chars(port.data(), port.data() + port.size(), p);
  if (p > 65535) return std::nullopt;
  a.port = p;
  return a;
}

bool is_loopback_host(std::string_view host) {
  if (host == "localhost" || host == "::1") return true;
  if (!host.starts_with("127.")) return false;
  // a dotted quad 127.x.y.z
  int parts = 0;
  std::size_t start = 0;
  while (start <= host.size()) {
    auto dot = host.find('.', start);
    auto part = host.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (!all_digits(part) || part.size() > 3) return false;
    int v = 0;
    std::from_chars(part.data(), part.data() + part.size(), v);
    if (v > 255) return false;
    ++parts;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts == 4;
}

std::string_view bearer_token(std::string_view authorization) {
  authorization = trim(authorization);
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.size() <= kBearer.size()) return {};
  for (std::size_t i = 0; i < kBearer.size(); ++i) {  // the scheme is case-insensitive (RFC 7235)
    char c = authorization[i];
    char k = kBearer[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (k >= 'A' && k <= 'Z') k = static_cast<char>(k - 'A' + 'a');
    if (c != k) return {};
  }
  return trim(authorization.substr(kBearer.size()));
}

std::string_view cookie_value(std::string_view cookie_header, std::string_view name) {
  while (!cookie_header.empty()) {
    auto semi = cookie_header.find(';');
    auto item = trim(cookie_header.substr(0, semi));
    auto eq = item.find('=');
    if (eq != std::string_view::npos && trim(item.substr(0, eq)) == name) return trim(item.substr(eq + 1));
    if (semi == std::string_view::npos) break;
    cookie_header.remove_prefix(semi + 1);
  }
  return {};
}

bool token_equals(std::string_view given, std::string_view expected) {
  if (expected.empty()) return false;
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < given.size(); ++i) {
    diff |= static_cast<unsigned char>(given[i] ^ expected[i % expected.size()]);
  }
  return diff == 0;
}

std::optional<std::string> read_token_file(const std::string& path, std::string& error) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    error = "the token file '" + path + "' is a directory";
    return std::nullopt;
  }
  std::ifstream in(path);
  if (!in) {
    error = "cannot read the token file '" + path + "'";
    return std::nullopt;
  }
  std::string line;
  std::getline(in, line);
  auto t = std::string(trim(line));
  if (t.empty()) {
    error = "the token file '" + path + "' is empty (its first line is the token)";
    return std::nullopt;
  }
  return t;
}

std::vector<std::string> token_file_warnings(const std::string& path, unsigned mode, unsigned owner_uid,
                                             unsigned our_uid, std::string_view token) {
  std::vector<std::string> out;
  if (mode & 0077) {
    out.push_back("the token file '" + path + "' can be read or written by other users (mode " +
                  std::to_string((mode >> 6) & 7) + std::to_string((mode >> 3) & 7) +
                  std::to_string(mode & 7) + "): chmod 600 '" + path + "'");
  }
  if (owner_uid != our_uid) {
    out.push_back("the token file '" + path + "' belongs to another user (uid " + std::to_string(owner_uid) +
                  "), who can read and change the token");
  }
  if (token.size() < kMinTokenLength) {
    out.push_back("the token is " + std::to_string(token.size()) + " characters long; one shorter than " +
                  std::to_string(kMinTokenLength) + " can be guessed (make one with `openssl rand -hex 16`)");
  }
  return out;
}

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool is_ipv4_literal(std::string_view s) {
  int parts = 0;
  std::size_t start = 0;
  while (start <= s.size()) {
    auto dot = s.find('.', start);
    auto part = s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (!all_digits(part) || part.size() > 3) return false;
    int v = 0;
    std::from_chars(part.data(), part.data() + part.size(), v);
    if (v > 255) return false;
    ++parts;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts == 4;
}

bool is_ipv6_literal(std::string_view s) {
  if (s.find(':') == std::string_view::npos) return false;
  for (char c : s) {
    const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (!hex && c != ':' && c != '.') return false;
  }
  return true;
}

/// The host part of a Host header value, lower case, without port, brackets or trailing dot; empty
/// when malformed.
std::string host_part(std::string_view host) {
  host = trim(host);
  std::string_view name;
  if (host.starts_with('[')) {
    const auto close = host.find(']');
    if (close == std::string_view::npos) return {};
    name = host.substr(1, close - 1);
    const auto rest = host.substr(close + 1);
    if (!rest.empty() && !(rest.front() == ':' && all_digits(rest.substr(1)))) return {};
  } else {
    const auto colon = host.find(':');
    name = host.substr(0, colon);
    if (colon != std::string_view::npos && !all_digits(host.substr(colon + 1))) return {};
  }
  while (name.ends_with('.')) name.remove_suffix(1);
  return lower(name);
}

}  // namespace

HostPolicy host_policy_for(std::string_view listen_host, const std::vector<std::string>& allowed,
                           std::string_view hostname) {
  HostPolicy p;
  const std::string listen =
      host_part(listen_host.find(':') != std::string_view::npos && !listen_host.starts_with('[')
                    ? fmt::format("[{}]", listen_host)
                    : std::string(listen_host));
  if (listen == "0.0.0.0" || listen == "::" || listen.empty()) {
    p.any_ip_literal = true;
    p.names.push_back("localhost");
    if (!hostname.empty()) p.names.push_back(lower(hostname));
  } else if (is_loopback_host(listen_host) || listen == "localhost") {
    p.loopback = true;
    p.names = {"localhost", "::1"};
  }
  if (!listen.empty() && std::find(p.names.begin(), p.names.end(), listen) == p.names.end())
    p.names.push_back(listen);
  for (const auto& a : allowed) {
    if (a == "*") {
      p.any = true;
      continue;
    }
    auto n = host_part(a);
    if (!n.empty()) p.names.push_back(std::move(n));
  }
  return p;
}

bool host_allowed(const HostPolicy& policy, std::string_view host) {
  if (policy.any || trim(host).empty()) return true;
  const std::string name = host_part(host);
  if (name.empty()) return false;
  if (std::find(policy.names.begin(), policy.names.end(), name) != policy.names.end()) return true;
  // Loopback listeners: every 127.x.y.z reaches them; a rebinding page always sends a name.
  if (policy.loopback && name.starts_with("127.") && is_ipv4_literal(name)) return true;
  if (policy.any_ip_literal && (is_ipv4_literal(name) || is_ipv6_literal(name))) return true;
  return false;
}

const web::Asset* asset_for_path(std::string_view path) {
  if (path.find("..") != std::string_view::npos || path.find('\\') != std::string_view::npos ||
      path.find("//") != std::string_view::npos || path.find('%') != std::string_view::npos ||
      path.find('\0') != std::string_view::npos) {
    return nullptr;
  }
  if (path == "/" || path == "/index.html") return web::find_asset("dashboard/index.html");
  constexpr std::string_view kRuns = "/runs/";
  if (path.starts_with(kRuns) && all_digits(path.substr(kRuns.size()))) {
    return web::find_asset("dashboard/index.html");
  }
  constexpr std::string_view kAssets = "/assets/";
  if (path.starts_with(kAssets)) return web::find_asset(path.substr(kAssets.size()));
  return nullptr;
}

}  // namespace trainmon::serve
