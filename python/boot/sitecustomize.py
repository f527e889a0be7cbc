# SPDX-License-Identifier: Apache-2.0
# trainmon's start-up hook: step timing for plain PyTorch with no change to the script
# (docs/python.md, "Zero code changes"). `trainmon run` puts a copy of this directory and of the
# trainmon package first on the child's PYTHONPATH and sets TRAINMON_AUTO=1; Python's `site`
# imports this module at every interpreter start. It imports and patches nothing then: with
# TRAINMON_AUTO=1 (and not TRAINMON_DISABLE=1) it adds one meta-path finder that answers only for
# "torch", and wraps the exec_module of torch's own loader so that trainmon._auto patches the
# DataLoader iterators and the optimizers right after torch/__init__.py has run. Then it runs the
# sitecustomize this one shadows (Debian ships /usr/lib/python3.11/sitecustomize.py), as if that
# one had been found first, so the interpreter's site stays as it was (its errors are reported by
# `site` as always). A failure of ours never reaches the program: one line on stderr at most.
# Kept small: with PYTHONDONTWRITEBYTECODE every interpreter compiles it again.
import os
import sys


def _say(e):
    try:
        from trainmon._i18n import trf  # only when there is something to say
    except Exception:
        def trf(text, *args):
            return text.format(*args)
    try:
        sys.stderr.write(trf("trainmon: zero-code step timing is off ({}: {})", type(e).__name__, e) + "\n")
    except Exception:
        pass


def _after(module):
    try:
        from trainmon import _auto
        _auto.after_torch_import(module)
    except Exception as e:
        _say(e)


class _TorchImportHook:
    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        try:
            finders = sys.meta_path
            if self in finders:
                finders.remove(self)
            for finder in finders:
                find = getattr(finder, "find_spec", None)
                spec = find(name, path, target) if find else None
                if spec is not None:
                    original = spec.loader.exec_module

                    def exec_module(module):
                        original(module)  # torch's own import; its errors are the program's
                        _after(module)

                    spec.loader.exec_module = exec_module  # this loader instance only
                    return spec
        except Exception as e:
            _say(e)
        return None


def _chain():
    here = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))
    rest = []
    for entry in sys.path:
        try:
            mine = os.path.realpath(os.path.abspath(entry or os.curdir)) == here
        except Exception:
            mine = False
        rest = [] if mine else rest + [entry]
    boot = sys.modules.get("_frozen_importlib")
    spec = sys.modules["_frozen_importlib_external"].PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = boot.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)


if os.environ.get("TRAINMON_AUTO") == "1" and os.environ.get("TRAINMON_DISABLE") != "1":
    try:
        if "torch" in sys.modules:
            _after(sys.modules["torch"])
        else:
            sys.meta_path.insert(0, _TorchImportHook())
    except Exception as _e:
        _say(_e)
_chain()
