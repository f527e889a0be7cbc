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
"""

import sys

from ._monitor import Monitor

__all__ = ["ResourceMonitor", "register", "HOOKS"]

#: Hooks register() adds, in the order Ultralytics runs them.
HOOKS = ("on_train_start", "on_train_epoch_start", "on_train_batch_end", "on_train_epoch_end",
         "on_fit_epoch_end", "on_train_end")


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
        obj = getattr(obj, name, None)
        if obj is None:
            return None
    return obj


class ResourceMonitor:
    """Callback object for Ultralytics trainers; see the module docstring.

    interval: seconds between resource lines (first call prints). Other keyword arguments go to
    trainmon.Monitor (logger, stream, batch_events_per_s, ...).
    """

    def __init__(self, interval=30.0, **monitor_options):
        monitor_options.setdefault("logger", _ultralytics_logger())
        self.monitor = Monitor(interval=interval, framework="ultralytics", **monitor_options)
        self._batch = -1
        self._epoch_seen = None
        self._started = False

    def __call__(self, trainer):
        hook = None
        try:
            # Ultralytics calls us from BaseTrainer.run_callbacks(self, event): read its `event`.
            hook = sys._getframe(1).f_locals.get("event")
        except Exception:
            hook = None
        handler = getattr(self, hook, None) if isinstance(hook, str) and hook in HOOKS else None
        (handler or self.on_train_epoch_end)(trainer)

    def _progress(self, trainer):
        return (getattr(trainer, "epoch", None), getattr(trainer, "epochs", None),
                getattr(trainer, "batch_size", None), _attr(trainer, "args", "imgsz"))

    def on_train_start(self, trainer):
        epoch, epochs, batch_size, imgsz = self._progress(trainer)
        self._started = True
        self.monitor.send("train_start", epochs=epochs, batch_size=batch_size, imgsz=imgsz)

    def on_train_epoch_start(self, trainer):
        epoch, epochs, batch_size, imgsz = self._progress(trainer)
        self._batch = -1
        self._epoch_seen = epoch
        self.monitor.send("epoch_start", epoch=epoch, epochs=epochs, batch_size=batch_size, imgsz=imgsz)

    def on_train_batch_end(self, trainer):
        epoch, epochs, batch_size, _ = self._progress(trainer)
        if epoch != self._epoch_seen:  # no on_train_epoch_start hook registered
            self._epoch_seen, self._batch = epoch, -1
        self._batch += 1
        self.monitor.batch_end(epoch=epoch, batch=self._batch, batch_size=batch_size, epochs=epochs,
                               loss=getattr(trainer, "tloss", None))

    def on_train_epoch_end(self, trainer):
        epoch, epochs, batch_size, imgsz = self._progress(trainer)
        self.monitor.epoch_end(epoch=epoch, epochs=epochs, batch_size=batch_size, imgsz=imgsz,
                               loss=getattr(trainer, "tloss", None))

    def on_fit_epoch_end(self, trainer):
        epoch, epochs, batch_size, imgsz = self._progress(trainer)
        self.monitor.epoch_end(epoch=epoch, epochs=epochs, batch_size=batch_size, imgsz=imgsz, kind="val_end")

    def on_train_end(self, trainer):
        epoch, epochs, _, _ = self._progress(trainer)
        self.monitor.send("train_end", epoch=epoch, epochs=epochs, memory=True)
        self.monitor.close()


def register(model, interval=30.0, **monitor_options):
    """Add a ResourceMonitor to every hook in HOOKS of ``model`` (anything with add_callback).

    Returns the ResourceMonitor (its ``monitor`` has the counters)."""
    rm = ResourceMonitor(interval=interval, **monitor_options)
    for hook in HOOKS:
        model.add_callback(hook, getattr(rm, hook))
    return rm
