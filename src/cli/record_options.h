// SPDX-License-Identifier: Apache-2.0
// The options `record` and `serve` share (both run recorder::run_record_loop): run name, interval,
// store, labels, retention, duration, diagnosis thresholds and alerts; parsed once here.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "trainmon/alerts/alert_observer.h"
#include "trainmon/recorder/record_loop.h"

namespace trainmon::cli {

struct RecordCliOptions {
  std::string name;
  std::string interval = "1";
  std::string db;
  std::vector<std::string> labels;
  std::string retention;
  std::string downsample_after = "1d";
  std::string duration;  ///< stop after this long (tests, benchmarks)
  std::vector<std::string> thresholds;
  bool quiet = false;
  alerts::AlertSetup alerts;  ///< --alerts FILE, --alerts-spool DIR (docs/alerts.md)
};

/// Adds the shared options to `app` (the run name defaults to `o.name`).
void add_record_options(CLI::App& app, RecordCliOptions& o);

/// The loop's options from the command line. On a bad value prints "trainmon <tool>: ..." on
/// stderr and returns nullopt (the caller exits with kExitUsage).
std::optional<recorder::RecordLoopOptions> record_loop_options(const RecordCliOptions& o,
                                                               const GlobalOptions& global,
                                                               std::string_view tool);

/// The alert engine for `tool` (nullptr: nothing to deliver). On a bad rules file prints
/// "trainmon <tool>: FILE:LINE: ..." and returns nullopt (the caller exits with kExitUsage).
std::optional<std::unique_ptr<diagnose::TickObserver>> alert_observer(const RecordCliOptions& o,
                                                                      std::string_view tool);

}  // namespace trainmon::cli
