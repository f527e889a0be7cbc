// SPDX-License-Identifier: Apache-2.0
// Spool: notifications waiting for one sink, one JSON file each under <dir>/<sink>/, named so that
// the lexical order is the order they were queued. Written atomically (temporary file, fsync,
// rename), removed once delivered. A later trainmon with the same spool directory and sink name
// delivers what an earlier one left.
#pragma once

#include <string>
#include <vector>

#include "trainmon/alerts/notification.h"
#include "trainmon/core/error.h"

namespace trainmon::alerts {

class Spool {
 public:
  /// `dir` is the sink's own directory (created with mode 0700 on first write).
  explicit Spool(std::string dir);

  /// Writes `n`; returns the file's path.
  Expected<std::string> put(const Notification& n);
  /// Spooled files, oldest first (full paths). Empty when the directory does not exist.
  [[nodiscard]] std::vector<std::string> list() const;
  /// Reads one spooled file; Error when unreadable or not a notification (the caller moves it
  /// aside with quarantine()).
  static Expected<Notification> read(const std::string& path);
  static bool remove(const std::string& path);
  /// Renames a bad file to <name>.bad so it no longer blocks the queue.
  static void quarantine(const std::string& path);

  [[nodiscard]] const std::string& dir() const noexcept { return dir_; }

 private:
  std::string dir_;
};

}  // namespace trainmon::alerts
