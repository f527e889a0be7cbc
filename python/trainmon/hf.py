# SPDX-License-Identifier: Apache-2.0
"""Hugging Face Transformers integration.

    trainer = transformers.Trainer(..., callbacks=[trainmon.hf.TrainmonCallback(interval=30)])

TrainmonCallback subclasses ``transformers.TrainerCallback`` when importable, else it is a plain
class with the same hook names (``on_train_begin(args, state, control, **kwargs)`` ...). Epochs are
counted from on_epoch_begin (0-based; state.epoch is a float that HF advances inside the epoch);
args.num_train_epochs, args.per_device_train_batch_size, state.global_step and the loss from
on_log's ``logs["loss"]`` are used when present. Lines go through the "transformers" logger when it
has handlers, else stderr. Hooks return None (they never change ``control``).
"""

import logging
import math
import sys

from ._monitor import Monitor

__all__ = ["TrainmonCallback"]


def _callback_base():
    mod = sys.modules.get("transformers")
    if mod is None:
        try:
            import transformers as mod  # noqa: F811 (only when installed)
        except Exception:
            return object
    base = getattr(mod, "TrainerCallback", None)
    return base if isinstance(base, type) else object


def _logger():
    lg = logging.getLogger("transformers")
    return lg if lg.hasHandlers() else None


class TrainmonCallback(_callback_base()):
    """Transformers callback: resource line every ``interval`` s, events to ``trainmon run``.

    Keyword arguments go to trainmon.Monitor (logger, stream, batch_events_per_s, ...).
    """

    def __init__(self, interval=30.0, **monitor_options):
        monitor_options.setdefault("logger", _logger())
        self.monitor = Monitor(interval=interval, framework="transformers", **monitor_options)
        self._epoch = -1
        self._batch = -1
        self._loss = None

    @staticmethod
    def _epochs(args):
        n = getattr(args, "num_train_epochs", None)
        try:
            return int(math.ceil(float(n))) if n else None
        except (TypeError, ValueError):
            return None

    def on_train_begin(self, args, state, control, **kwargs):
        self.monitor.send("train_start", epochs=self._epochs(args),
                          batch_size=getattr(args, "per_device_train_batch_size", None))

    def on_epoch_begin(self, args, state, control, **kwargs):
        self._epoch += 1
        self._batch = -1
        self.monitor.send("epoch_start", epoch=self._epoch, epochs=self._epochs(args))

    def on_step_end(self, args, state, control, **kwargs):
        self._batch += 1
        self.monitor.batch_end(epoch=max(self._epoch, 0), batch=self._batch,
                               batch_size=getattr(args, "per_device_train_batch_size", None),
                               step=getattr(state, "global_step", None), epochs=self._epochs(args),
                               loss=self._loss)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if isinstance(logs, dict) and "loss" in logs:
            self._loss = logs.get("loss")

    def on_epoch_end(self, args, state, control, **kwargs):
        self.monitor.epoch_end(epoch=max(self._epoch, 0), epochs=self._epochs(args), loss=self._loss,
                               batch_size=getattr(args, "per_device_train_batch_size", None),
                               step=getattr(state, "global_step", None))

    def on_evaluate(self, args, state, control, **kwargs):
        self.monitor.epoch_end(epoch=max(self._epoch, 0), epochs=self._epochs(args), kind="val_end")

    def on_train_end(self, args, state, control, **kwargs):
        self.monitor.send("train_end", epoch=max(self._epoch, 0), epochs=self._epochs(args),
                          step=getattr(state, "global_step", None), memory=True)
        self.monitor.close()
