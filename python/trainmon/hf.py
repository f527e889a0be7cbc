# SPDX-License-Identifier: Apache-2.0
"""Hugging Face Transformers integration.

    trainer = transformers.Trainer(..., callbacks=[trainmon.hf.TrainmonCallback(interval=30)])

TrainmonCallback subclasses ``transformers.TrainerCallback`` when importable, else it is a plain
class with the same hook names (``on_train_begin(args, state, control, **kwargs)`` ...). Epochs are
counted from on_epoch_begin (0-based; state.epoch is a float that HF advances inside the epoch);
args.num_train_epochs, args.per_device_train_batch_size, args.gradient_accumulation_steps,
state.global_step and the loss from on_log's ``logs["loss"]`` are used when present. Lines go
through the "transformers" logger when it has handlers, else stderr. Hooks return None (they never
change ``control``) and never raise.

Step timing follows transformers 4.x ``Trainer._inner_training_loop``: per optimizer update it
takes the micro-batches from the epoch iterator (since 4.46 all of them first, in
``get_batch_samples``; before, one per loop turn), calls ``on_step_begin`` before the first
micro-batch's training step, ``on_substep_end`` after each other one, and after the optimizer step
``on_step_end``, then ``_maybe_log_save_evaluate`` (``on_log``; evaluation with
``on_prediction_step`` per batch and ``on_evaluate``; ``on_save``). A step here is one optimizer
update: its data wait runs from the previous on_step_end (or the end of evaluation / saving, or the
epoch start) to on_step_begin, so before 4.46 it holds the first micro-batch's fetch only. Samples
per step: per_device_train_batch_size x gradient_accumulation_steps (the hooks see no batch).
"""

import logging
import math
import sys

from . import _timing
from ._monitor import Monitor
from ._timing import _JOURNAL_CAP, J_FEND, J_FSTART
from ._values import int_in

__all__ = ["TrainmonCallback"]

_mono = _timing._mono


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


def _get(obj, name):
    try:
        return getattr(obj, name, None)
    except Exception:
        return None


class TrainmonCallback(_callback_base()):
    """Transformers callback: resource line every ``interval`` s, events and step timing to
    ``trainmon run``. Keyword arguments go to trainmon.Monitor (logger, stream,
    batch_events_per_s, ...)."""

    def __init__(self, interval=30.0, **monitor_options):
        try:
            monitor_options.setdefault("logger", _logger())
            self.monitor = Monitor(interval=interval, framework="transformers", **monitor_options)
        except Exception:
            self.monitor = Monitor(interval=interval, framework="transformers")
        self._timer = self.monitor.timer
        self._journal = self._timer.journal  # one list for the life of the process (hot paths append)
        self._hot = self._timer._hot  # the phase, as timer.batch_start / batch_end set it
        _timing._learn_torch()
        self._epoch = -1
        self._batch = -1
        self._loss = None
        self._size = None
        self._args = self._samples_value = None
        self._claimed = False
        if self.monitor.enabled:
            self._timer.claim(_timing.FRAMEWORK, "transformers")
            self._claimed = True

    @staticmethod
    def _epochs(args):
        n = _get(args, "num_train_epochs")
        try:
            return int(math.ceil(float(n))) if n else None
        except Exception:
            return None

    def _samples_of(self, args):
        """Samples per optimizer update: per_device_train_batch_size x gradient_accumulation_steps."""
        self._args = None
        size = int_in(_get(args, "per_device_train_batch_size"), 1, 10_000_000)
        steps = int_in(_get(args, "gradient_accumulation_steps"), 1, 1_000_000) or 1
        self._samples_value = size * steps if size else None
        self._args = args
        return self._samples_value

    def on_train_begin(self, args, state, control, **kwargs):
        try:
            self.monitor.send("train_start", epochs=self._epochs(args),
                              batch_size=_get(args, "per_device_train_batch_size"))
        except Exception:
            pass

    def on_epoch_begin(self, args, state, control, **kwargs):
        try:
            self._timer.resume(_mono())
            self._epoch += 1
            self._batch = -1
            self.monitor.send("epoch_start", epoch=self._epoch, epochs=self._epochs(args))
        except Exception:
            pass

    # The two per-step hooks do timer.batch_start / batch_end inline (the same journal entries and
    # phases): a method call less per hook.
    def on_step_begin(self, args, state, control, **kwargs):
        try:
            t = _mono()
            # the arguments are read again only when the trainer hands another object
            size = self._samples_value if args is self._args else self._samples_of(args)
            self._size = size
            self._journal.append((J_FSTART, t, size))
            hot = self._hot
            hot.phase = "compute"
            hot.phase_mt = t
        except Exception:
            pass

    def on_step_end(self, args, state, control, **kwargs):
        try:
            t = _mono()
            size = self._size
            self._size = None
            if size is None:  # no on_step_begin before it
                size = self._samples_value if args is self._args else self._samples_of(args)
            journal = self._journal
            hot = self._hot
            journal.append((J_FEND, t, size, hot.comm))
            hot.phase = "data"  # the trainer fetches the next batch now
            hot.phase_mt = t
            if len(journal) > _JOURNAL_CAP:
                self._timer.drain()
            self._batch += 1
            mon = self.monitor
            if t >= mon._next_batch_event or t >= mon._next_print:  # an event or a line is due
                mon.batch_end(epoch=max(self._epoch, 0), batch=self._batch,
                              batch_size=_get(args, "per_device_train_batch_size"),
                              step=_get(state, "global_step"), epochs=self._epochs(args),
                              loss=self._loss)
        except Exception:
            pass

    def on_prediction_step(self, args, state, control, **kwargs):
        try:
            self._timer.pause(_mono())  # evaluation: not step time
        except Exception:
            pass

    def on_log(self, args, state, control, logs=None, **kwargs):
        try:
            if isinstance(logs, dict) and "loss" in logs:
                self._loss = logs.get("loss")
        except Exception:
            pass

    def on_save(self, args, state, control, **kwargs):
        try:
            self._timer.resume(_mono())  # a checkpoint was written: the next step starts now
        except Exception:
            pass

    def on_epoch_end(self, args, state, control, **kwargs):
        try:
            self._timer.pause(_mono())
            self.monitor.epoch_end(epoch=max(self._epoch, 0), epochs=self._epochs(args), loss=self._loss,
                                   batch_size=_get(args, "per_device_train_batch_size"),
                                   step=_get(state, "global_step"))
        except Exception:
            pass

    def on_evaluate(self, args, state, control, **kwargs):
        try:
            self._timer.resume(_mono())
            self.monitor.epoch_end(epoch=max(self._epoch, 0), epochs=self._epochs(args), kind="val_end")
        except Exception:
            pass

    # The other TrainerCallback hooks, so that a handler calling every event finds them without
    # transformers' base class (they do nothing, as the base class's do).
    def on_init_end(self, args, state, control, **kwargs):
        pass

    def on_substep_end(self, args, state, control, **kwargs):
        pass

    def on_pre_optimizer_step(self, args, state, control, **kwargs):
        pass

    def on_optimizer_step(self, args, state, control, **kwargs):
        pass

    def on_predict(self, args, state, control, **kwargs):
        pass

    def on_train_end(self, args, state, control, **kwargs):
        try:
            self.monitor.train_end(epoch=max(self._epoch, 0), epochs=self._epochs(args),
                                   step=_get(state, "global_step"))
            self.monitor.close()
            if self._claimed:
                self._claimed = False
                self._timer.release(_timing.FRAMEWORK)
        except Exception:
            pass
