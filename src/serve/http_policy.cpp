// SPDX-License-Identifier: Apache-2.0
#include "trainmon/serve/http_policy.h"

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
