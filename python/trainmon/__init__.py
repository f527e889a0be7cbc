# SPDX-License-Identifier: Apache-2.0
"""trainmon: the training process's side of trainmon (https://github.com/ - see docs/python.md).

Prints a resource line into the training log at most every ``interval`` seconds and, under
``trainmon run``, sends epoch / batch / torch-memory events to the recorder. Standard library only;
never blocks the training loop (no sleeping CPU sampler, no nvidia-smi subprocess, no waiting on
the recorder).

Integrations:
    trainmon.ultralytics.ResourceMonitor / register(model)     Ultralytics YOLO callbacks
    trainmon.lightning.TrainmonCallback                        PyTorch Lightning Callback
    trainmon.hf.TrainmonCallback                               Hugging Face TrainerCallback
    with trainmon.session(): ... trainmon.step(epoch=, batch=, batch_size=, loss=)   plain loops
"""

import atexit
import contextlib
import importlib

from ._format import RESOURCE_LINE_RE, format_resource_line, short_gpu_name
from ._monitor import Monitor

__version__ = "0.1.0"
__all__ = ["Monitor", "session", "step", "epoch_end", "current", "resource_line",
           "format_resource_line", "short_gpu_name", "RESOURCE_LINE_RE"]

_current = None
_atexit_registered = False


def current():
    """The Monitor that trainmon.step() reports to (created on first use), or None before."""
    return _current


def _finish_at_exit():
    global _current
    if _current is not None:
        _current.loop_finish()
        _current.close()
        _current = None


@contextlib.contextmanager
def session(interval=30.0, epochs=None, batch_size=None, imgsz=None, **monitor_options):
    """A plain training loop's session: ``with trainmon.session(interval=30) as mon: ...``.

    Sends train_start on entry and, on exit, the last epoch's epoch_end and train_end (also when
    the loop raised). ``monitor_options`` go to Monitor (framework, logger, stream, ...).
    Yields the Monitor; trainmon.step() inside the block reports to it.
    """
    global _current
    previous = _current
    mon = Monitor(interval=interval, framework=monitor_options.pop("framework", "loop"), **monitor_options)
    _current = mon
    mon.send("train_start", epochs=epochs, batch_size=batch_size, imgsz=imgsz)
    try:
        yield mon
    finally:
        mon.loop_finish()
        mon.close()
        _current = previous


def step(epoch=None, batch=None, batch_size=None, loss=None, epochs=None, step=None, lr=None, imgsz=None):
    """Report one finished batch of a plain loop (call it after optimizer.step()).

    epoch: 0-based epoch; a change of value closes the previous epoch (epoch_end event).
    batch: 0-based index within the epoch (counted for you when None). batch_size: samples.
    loss: a number or CPU tensor (CUDA tensors are skipped, never synchronised).
    Outside trainmon.session() a default Monitor (interval 30 s) is created on first use and
    finished at interpreter exit. Returns None; never raises for bad values (they are left out).
    """
    global _current, _atexit_registered
    mon = _current
    if mon is None:
        mon = _current = Monitor()
        if not _atexit_registered:
            atexit.register(_finish_at_exit)
            _atexit_registered = True
    mon.loop_step(epoch=epoch, batch=batch, batch_size=batch_size, loss=loss, epochs=epochs, step=step,
                  lr=lr, imgsz=imgsz)


def epoch_end(epoch, epochs=None, loss=None):
    """Report an epoch end explicitly (plain loops that prefer it to trainmon.step's inference)."""
    mon = _current if _current is not None else Monitor()
    mon.epoch_end(epoch=epoch, epochs=epochs, loss=loss)


def resource_line():
    """The resource line now, for your own logging (uses the current Monitor or a fresh one)."""
    mon = _current if _current is not None else Monitor(start_agent=False)
    return mon.resource_line()


def __getattr__(name):
    # trainmon.ultralytics / .lightning / .hf load on first use (they look for their framework).
    if name in ("ultralytics", "lightning", "hf"):
        return importlib.import_module("." + name, __name__)
    raise AttributeError("module 'trainmon' has no attribute %r" % name)
