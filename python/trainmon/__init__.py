# SPDX-License-Identifier: Apache-2.0
"""trainmon: the training process's side of trainmon (https://github.com/ - see docs/python.md).

Prints a resource line into the training log at most every ``interval`` seconds and, under
``trainmon run``, sends epoch / batch / step-timing / torch-memory events to the recorder.
Standard library only; never blocks the training loop (no sleeping CPU sampler, no nvidia-smi
subprocess, no waiting on the recorder, no GPU synchronisation) and never raises into it.

Integrations:
    trainmon.ultralytics.ResourceMonitor / register(model)     Ultralytics YOLO callbacks
    trainmon.lightning.TrainmonCallback                        PyTorch Lightning Callback
    trainmon.hf.TrainmonCallback                               Hugging Face TrainerCallback
    with trainmon.session(): for x, y in trainmon.loader(dl): ... trainmon.step(epoch=, ...)
    `trainmon run -- python train.py`: plain PyTorch timed with no import at all (python/boot)
"""

import atexit
import contextlib
import importlib

from . import _monitor, _timing
from ._format import RESOURCE_LINE_RE, format_resource_line, short_gpu_name
from ._monitor import Monitor
from ._timing import loader

__version__ = "0.2.0"
__all__ = ["Monitor", "session", "step", "loader", "epoch_end", "current", "resource_line",
           "format_resource_line", "short_gpu_name", "RESOURCE_LINE_RE"]

_current = None
_J_LOOP, _JOURNAL_CAP, _LOOP = _timing.J_LOOP, _timing._JOURNAL_CAP, _timing.LOOP
_BIG = 10 ** 15
_atexit_registered = False


def current():
    """The Monitor that trainmon.step() reports to (created on first use), or None before."""
    return _current


def _finish_at_exit():
    global _current
    try:
        if _current is not None:
            _current.loop_finish()
            _current.close()
            _current = None
    except Exception:
        pass


@contextlib.contextmanager
def session(interval=30.0, epochs=None, batch_size=None, imgsz=None, **monitor_options):
    """A plain training loop's session: ``with trainmon.session(interval=30) as mon: ...``.

    Sends train_start on entry and, on exit, the last epoch's epoch_end and train_end (also when
    the loop raised). The first step is timed from the entry unless a ``trainmon.loader`` batch
    tells better. ``monitor_options`` go to Monitor (framework, logger, stream, ...).
    Yields the Monitor; trainmon.step() inside the block reports to it.
    """
    global _current
    previous = _current
    try:
        framework = monitor_options.pop("framework", "loop")
        mon = Monitor(interval=interval, framework=framework, **monitor_options)
    except TypeError:  # an unknown keyword: a Monitor with the defaults rather than an error
        mon = Monitor(interval=interval)
    _current = mon
    try:
        mon.claim_loop()
        mon.timer.arm(_timing._mono())
        mon.send("train_start", epochs=epochs, batch_size=batch_size, imgsz=imgsz)
    except Exception:
        pass
    try:
        yield mon
    finally:
        mon.loop_finish()
        mon.close()
        _current = previous


def step(epoch=None, batch=None, batch_size=None, loss=None, epochs=None, step=None, lr=None, imgsz=None):
    """Report one finished step of a plain loop (call it after optimizer.step()).

    It ends the step on the process's step timer: step time runs from the previous call (the
    first from the session start or the first ``trainmon.loader`` batch); data wait is what
    ``trainmon.loader`` measured in between; samples are those batches' first dimension, else
    ``batch_size``.
    epoch: 0-based epoch; a change of value closes the previous epoch (epoch_end event).
    batch: 0-based index within the epoch (counted for you when None). batch_size: samples.
    loss: a number or CPU tensor (CUDA tensors are skipped, never synchronised).
    Outside trainmon.session() a default Monitor (interval 30 s) is created on first use and
    finished at interpreter exit. Returns None; never raises for bad values (they are left out).
    """
    global _current, _atexit_registered
    try:
        mon = _current
        if (mon is not None and mon._loop_claimed and batch is None and batch_size is None and imgsz is None
                and (epoch is None or epoch is mon._loop_epoch_raw)):
            # The common call (the same epoch object, nothing else to read): Monitor.loop_step's
            # per-step part inline, a Python call less per step. The clock is the Monitor module's.
            t = _monitor._mono()
            hot = mon._hot
            if hot.level <= _LOOP:
                journal = mon._journal
                journal.append((_J_LOOP, t, None, hot.comm))
                if hot.phase != "compute":
                    hot.phase = "compute"
                    hot.phase_mt = t
                if len(journal) > _JOURNAL_CAP:
                    mon.timer.drain()
            mon._loop_batch += 1
            if t >= mon._next_batch_event or t >= mon._next_print:
                mon.batch_end(epoch=mon._loop_epoch, batch=min(mon._loop_batch, _BIG), batch_size=None, loss=loss,
                              step=step, epochs=epochs, lr=lr)
            else:
                mon._pending = (mon._loop_epoch, epochs, step, None)
            return
        if mon is None:
            mon = _current = Monitor()
            if not _atexit_registered:
                atexit.register(_finish_at_exit)
                _atexit_registered = True
        mon.loop_step(epoch, batch, batch_size, loss, epochs, step, lr, imgsz)  # positional: per step
    except Exception:
        pass


def epoch_end(epoch, epochs=None, loss=None):
    """Report an epoch end explicitly (plain loops that prefer it to trainmon.step's inference)."""
    try:
        mon = _current if _current is not None else Monitor()
        mon.epoch_end(epoch=epoch, epochs=epochs, loss=loss)
    except Exception:
        pass


def resource_line():
    """The resource line now, for your own logging (uses the current Monitor or a fresh one)."""
    try:
        mon = _current if _current is not None else Monitor(start_agent=False)
        return mon.resource_line()
    except Exception:
        return "Resource: "


def __getattr__(name):
    # trainmon.ultralytics / .lightning / .hf load on first use (they look for their framework).
    if name in ("ultralytics", "lightning", "hf"):
        return importlib.import_module("." + name, __name__)
    raise AttributeError("module 'trainmon' has no attribute %r" % name)
