# SPDX-License-Identifier: Apache-2.0
"""The zero-code hook's patch, applied right after the training script's own ``import torch``
completes (python/boot/sitecustomize.py arranges that under ``trainmon run``; docs/python.md,
"Zero code changes").

It times every DataLoader iterator's next() (and DataLoader.__iter__, which starts the workers) and
marks a step at each optimizer step: ``torch.optim.optimizer.register_optimizer_step_post_hook`` on
torch >= 2.0; on older torch (1.13 has no global hook) each Optimizer subclass's ``step`` is wrapped
once, when its first instance is built. torch 1.13's ``Optimizer._hook_for_profile`` wraps
``cls.step`` too and skips classes whose ``step`` has a ``hooked`` attribute: functools.wraps copies
that attribute onto our wrapper, so its behaviour is kept, and ours carries ``_trainmon_step`` so it
is never wrapped twice. A step() that calls super().step() is counted once (outermost call).
Events go out through one Monitor (framework "torch", never printing) while no explicit
integration outranks it (_timing levels). Nothing here raises into the training code.
"""

import atexit
import functools
import importlib
import os
import sys

from . import _collectives, _timing
from ._i18n import trf
from ._monitor import Monitor

__all__ = ["install", "installed"]

_mono = _timing._mono
_tls = _timing._tls
_T = _timing._timer  # the process's timer (one object for the life of the process)
_AUTO, _LOOP = _timing.AUTO, _timing.LOOP
_state = {"installed": False, "monitor": None, "how": None, "collectives": None}
_cuda_state = _collectives._cuda


def installed():
    """How steps are marked ("post_hook" or "wrap_step"), or None when not installed."""
    return _state["how"] if _state["installed"] else None


def _report_step(now):
    """A batch_end with the timing window, at most batch_events_per_s times a second."""
    mon = _state["monitor"]
    T = _T
    if mon is None or mon.client is None or T.level != _timing.AUTO:
        # No event to send: look again in a second, and keep the journal bounded meanwhile (a loop
        # with an optimizer and no DataLoader appends only here).
        _tls.report_at = now + 1.0
        if len(T.journal) > _timing._JOURNAL_CAP:
            T.drain()
        return
    mon._next_batch_event = now + mon.batch_gap_s
    _tls.report_at = mon._next_batch_event
    steps = mon._window()  # drains the journal: epoch and step count are current after it
    if steps is None and not T.steps:
        return
    mon.send("batch_end", epoch=T.current_epoch(), step=T.steps, steps=steps)


def _on_optimizer_step(optimizer):
    """An optimizer finished step() (torch >= 2.0's global post hook)."""
    T = _T
    if T.level != _AUTO:
        return
    t = _mono()
    hot = _tls
    timing = _cuda_state["timing"]
    if timing is not None and timing.pending:
        _collectives.poll_cuda()
    T.journal.append((_timing.J_OPT, id(optimizer), t, hot.comm))
    if hot.phase != "compute":
        hot.phase = "compute"
        hot.phase_mt = t
    if t >= hot.report_at:
        _report_step(t)


def _epoch_done(epoch):
    mon = _state["monitor"]
    if mon is not None and _T.level == _AUTO:
        mon.epoch_end(epoch=epoch)


def _loader_key(obj, attr):
    try:
        return id(getattr(obj, attr))
    except Exception:
        return id(obj)


def _patch_dataloader(torch):
    dl = sys.modules.get("torch.utils.data.dataloader") or importlib.import_module("torch.utils.data.dataloader")
    base = dl._BaseDataLoaderIter
    orig_next = base.__next__
    if getattr(orig_next, "_trainmon", False):
        return

    T, nest, mono, loop_level = _T, _tls, _mono, _LOOP
    J_BATCH, cap, fast_samples = _timing.J_BATCH, _timing._JOURNAL_CAP, _timing.fast_samples
    journal = T.journal
    ja = journal.append  # the journal is one list for the life of the process
    _timing._learn_torch()
    Tensor = _timing._Tensor  # with it, len() of a tensor through the C slot (_timing.fast_samples)
    tensor_len = _timing._tensor_len

    # Per batch this touches the hot object (nest), the journal and what it appends, no more: the
    # phase goes to "compute" after next() (the drain sets "idle" for a loader that is not training).
    @functools.wraps(orig_next)
    def __next__(self):
        if nest.depth or nest.level > loop_level:
            return orig_next(self)
        nest.phase = "data"
        nest.phase_mt = t0 = mono()
        nest.depth = 1
        try:
            batch = orig_next(self)
        except StopIteration:
            nest.depth = 0
            try:
                epoch = T.loader_stop(id(self._dataset), t0, mono())
                if epoch is not None:
                    _epoch_done(epoch)
            except Exception:
                pass
            raise
        except BaseException:
            nest.depth = 0
            raise
        nest.depth = 0
        try:
            t1 = mono()
            key = id(self._dataset)
            # samples: timing.fast_samples, with a torch tensor (alone or first in a list / tuple)
            # read here (this runs per batch)
            tb = type(batch)
            x = batch[0] if (tb is list or tb is tuple) and batch else batch
            if type(x) is Tensor:
                try:
                    n = tensor_len(x)
                    if not 0 < n <= 10_000_000:
                        n = -1
                except Exception:  # a 0-d tensor (shape[0])
                    n = -1
            else:
                n = fast_samples(batch)
            ja((J_BATCH, key, id(self), t0, t1, n))
            nest.phase = "compute"
            nest.phase_mt = t1
            if len(journal) > cap:
                T.drain()
        except Exception:
            pass
        return batch

    __next__._trainmon = True
    loader_cls = dl.DataLoader
    orig_iter = loader_cls.__iter__

    @functools.wraps(orig_iter)
    def __iter__(self):
        T = _T
        if T.level > _timing.LOOP or _tls.depth:
            return orig_iter(self)
        key = _loader_key(self, "dataset")
        t0 = _mono()
        T.phase = "data"
        T.phase_mt = t0
        _tls.depth = 1
        try:
            it = orig_iter(self)
        finally:
            _tls.depth = 0
        try:
            T.journal.append((_timing.J_ITER, key, t0, _mono()))
        except Exception:
            pass
        return it

    __iter__._trainmon = True
    base.__next__ = __next__
    if not getattr(orig_iter, "_trainmon", False):
        loader_cls.__iter__ = __iter__


def _wrap_step(step):
    T, nest, mono, auto, J_OPT = _T, _tls, _mono, _AUTO, _timing.J_OPT
    cuda_state = _cuda_state
    ja = T.journal.append  # the journal is one list for the life of the process

    @functools.wraps(step)  # copies torch 1.13's `hooked` marker: _hook_for_profile stays as it was
    def step_wrapper(self, *args, **kwargs):
        if nest.opt_depth:  # inside another step(): super().step() of a subclass
            return step(self, *args, **kwargs)
        nest.opt_depth = 1
        if nest.level == auto:
            nest.phase = "optimizer"
            nest.phase_mt = mono()
        try:
            # the usual call, step() or step(closure): a plain call (no tuple and dict rebuilt)
            if kwargs:
                result = step(self, *args, **kwargs)
            elif args:
                result = step(self, *args)
            else:
                result = step(self)
        finally:
            nest.opt_depth = 0
        if nest.level == auto:
            try:
                t = mono()
                timing = cuda_state["timing"]
                if timing is not None and timing.pending:
                    _collectives.poll_cuda()
                ja((J_OPT, id(self), t, nest.comm))
                if nest.phase != "compute":
                    nest.phase = "compute"
                    nest.phase_mt = t
                if t >= nest.report_at:
                    _report_step(t)
            except Exception:
                pass
        return result

    step_wrapper._trainmon_step = True
    return step_wrapper


def _wrap_steps_of(cls, base):
    for klass in cls.__mro__:
        if klass is base or klass is object:
            continue
        step = klass.__dict__.get("step")
        if step is None or not callable(step) or getattr(step, "_trainmon_step", False):
            continue
        setattr(klass, "step", _wrap_step(step))


def _patch_optimizer(torch):
    # torch.optim's __init__ deletes its submodules' names; the module itself is loaded.
    optimizer_mod = sys.modules.get("torch.optim.optimizer") or importlib.import_module("torch.optim.optimizer")
    register = getattr(optimizer_mod, "register_optimizer_step_post_hook", None)
    register_pre = getattr(optimizer_mod, "register_optimizer_step_pre_hook", None)
    if callable(register):
        if callable(register_pre):
            def pre_hook(optimizer, args, kwargs):
                hot = _tls
                if hot.level == _AUTO:
                    hot.phase = "optimizer"
                    hot.phase_mt = _mono()
            register_pre(pre_hook)

        def post_hook(optimizer, args, kwargs):
            try:
                _on_optimizer_step(optimizer)
            except Exception:
                pass
        register(post_hook)
        return "post_hook"
    base = torch.optim.Optimizer
    orig_init = base.__init__
    if getattr(orig_init, "_trainmon", False):
        return "wrap_step"

    @functools.wraps(orig_init)
    def __init__(self, *args, **kwargs):
        orig_init(self, *args, **kwargs)
        try:
            _wrap_steps_of(type(self), base)
        except Exception:
            pass

    __init__._trainmon = True
    base.__init__ = __init__
    return "wrap_step"


def _at_exit():
    try:
        T = _T
        mon = _state["monitor"]
        if mon is not None and T.level == _AUTO and T.steps and not T.ended:
            mon.train_end(epoch=T.current_epoch(), step=T.steps)
    except Exception:
        pass


def install(torch, env=None):
    """Patch ``torch`` (the imported module) for step timing; once per process. Returns True when
    installed. Does nothing without TRAINMON_EVENTS_SOCKET or with TRAINMON_DISABLE=1. Raises on
    an unexpected torch (the caller, sitecustomize, turns that into one line on stderr)."""
    env = os.environ if env is None else env
    if _state["installed"]:
        return True
    if env.get("TRAINMON_DISABLE") == "1" or not env.get("TRAINMON_EVENTS_SOCKET"):
        return False
    mon = Monitor(interval=None, framework="torch", start_agent=False, env=env)
    mon.report_level = _timing.AUTO
    _tls.report_at = 0.0
    _patch_dataloader(torch)
    how = _patch_optimizer(torch)
    coll = None
    if env.get("TRAINMON_NO_COLLECTIVES", "") in ("", "0"):
        try:
            coll = _collectives.install(torch, ddp=env.get("TRAINMON_NO_DDP_HOOK", "") in ("", "0"))
        except Exception as e:
            try:
                sys.stderr.write(trf("trainmon: collective timing is off ({}: {})", type(e).__name__, e) + "\n")
            except Exception:
                pass
    _state.update(installed=True, monitor=mon, how=how, collectives=coll)
    atexit.register(_at_exit)
    return True


def after_torch_import(module):
    """Called by the boot hook right after ``import torch`` completed. Never raises; a failure
    leaves the job untouched and says so in one line on stderr."""
    try:
        install(module)
    except Exception as e:
        try:
            sys.stderr.write(trf("trainmon: zero-code step timing is off ({}: {})", type(e).__name__, e) + "\n")
        except Exception:
            pass
