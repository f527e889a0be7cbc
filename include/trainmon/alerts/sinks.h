// SPDX-License-Identifier: Apache-2.0
// Sinks: how one notification is delivered. Each deliver() call is one attempt with the sink's
// timeout; the Delivery threads retry, spool and rate-limit around it.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "trainmon/alerts/notification.h"
#include "trainmon/alerts/rules.h"
#include "trainmon/core/error.h"

namespace trainmon::alerts {

class Sink {
 public:
  virtual ~Sink() = default;
  /// One attempt. Error (domain os) with a one-line reason when not delivered.
  virtual Expected<void> deliver(const Notification& n) = 0;
};

/// The sink for `config` (log: one line to stderr prefixed "trainmon <tool>: alert: ").
std::unique_ptr<Sink> make_sink(const SinkConfig& config, const std::string& tool);

/// The body a webhook sink POSTs (JSON; {"text": ...} plus the fields when slack).
std::string webhook_body(const Notification& n, bool slack);
/// A header field's value as RFC 2047 encoded words ("=?UTF-8?B?...?=", at most 75 characters each,
/// whole UTF-8 characters, folded with CRLF + space) when it holds anything but printable ASCII (a
/// Chinese subject, a rule name from the user); printable ASCII is returned unchanged.
std::string encode_header_words(std::string_view value);
/// The RFC 5322 message an e-mail sink sends (headers + text body; the subject as encode_header_words).
std::string email_message(const Notification& n, const SinkConfig& config);
/// SMTP credentials: $TRAINMON_SMTP_USER / $TRAINMON_SMTP_PASSWORD, else `credentials_file`
/// ("user:password" on the first line). The file is refused unless it is a regular file owned by
/// this user with no group/other permission bits. Empty user: no authentication.
Expected<std::pair<std::string, std::string>> smtp_credentials(const SinkConfig& config);

}  // namespace trainmon::alerts
