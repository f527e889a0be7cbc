# SPDX-License-Identifier: Apache-2.0
"""trainmon's start-up hook: `trainmon run` puts this directory first on the child's PYTHONPATH.

With TRAINMON_AUTO=1 it asks trainmon._auto to time PyTorch by itself (docs/python.md "Zero code
changes"); then it runs the sitecustomize this one shadows, so the interpreter's own site set-up
is unchanged. Nothing here may fail the user's program.
"""

import os
import sys


def _chain():
    """Execute the next sitecustomize on sys.path after our own directory (e.g. Debian's)."""
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        try:
            if not entry or os.path.abspath(entry) == here:
                continue
            path = os.path.join(entry, "sitecustomize.py")
            if os.path.isfile(path):
                with open(path, "rb") as f:
                    code = compile(f.read(), path, "exec")
                exec(code, {"__name__": "sitecustomize", "__file__": path})
                return
        except Exception:
            return


try:
    if os.environ.get("TRAINMON_AUTO") == "1" and os.environ.get("TRAINMON_DISABLE") != "1":
        from trainmon import _auto  # noqa: F401  (installs the post-import hook)
        _auto.install()
except Exception:
    pass
_chain()
