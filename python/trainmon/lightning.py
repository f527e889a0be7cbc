# SPDX-License-Identifier: Apache-2.0
"""PyTorch Lightning integration.

    trainer = lightning.Trainer(callbacks=[trainmon.lightning.TrainmonCallback(interval=30)])

TrainmonCallback subclasses ``lightning.pytorch.Callback`` (or ``pytorch_lightning.Callback``)
when one is importable, else it is a plain class with the same hook names and signatures, so any
object with those attributes can drive it. Reads trainer.current_epoch (0-based),
trainer.max_epochs, trainer.global_step, trainer.num_training_batches; the batch size from the
batch's first tensor; the loss from ``outputs`` only when it is a CPU tensor or a number.
Lines go through the "lightning.pytorch" logger when it has handlers, else stderr.
"""

import logging
import sys

from ._monitor import Monitor

__all__ = ["TrainmonCallback"]


def _callback_base():
    for name in ("lightning.pytorch", "pytorch_lightning"):
        mod = sys.modules.get(name)
        if mod is None:
            try:
                mod = __import__(name, fromlist=["Callback"])
            except Exception:
                continue
        base = getattr(mod, "Callback", None)
        if isinstance(base, type):
            return base
    return object


def _batch_size(batch):
    """Rows of the batch's first tensor-like element; None when it has no shape."""
    first = batch
    for _ in range(3):
        if isinstance(first, dict):
            first = next(iter(first.values()), None)
        elif isinstance(first, (list, tuple)):
            first = first[0] if first else None
        else:
            break
    shape = getattr(first, "shape", None)
    try:
        return int(shape[0]) if shape is not None and len(shape) else None
    except Exception:
        return None


def _loss(outputs):
    if isinstance(outputs, dict):
        return outputs.get("loss")
    return outputs


def _logger():
    lg = logging.getLogger("lightning.pytorch")
    return lg if lg.hasHandlers() else None


class TrainmonCallback(_callback_base()):
    """Lightning callback: resource line every ``interval`` s, events to ``trainmon run``.

    Keyword arguments go to trainmon.Monitor (logger, stream, batch_events_per_s, ...).
    """

    def __init__(self, interval=30.0, **monitor_options):
        super().__init__()
        monitor_options.setdefault("logger", _logger())
        self.monitor = Monitor(interval=interval, framework="lightning", **monitor_options)

    @staticmethod
    def _progress(trainer):
        epochs = getattr(trainer, "max_epochs", None)
        return getattr(trainer, "current_epoch", None), (epochs if epochs and epochs > 0 else None)

    def on_train_start(self, trainer, pl_module):
        epoch, epochs = self._progress(trainer)
        self.monitor.send("train_start", epochs=epochs)

    def on_train_epoch_start(self, trainer, pl_module):
        epoch, epochs = self._progress(trainer)
        self.monitor.send("epoch_start", epoch=epoch, epochs=epochs,
                          batches=getattr(trainer, "num_training_batches", None))

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, *args):
        epoch, epochs = self._progress(trainer)
        self.monitor.batch_end(epoch=epoch, batch=batch_idx, batch_size=_batch_size(batch), loss=_loss(outputs),
                               step=getattr(trainer, "global_step", None), epochs=epochs,
                               batches=getattr(trainer, "num_training_batches", None))

    def on_train_epoch_end(self, trainer, pl_module):
        epoch, epochs = self._progress(trainer)
        metrics = getattr(trainer, "callback_metrics", None) or {}
        loss = metrics.get("train_loss", metrics.get("loss")) if isinstance(metrics, dict) else None
        self.monitor.epoch_end(epoch=epoch, epochs=epochs, loss=loss, step=getattr(trainer, "global_step", None))

    def on_validation_epoch_end(self, trainer, pl_module):
        if getattr(trainer, "sanity_checking", False):
            return
        epoch, epochs = self._progress(trainer)
        self.monitor.epoch_end(epoch=epoch, epochs=epochs, kind="val_end")

    def on_train_end(self, trainer, pl_module):
        epoch, epochs = self._progress(trainer)
        self.monitor.send("train_end", epoch=epoch, epochs=epochs, step=getattr(trainer, "global_step", None),
                          memory=True)
        self.monitor.close()
