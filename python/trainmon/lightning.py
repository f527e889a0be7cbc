# SPDX-License-Identifier: Apache-2.0
"""PyTorch Lightning integration.

    trainer = lightning.Trainer(callbacks=[trainmon.lightning.TrainmonCallback(interval=30)])

TrainmonCallback subclasses ``lightning.pytorch.Callback`` (or ``pytorch_lightning.Callback``)
when one is importable, else it is a plain class with the same hook names and signatures, so any
object with those attributes can drive it. Reads trainer.current_epoch (0-based),
trainer.max_epochs, trainer.global_step, trainer.num_training_batches; the batch size from the
batch's first tensor; the loss from ``outputs`` only when it is a CPU tensor or a number.
Lines go through the "lightning.pytorch" logger when it has handlers, else stderr.

Step timing follows Lightning 2.x's ``_TrainingEpochLoop.advance``: the loop fetches the batch
(``next(data_fetcher)``, then batch_to_device), calls ``on_train_batch_start(trainer, pl_module,
batch, batch_idx)``, runs the training step (forward, backward, and the optimizer step once every
``accumulate_grad_batches``), calls ``on_train_batch_end(trainer, pl_module, outputs, batch,
batch_idx)``, then runs validation when due (``on_validation_start`` .. ``on_validation_end``).
So a step here is one batch; its data wait runs from the previous batch end (or the end of
validation, or the epoch start) to the batch start. Lightning 1.x passed a ``dataloader_idx``
after ``batch_idx``; it is accepted and ignored.
"""

import logging
import sys

from . import _timing
from ._monitor import Monitor
from ._timing import _JOURNAL_CAP, J_FEND, J_FSTART, fast_samples
from ._values import batch_samples

__all__ = ["TrainmonCallback"]

_mono = _timing._mono


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
    return batch_samples(batch)


def _loss(outputs):
    if isinstance(outputs, dict):
        return outputs.get("loss")
    return outputs


def _logger():
    lg = logging.getLogger("lightning.pytorch")
    return lg if lg.hasHandlers() else None


def _get(obj, name):
    try:
        return getattr(obj, name, None)
    except Exception:
        return None


class TrainmonCallback(_callback_base()):
    """Lightning callback: resource line every ``interval`` s, events and step timing to
    ``trainmon run``. Keyword arguments go to trainmon.Monitor (logger, stream,
    batch_events_per_s, ...). No hook raises."""

    def __init__(self, interval=30.0, **monitor_options):
        try:
            super().__init__()
        except Exception:
            pass
        try:
            monitor_options.setdefault("logger", _logger())
            self.monitor = Monitor(interval=interval, framework="lightning", **monitor_options)
        except Exception:
            self.monitor = Monitor(interval=interval, framework="lightning")
        self._timer = self.monitor.timer
        self._journal = self._timer.journal  # one list for the life of the process (hot paths append)
        self._hot = self._timer._hot  # the phase, as timer.batch_start / batch_end set it
        _timing._learn_torch()
        self._size = None  # samples of the batch in flight (from on_train_batch_start)
        self._claimed = False
        if self.monitor.enabled:
            self._timer.claim(_timing.FRAMEWORK, "lightning")
            self._claimed = True

    @staticmethod
    def _progress(trainer):
        epochs = _get(trainer, "max_epochs")
        try:
            epochs = epochs if epochs and epochs > 0 else None
        except Exception:
            epochs = None
        return _get(trainer, "current_epoch"), epochs

    def on_train_start(self, trainer, pl_module, *args, **kwargs):
        try:
            epoch, epochs = self._progress(trainer)
            self.monitor.send("train_start", epochs=epochs)
        except Exception:
            pass

    def on_train_epoch_start(self, trainer, pl_module, *args, **kwargs):
        try:
            self._timer.resume(_mono())
            epoch, epochs = self._progress(trainer)
            self.monitor.send("epoch_start", epoch=epoch, epochs=epochs,
                              batches=_get(trainer, "num_training_batches"))
        except Exception:
            pass

    # The two per-batch hooks do timer.batch_start / batch_end inline (the same journal entries and
    # phases): a method call less per hook.
    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx, *args, **kwargs):
        try:
            t = _mono()
            # samples: fast_samples, its torch tensor case inline
            tb = type(batch)
            x = batch[0] if (tb is list or tb is tuple) and batch else batch
            if type(x) is _timing._Tensor:
                try:
                    n = _timing._tensor_len(x)
                    size = n if 0 < n <= 10_000_000 else None
                except Exception:  # a tensor whose sizes cannot be read (nested, ...)
                    size = None
            else:
                n = fast_samples(batch)
                size = n if n > 0 else None
            self._size = size
            self._journal.append((J_FSTART, t, size))
            hot = self._hot
            hot.phase = "compute"
            hot.phase_mt = t
        except Exception:
            pass

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, *args, **kwargs):
        try:
            t = _mono()
            size = self._size
            if size is None:
                size = batch_samples(batch)
            self._size = None
            journal = self._journal
            hot = self._hot
            journal.append((J_FEND, t, size, hot.comm))
            hot.phase = "data"  # Lightning fetches the next batch now
            hot.phase_mt = t
            if len(journal) > _JOURNAL_CAP:
                self._timer.drain()
            mon = self.monitor
            if t >= mon._next_batch_event or t >= mon._next_print:  # an event or a line is due
                epoch, epochs = self._progress(trainer)
                mon.batch_end(epoch=epoch, batch=batch_idx, batch_size=size, loss=_loss(outputs),
                              step=_get(trainer, "global_step"), epochs=epochs,
                              batches=_get(trainer, "num_training_batches"))
        except Exception:
            pass

    def on_validation_start(self, trainer, pl_module, *args, **kwargs):
        try:
            self._timer.pause(_mono())
        except Exception:
            pass

    def on_validation_end(self, trainer, pl_module, *args, **kwargs):
        try:
            self._timer.resume(_mono())
        except Exception:
            pass

    def on_train_epoch_end(self, trainer, pl_module, *args, **kwargs):
        try:
            self._timer.pause(_mono())
            epoch, epochs = self._progress(trainer)
            metrics = _get(trainer, "callback_metrics") or {}
            loss = metrics.get("train_loss", metrics.get("loss")) if isinstance(metrics, dict) else None
            self.monitor.epoch_end(epoch=epoch, epochs=epochs, loss=loss, step=_get(trainer, "global_step"))
        except Exception:
            pass

    def on_validation_epoch_end(self, trainer, pl_module, *args, **kwargs):
        try:
            if _get(trainer, "sanity_checking"):
                return
            epoch, epochs = self._progress(trainer)
            self.monitor.epoch_end(epoch=epoch, epochs=epochs, kind="val_end")
        except Exception:
            pass

    # Other hooks the loops call, so that a stand-in calling them finds them without Lightning's
    # base class (they do nothing, as the base class's do).
    def on_sanity_check_start(self, trainer, pl_module, *args, **kwargs):
        pass

    def on_sanity_check_end(self, trainer, pl_module, *args, **kwargs):
        pass

    def on_validation_epoch_start(self, trainer, pl_module, *args, **kwargs):
        pass

    def on_validation_batch_start(self, trainer, pl_module, *args, **kwargs):
        pass

    def on_validation_batch_end(self, trainer, pl_module, *args, **kwargs):
        pass

    def on_train_end(self, trainer, pl_module, *args, **kwargs):
        try:
            epoch, epochs = self._progress(trainer)
            self.monitor.train_end(epoch=epoch, epochs=epochs, step=_get(trainer, "global_step"))
            self.monitor.close()
            if self._claimed:
                self._claimed = False
                self._timer.release(_timing.FRAMEWORK)
        except Exception:
            pass
