// SPDX-License-Identifier: Apache-2.0
// The alert engine as a diagnose::TickObserver: `run`, `record` and `serve` create one with
// make_alert_observer() and hand it every tick (docs/alerts.md).
//
// Wiring a command (two lines):
//   alerts::add_alert_options(app, o->alerts);                      // --alerts FILE, --alerts-spool DIR
//   ... auto obs = alerts::make_alert_observer(o->alerts);          // then observers.push_back(obs->get())
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "trainmon/core/error.h"
#include "trainmon/core/i18n.h"
#include "trainmon/diagnose/tick_observer.h"

namespace trainmon::alerts {

/// What a command tells the alert engine.
struct AlertSetup {
  /// --alerts FILE; "" = $XDG_CONFIG_HOME/trainmon/alerts.toml (else ~/.config/...) when it
  /// exists, else the built-in defaults delivered to the log sink (stderr) only.
  std::string rules_path;
  /// --alerts-spool DIR; "" = the file's [delivery] spool_dir, else
  /// $XDG_STATE_HOME/trainmon/alerts-spool (else ~/.local/state/trainmon/alerts-spool).
  std::string spool_dir;
  std::string tool = "record";  ///< "run" / "record" / "serve": log lines start "trainmon <tool>:"
  bool quiet = false;           ///< the log sink stays silent (other sinks still deliver)
  /// The command prints live findings itself (`run`): with the built-in defaults the log sink then
  /// leaves the finding and Xid rules out so nothing is printed twice.
  bool findings_printed = false;
};

/// Adds --alerts FILE and --alerts-spool DIR to `app`, stored in `setup`.
inline void add_alert_options(CLI::App& app, AlertSetup& setup) {
  app.add_option(
      "--alerts", setup.rules_path,
      std::string(
          i18n::tr("Alert rules file (TOML, docs/alerts.md); default: $XDG_CONFIG_HOME/trainmon/alerts.toml "
                   "if it exists, else built-in rules to the log")));
  app.add_option("--alerts-spool", setup.spool_dir,
                 std::string(i18n::tr(
                     "Directory for undelivered alerts (default: $XDG_STATE_HOME/trainmon/alerts-spool)")));
}

/// Loads the rules and starts the delivery thread. The value is nullptr when there is nothing to
/// do (built-in defaults with a silent log sink). Error (domain usage) when the rules file is
/// missing or malformed: the message names the file and line ("alerts.toml:12: ...").
Expected<std::unique_ptr<diagnose::TickObserver>> make_alert_observer(const AlertSetup& setup);

}  // namespace trainmon::alerts
