# SPDX-License-Identifier: Apache-2.0
"""trainmon's start-up hook: step timing for plain PyTorch with no change to the script.

``trainmon run`` puts a copy of this directory and of the trainmon package first on the child's
PYTHONPATH and sets TRAINMON_AUTO=1; Python's ``site`` then imports this module at start-up
(docs/python.md, "Zero code changes"). It imports nothing and patches nothing at start-up: it adds
one meta-path finder that waits for ``import torch``; when torch's own module has finished
executing, ``trainmon._auto`` patches the DataLoader iterators and the optimizers. Then the
``sitecustomize`` this one shadows (Debian ships /usr/lib/python3.11/sitecustomize.py) runs, so the
interpreter's site is as it was. TRAINMON_DISABLE=1, or TRAINMON_AUTO unset, leaves only that chaining.
A failure of ours never reaches the user's program (at most one line on stderr).
"""

import os
import sys


class _TorchImportHook:
    """A meta-path finder that answers only for "torch": it asks the finders after it for the
    real spec and wraps that spec's loader's exec_module so that trainmon._auto runs right after
    torch/__init__.py completes. It removes itself once torch is found."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        try:
            finders = sys.meta_path
            try:
                rest = finders[finders.index(self) + 1:]
                finders.remove(self)
            except ValueError:
                rest = [f for f in finders if f is not self]
            for finder in rest:
                find = getattr(finder, "find_spec", None)
                spec = find(name, path, target) if find is not None else None
                if spec is not None:
                    break
            else:
                return None
            loader = spec.loader
            original = getattr(loader, "exec_module", None)
            if original is None:
                return spec

            def exec_module(module):
                original(module)  # torch's own import; its errors are the user's
                try:
                    from trainmon import _auto
                    _auto.after_torch_import(module)
                except Exception as e:
                    _say(e)

            try:
                loader.exec_module = exec_module  # this loader instance only (its class is shared)
            except Exception:
                return spec  # a loader that refuses attributes: no timing, torch as it was
            return spec
        except Exception as e:
            _say(e)
            return None


def _say(error):
    try:
        sys.stderr.write("trainmon: zero-code step timing is off (%s: %s)\n" % (type(error).__name__, error))
    except Exception:
        pass


def _install():
    env = os.environ
    if env.get("TRAINMON_AUTO") != "1" or env.get("TRAINMON_DISABLE") == "1":
        return
    if "torch" in sys.modules:  # already imported (embedded interpreters): patch it now
        try:
            from trainmon import _auto
            _auto.after_torch_import(sys.modules["torch"])
        except Exception as e:
            _say(e)
        return
    sys.meta_path.insert(0, _TorchImportHook())


def _chain():
    """Run the next sitecustomize on sys.path after our directory, as if it had been found first,
    and leave it in sys.modules["sitecustomize"]. Its own errors propagate (site reports them as it
    always does)."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        here_real = os.path.realpath(here)
    except Exception:
        here_real = here
    rest, seen = [], False
    for entry in sys.path:
        try:
            d = os.path.abspath(entry or os.curdir)
            mine = d == here or os.path.realpath(d) == here_real
        except Exception:
            continue
        if mine:
            seen = True
            rest = []  # only what comes after our (last) entry
            continue
        rest.append(entry)
    if not seen:
        rest = [e for e in sys.path if e and os.path.abspath(e) != here]
    bootstrap = sys.modules.get("_frozen_importlib")
    external = sys.modules.get("_frozen_importlib_external")
    if bootstrap is None or external is None:
        import importlib.machinery as external  # noqa: F811 (frozen modules missing: unusual builds)
        import importlib.util as bootstrap  # noqa: F811
    spec = external.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = bootstrap.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


try:
    _install()
except Exception as _e:  # never in the user's way
    _say(_e)
_chain()
