// SPDX-License-Identifier: Apache-2.0
// The security rules of `trainmon serve`, as pure functions (unit-tested on literal strings):
// where it may listen, how a request proves it holds the token, which URL paths map to which
// built-in asset. The server (server.h) only applies them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

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

/// The built-in asset answering URL path `path` (already percent-decoded by the HTTP layer):
/// "/" and "/runs/<id>" -> the dashboard page, "/assets/<name>" -> that asset. nullptr for
/// anything else, including any path with "..", "\\", "//", a NUL or a '%' left after decoding.
/// Assets come only from the table built into the binary: no file system access.
const web::Asset* asset_for_path(std::string_view path);

}  // namespace trainmon::serve
