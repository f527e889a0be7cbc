# SPDX-License-Identifier: Apache-2.0
"""Ultralytics (YOLO) integration.

    model.add_callback("on_train_epoch_end", trainmon.ultralytics.ResourceMonitor(interval=30))
    # or every useful hook at once:
    trainmon.ultralytics.register(model, interval=30)

One ResourceMonitor may be added to on_train_epoch_end, on_train_batch_end, on_fit_epoch_end (and
on_train_start, on_train_epoch_start, on_train_end): called as ``monitor(trainer)`` it finds the
hook name from Ultralytics' ``run_callbacks(event)`` frame; ``register`` binds one method per hook
instead. Reads trainer.epoch (0-based), trainer.epochs, trainer.batch_size, trainer.args.imgsz and
trainer.tloss when present. Lines go through Ultralytics' LOGGER when it can be imported.

Step timing follows ultralytics 8.x ``BaseTrainer._do_train``: per epoch ``on_train_epoch_start``,
then for each batch of ``enumerate(self.train_loader)`` ``on_train_batch_start`` (the batch has
arrived), forward, backward, the optimizer step once every ``accumulate`` batches, and
``on_train_batch_end``; then ``on_train_epoch_end``, validation, saving and ``on_fit_epoch_end``;
``on_train_end`` on rank 0 only. So a step here is one batch; its data wait runs from the previous
batch end (or the epoch start / the end of validation) to the batch start. Samples per step: the
loader's batch, ``trainer.batch_size`` // ``trainer.world_size`` in DDP (the trainer builds its
loader with that per-rank size; 8.0 to 8.2 kept world_size a local, so WORLD_SIZE is used when the
attribute is missing). The article's form without on_train_batch_start still times steps from
batch end to batch end, with no data wait.
"""

import os
import sys

from . import _timing
from ._monitor import Monitor
from ._timing import _JOURNAL_CAP, J_FEND, J_FSTART
from ._values import int_in

__all__ = ["ResourceMonitor", "register", "HOOKS"]

_mono = _timing._mono

#: Hooks register() adds, in the order Ultralytics runs them.
HOOKS = ("on_train_start", "on_train_epoch_start", "on_train_batch_start", "on_train_batch_end",
         "on_train_epoch_end", "on_fit_epoch_end", "on_train_end")


def _ultralytics_logger():
    mod = sys.modules.get("ultralytics.utils")
    if mod is None:
        try:
            import ultralytics.utils as mod  # noqa: F811 (only when ultralytics is installed)
        except Exception:
            return None
    return getattr(mod, "LOGGER", None)


def _attr(obj, *names):
    for name in names:
        try:
            obj = getattr(obj, name, None)
        except Exception:
            return None
        if obj is None:
            return None
    return obj


_env_world = []


def _env_world_size():
    """WORLD_SIZE of this process (read once: the launcher sets it before we start)."""
    if not _env_world:
        try:
            _env_world.append(int_in(int(os.environ.get("WORLD_SIZE", "")), 0, 65536))
        except Exception:
            _env_world.append(None)
    return _env_world[0]


def rank_batch_size(trainer):
    """Samples per batch on this rank: trainer.batch_size (the global batch), divided by the world
    size in DDP; None when unknown."""
    size = int_in(_attr(trainer, "batch_size"), 1, 10_000_000)
    if size is None:
        return None
    world = int_in(_attr(trainer, "world_size"), 0, 65536)
    if world is None:
        world = _env_world_size()
    if world and world > 1:
        return max(size // world, 1)
    return size


class ResourceMonitor:
    """Callback object for Ultralytics trainers; see the module docstring.

    interval: seconds between resource lines (first call prints). Other keyword arguments go to
    trainmon.Monitor (logger, stream, batch_events_per_s, ...).
    """

    def __init__(self, interval=30.0, **monitor_options):
        try:
            monitor_options.setdefault("logger", _ultralytics_logger())
            self.monitor = Monitor(interval=interval, framework="ultralytics", **monitor_options)
        except Exception:
            self.monitor = Monitor(interval=interval, framework="ultralytics")
        self._timer = self.monitor.timer
        self._journal = self._timer.journal  # one list for the life of the process (hot paths append)
        self._hot = self._timer._hot  # the phase, as timer.batch_start / batch_end set it
        _timing._learn_torch()
        self._batch = -1
        self._batch_size = None  # this rank's batch, from the batch-start hook
        self._batch_raw = self._batch_value = None
        self._bs_raw = self._ws_raw = self  # the figures on_train_batch_start read last (self: none yet)
        self._epoch_seen = None
        self._started = False
        self._claimed = False
        if self.monitor.enabled:
            self._timer.claim(_timing.FRAMEWORK, "ultralytics")
            self._claimed = True

    def __call__(self, trainer):
        hook = None
        try:
            # Ultralytics calls us from BaseTrainer.run_callbacks(self, event): read its `event`.
            hook = sys._getframe(1).f_locals.get("event")
        except Exception:
            hook = None
        try:
            handler = getattr(self, hook, None) if isinstance(hook, str) and hook in HOOKS else None
            (handler or self.on_train_epoch_end)(trainer)
        except Exception:
            pass

    def _progress(self, trainer):
        return (_attr(trainer, "epoch"), _attr(trainer, "epochs"), rank_batch_size(trainer),
                _attr(trainer, "args", "imgsz"))

    def on_train_start(self, trainer):
        try:
            epoch, epochs, batch_size, imgsz = self._progress(trainer)
            self._started = True
            self.monitor.send("train_start", epochs=epochs, batch_size=batch_size, imgsz=imgsz)
        except Exception:
            pass

    def on_train_epoch_start(self, trainer):
        try:
            self._timer.resume(_mono())
            epoch, epochs, batch_size, imgsz = self._progress(trainer)
            self._batch = -1
            self._epoch_seen = epoch
            self.monitor.send("epoch_start", epoch=epoch, epochs=epochs, batch_size=batch_size, imgsz=imgsz)
        except Exception:
            pass

    def _rank_batch(self, trainer):
        try:
            raw = (trainer.batch_size, getattr(trainer, "world_size", None))
        except Exception:
            raw = None
        if raw is None or raw != self._batch_raw:  # read again only when the figures change
            self._batch_raw, self._batch_value = raw, rank_batch_size(trainer)
        return self._batch_value

    # The two per-batch hooks do timer.batch_start / batch_end inline (the same journal entries and
    # phases): a method call less per hook.
    def on_train_batch_start(self, trainer):
        try:
            t = _mono()
            try:
                bs, ws = trainer.batch_size, getattr(trainer, "world_size", None)
            except Exception:
                bs = ws = self  # never the figures kept: read again
            if bs is not self._bs_raw or ws is not self._ws_raw:  # read again only when they change
                self._bs_raw, self._ws_raw, self._batch_value = bs, ws, rank_batch_size(trainer)
                if bs is self:
                    self._bs_raw = None
            self._batch_size = size = self._batch_value
            self._journal.append((J_FSTART, t, size))
            hot = self._hot
            hot.phase = "compute"
            hot.phase_mt = t
        except Exception:
            pass

    def on_train_batch_end(self, trainer):
        try:
            t = _mono()
            batch_size = self._batch_size
            if batch_size is None:
                batch_size = self._rank_batch(trainer)
            self._batch_size = None
            journal = self._journal
            hot = self._hot
            journal.append((J_FEND, t, batch_size, hot.comm))
            hot.phase = "data"  # the trainer fetches the next batch now
            hot.phase_mt = t
            if len(journal) > _JOURNAL_CAP:
                self._timer.drain()
            try:
                epoch = trainer.epoch
            except Exception:  # missing, or a property that raises: as _attr
                epoch = None
            if epoch != self._epoch_seen:  # no on_train_epoch_start hook registered
                self._epoch_seen, self._batch = epoch, -1
            self._batch += 1
            mon = self.monitor
            if t >= mon._next_batch_event or t >= mon._next_print:  # an event or a line is due
                mon.batch_end(epoch=epoch, batch=self._batch, batch_size=batch_size,
                              epochs=_attr(trainer, "epochs"), loss=_attr(trainer, "tloss"))
        except Exception:
            pass

    def on_train_epoch_end(self, trainer):
        try:
            self._timer.pause(_mono())  # validation and saving follow: not step time
            epoch, epochs, batch_size, imgsz = self._progress(trainer)
            self.monitor.epoch_end(epoch=epoch, epochs=epochs, batch_size=batch_size, imgsz=imgsz,
                                   loss=_attr(trainer, "tloss"))
        except Exception:
            pass

    def on_fit_epoch_end(self, trainer):
        try:
            self._timer.resume(_mono())
            epoch, epochs, batch_size, imgsz = self._progress(trainer)
            self.monitor.epoch_end(epoch=epoch, epochs=epochs, batch_size=batch_size, imgsz=imgsz,
                                   kind="val_end")
        except Exception:
            pass

    def on_train_end(self, trainer):
        try:
            epoch, epochs, _, _ = self._progress(trainer)
            self.monitor.train_end(epoch=epoch, epochs=epochs)
            self.monitor.close()
            if self._claimed:
                self._claimed = False
                self._timer.release(_timing.FRAMEWORK)
        except Exception:
            pass


def register(model, interval=30.0, **monitor_options):
    """Add a ResourceMonitor to every hook in HOOKS of ``model`` (anything with add_callback).

    Returns the ResourceMonitor (its ``monitor`` has the counters). Never raises: a model
    without add_callback gets no hooks."""
    rm = ResourceMonitor(interval=interval, **monitor_options)
    for hook in HOOKS:
        try:
            model.add_callback(hook, getattr(rm, hook))
        except Exception:
            pass
    return rm
