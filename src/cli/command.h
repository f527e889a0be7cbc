// SPDX-License-Identifier: Apache-2.0
// Subcommand registry: each src/cli/cmd_<name>.cpp registers itself with a static Registrar, adds its
// options to its own CLI::App and returns a runner. main.cpp parses and runs the selected one.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "trainmon/core/i18n.h"

namespace trainmon::cli {

/// Help and error text in the chosen language: i18n::tr() as the std::string CLI11 takes. main.cpp
/// chooses the language before any setup runs, so descriptions are translated where they are
/// defined; the man pages and completions come from a second, English definition (main.cpp).
inline std::string tr(std::string_view msgid) {
  return std::string(i18n::tr(msgid));
}

/// Options every subcommand sees (added to the top-level app by main.cpp).
struct GlobalOptions {
  std::string nvml_library;  ///< --nvml-library (else $TRAINMON_NVML_LIBRARY, else the system's)
  std::string proc_root = "/proc";
  std::string sys_root = "/sys";
  /// --pod-logs-root: the kubelet's pod log directory (empty: $TRAINMON_POD_LOGS_ROOT, else
  /// /var/log/pods; HostOptions::pod_logs_root).
  std::string pod_logs_root;
  std::string lang;  ///< --lang (else $TRAINMON_LANG, else the locale: core/i18n.h)
};

/// Returns the process exit status (see exit_codes.h).
using Runner = std::function<int()>;

/// Called once at start-up to add a subcommand. Store options in variables owned by the setup
/// function's closure (e.g. a std::shared_ptr<Options>) and return the runner.
using Setup = std::function<Runner(CLI::App& app, const GlobalOptions& global)>;

struct CommandSpec {
  std::string name;
  std::string description;  ///< English, marked N_(): main.cpp translates it for --help
  Setup setup;
  int order = 100;  ///< position in --help
};

std::vector<CommandSpec>& command_registry();

struct Registrar {
  explicit Registrar(CommandSpec spec) { command_registry().push_back(std::move(spec)); }
};

}  // namespace trainmon::cli
