# SPDX-License-Identifier: Apache-2.0
"""Shared by every e2e file (each one is its own pytest process and ctest entry).

Each process gets its own private XDG_RUNTIME_DIR: `trainmon run` writes its live state file
there and `top` / `serve` show every live run of the user they find in it, so two files running
side by side (ctest -j) would otherwise see each other's runs and findings. A test that needs
another one (or none) still sets or removes it in the environment it passes."""

import os
import shutil
import tempfile

_RUNTIME = tempfile.mkdtemp(prefix="trainmon-e2e-runtime-")
os.chmod(_RUNTIME, 0o700)
os.environ["XDG_RUNTIME_DIR"] = _RUNTIME


def pytest_unconfigure(config):
    shutil.rmtree(_RUNTIME, ignore_errors=True)
