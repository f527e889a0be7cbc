// SPDX-License-Identifier: Apache-2.0
// The environment variables trainmon reads, for the man pages' ENVIRONMENT section (help_export.h).
// tests/e2e/test_package.py checks that every variable the sources read (getenv, env(...),
// CLI11's envname) is listed here.
#pragma once

#include <string_view>

namespace trainmon::cli {

struct EnvironmentDoc {
  std::string_view name;
  std::string_view meaning;  ///< `x` marks a literal
};
inline constexpr EnvironmentDoc kEnvironmentDocs[] = {
    {"TRAINMON_DB", "the run store when `--db` is not given (before `$XDG_STATE_HOME/trainmon/trainmon.db`)"},
    {"TRAINMON_NVML_LIBRARY",
     "the NVML library to load when `--nvml-library` is not given (else libnvidia-ml.so.1)"},
    {"NO_COLOR", "set and not empty: no colours, as `--no-color` (https://no-color.org)"},
    {"TERM", "whether the terminal can show colours and the live views (`dumb`: neither)"},
    {"COLUMNS", "the terminal width when it cannot be asked"},
    {"TRAINMON_LANG", "the language of messages when `--lang` is not given: zh_CN or en (docs/language.md)"},
    {"LANGUAGE",
     "its first entry: the language of messages after TRAINMON_LANG (ignored under the C locale)"},
    {"LC_ALL",
     "the character set (UTF-8 or ASCII drawing: then LC_CTYPE, then LANG) and the language of "
     "messages (then LC_MESSAGES, then LANG)"},
    {"LC_CTYPE", "see LC_ALL"},
    {"LC_MESSAGES", "see LC_ALL"},
    {"LANG", "see LC_ALL"},
    {"TRAINMON_LOCALEDIR", "a directory of message catalogues tried before the ones installed with trainmon"},
    {"XDG_STATE_HOME", "the default store and alert spool directory (default `~/.local/state`)"},
    {"XDG_CONFIG_HOME", "where `alerts` looks for alerts.toml (default `~/.config`)"},
    {"XDG_RUNTIME_DIR", "where the run state, the agent's snapshot file and the events socket live"},
    {"TMPDIR", "the events socket's directory when XDG_RUNTIME_DIR is unusable"},
    {"HOME", "the base of the XDG defaults above, and of `~` in alert rules"},
    {"PYTHONPATH", "kept, after trainmon's instrumentation directory, for the job `run` starts"},
    {"TRAINMON_POD_LOGS_ROOT",
     "the kubelet's pod log directories when `--pod-logs-root` is not given (default `/var/log/pods`): "
     "namespace, pod and container names of Kubernetes processes"},
    {"DCGM_EXPORTER_LISTEN", "the address of `serve` when `--listen` is not given (dcgm-exporter's name)"},
    {"TRAINMON_SMTP_USER", "the user name of the e-mail alert sink"},
    {"TRAINMON_SMTP_PASSWORD", "the password of the e-mail alert sink"},
};

}  // namespace trainmon::cli
