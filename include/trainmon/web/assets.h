// SPDX-License-Identifier: Apache-2.0
// Files built into the binary (cmake/embed_assets.cmake): uPlot from npm (web/node_modules/uplot,
// installed by scripts/setup.sh) and everything under web/assets/ (the report's and the dashboard's
// scripts and styles). Reports inline them; `serve` serves them. Names are paths relative to
// web/assets/ ("dashboard/app.js"), and "uplot/uPlot.iife.min.js", "uplot/uPlot.min.css".
#pragma once

#include <span>
#include <string_view>

namespace trainmon::web {

struct Asset {
  std::string_view name;          ///< "dashboard/app.js"
  std::string_view content_type;  ///< "text/javascript; charset=utf-8", from the extension
  std::string_view data;          ///< the file's bytes (NUL-terminated one past the end)
};

/// Every embedded file, sorted by nothing in particular.
std::span<const Asset> all_assets() noexcept;
/// The asset called `name` (exact match, no normalisation), or nullptr.
const Asset* find_asset(std::string_view name) noexcept;

/// The Python package built in for `trainmon run`'s zero-code instrumentation (never served): every
/// python/trainmon/*.py as "trainmon/NAME.py" and the start-up hook python/boot/sitecustomize.py as
/// "sitecustomize.py" (runner/python_hook.h writes them out).
std::span<const Asset> python_package_files() noexcept;

}  // namespace trainmon::web
