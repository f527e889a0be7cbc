// SPDX-License-Identifier: Apache-2.0
// The scrolling-monitor loop shared by `trainmon dmon` and `trainmon pmon`: options, sampling every
// -d seconds until -c samples or Ctrl-C, the header repeated where nvidia-smi repeats it, -f FILE,
// exit statuses.
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <expected>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "cli/command.h"
#include "trainmon/export/monitor_format.h"
#include "trainmon/sampler/sampler.h"

namespace trainmon::cli {

/// What differs between dmon and pmon.
struct MonitorSpec {
  std::string name;         ///< "dmon" / "pmon" (used in messages)
  std::string groups_help;  ///< help text of -s
  std::string json_help;    ///< help text of --json
  std::function<std::expected<std::string, std::string>(const std::string&)> parse_groups;
  /// Adjusts the sampler for this monitor (which collectors are needed for the chosen groups).
  std::function<void(SamplerOptions&, const exp::MonitorOptions&)> configure;
  std::function<std::string(const exp::MonitorOptions&)> header;
  /// Text view: repeat the header after this many rows (pmon; 0: every header_every_samples samples).
  long header_every_rows = 0;
  long header_every_samples = exp::kDmonHeaderEverySamples;
  /// Rows for one sample; `prev` is the previous snapshot (nullptr on the first).
  std::function<std::string(const exp::MonitorOptions&, const Snapshot& snap, const Snapshot* prev,
                            std::span<const std::size_t> order)>
      rows;
  /// Lines for stderr about this sample (e.g. pmon's "GPU 0: processes unknown: ..."), each said
  /// once while it stays the same. Empty function: none.
  std::function<std::vector<std::string>(const Snapshot& snap, std::span<const std::size_t> order)> warnings;
};

/// Adds the shared options (-s -d -c -i -o -f --format --json --csv) to `app` and returns its runner.
Runner setup_monitor(CLI::App& app, const GlobalOptions& global, MonitorSpec spec);

}  // namespace trainmon::cli
