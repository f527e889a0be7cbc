// SPDX-License-Identifier: Apache-2.0
// The security rules of `trainmon serve`, as pure functions (unit-tested on literal strings):
// where it may listen, how a request proves it holds the token, which URL paths map to which
// built-in asset. The server (server.h) only applies them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainmon/web/assets.h"

namespace trainmon::serve {

/// A --listen value split into host and port: "127.0.0.1:9400", "[::1]:9400", "localhost:0",
/// ":9400" (host "0.0.0.0"). nullopt when malformed or the port is not 0..65535.
struct ListenAddress {
  std::string host;  ///< without brackets
  int port = 0;      ///< 0: any free port (the bound one is printed)
};
std::optional<ListenAddress> parse_listen(std::string_view text);

/// Whether `host` only reaches this machine: 127.0.0.0/8, ::1, "localhost".
bool is_loopback_host(std::string_view host);

/// The token in an "Authorization: Bearer <token>" header value; empty when none.
std::string_view bearer_token(std::string_view authorization);
/// The value of cookie `name` in a Cookie header value; empty when absent.
std::string_view cookie_value(std::string_view cookie_header, std::string_view name);
/// Compares in time independent of where the strings differ (no early exit on the first byte).
bool token_equals(std::string_view given, std::string_view expected);

/// The cookie the dashboard uses once a browser opened it with ?token=...
inline constexpr std::string_view kTokenCookie = "trainmon_token";

/// The token read from a --token-file: its first line, surrounding blanks removed. nullopt when the
/// file cannot be read or the token is empty (the error sentence in `error`).
std::optional<std::string> read_token_file(const std::string& path, std::string& error);

/// Tokens shorter than this draw a warning: 16 characters of `openssl rand -hex 16` are 64 bits,
/// the least OWASP's session-management guide accepts for a secret that may be guessed online.
inline constexpr std::size_t kMinTokenLength = 16;

/// Warnings about a token file and its token (empty when none): the file is readable or writable by
/// group or others (`mode`, st_mode bits), belongs to another user than `our_uid`, or the token is
/// shorter than kMinTokenLength. Each is one sentence naming `path` and what to do.
std::vector<std::string> token_file_warnings(const std::string& path, unsigned mode, unsigned owner_uid,
                                             unsigned our_uid, std::string_view token);

/// Which Host header values `serve` answers (DNS rebinding: a page on evil.example whose name was
/// made to point at 127.0.0.1 sends "Host: evil.example"; refusing it keeps the API from that page).
struct HostPolicy {
  bool any = false;                ///< "--allowed-host '*'": every Host (behind a proxy that checks it)
  bool any_ip_literal = false;     ///< listening on all addresses (0.0.0.0, ::): any IP literal
  bool loopback = false;           ///< listening on loopback: every 127.x.y.z literal
  std::vector<std::string> names;  ///< lower case, no port, no brackets, no trailing dot
};

/// The policy for `listen_host` (as in --listen): loopback addresses allow "localhost", every
/// 127.x.y.z and ::1; a specific address allows itself; a wildcard allows any IP literal and
/// `hostname` (this machine's name); `allowed` (--allowed-host, repeatable) adds names ("*": any).
HostPolicy host_policy_for(std::string_view listen_host, const std::vector<std::string>& allowed,
                           std::string_view hostname);

/// Whether a request with Host header `host` (as sent: "name", "name:port", "[::1]:9400"; empty
/// when the request had none, which no browser sends) is answered under `policy`.
bool host_allowed(const HostPolicy& policy, std::string_view host);

/// The built-in asset answering URL path `path` (already percent-decoded by the HTTP layer):
/// "/" and "/runs/<id>" -> the dashboard page, "/assets/<name>" -> that asset. nullptr for
/// anything else, including any path with "..", "\\", "//", a NUL or a '%' left after decoding.
/// Assets come only from the table built into the binary: no file system access.
const web::Asset* asset_for_path(std::string_view path);

}  // namespace trainmon::serve
