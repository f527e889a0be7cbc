// SPDX-License-Identifier: Apache-2.0
// The zero-code instrumentation of `trainmon run` (docs/python.md "Zero code changes"): the Python
// package built into the binary is written into the run's private directory, and the child gets that
// directory first on PYTHONPATH with TRAINMON_AUTO=1, so Python's start-up imports our
// sitecustomize.py, which times DataLoader batches and optimizer steps once the script imports torch.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "trainmon/core/error.h"

namespace trainmon::runner {

/// Environment variable that turns the start-up hook on ("1").
inline constexpr const char* kEnvAuto = "TRAINMON_AUTO";

/// Writes the built-in package (web::python_package_files()) under `dir`/py: py/sitecustomize.py and
/// py/trainmon/*.py (and the C speedups py/trainmon/_speedups.<EXT_SUFFIX>.so, 0700, when built),
/// directories 0700, files 0600, created new (O_EXCL, never through a link).
/// Returns the py directory. Errors (domain os): a file could not be created or written; the caller
/// then runs the job uninstrumented.
Expected<std::string> write_python_hook(const std::string& dir);

/// The child's PYTHONPATH and TRAINMON_AUTO for the hook in `py_dir`: `py_dir` first, then
/// `current_pythonpath` (the caller's, may be empty).
std::vector<std::pair<std::string, std::string>> python_hook_environment(
    const std::string& py_dir, const std::string& current_pythonpath);

}  // namespace trainmon::runner
