# SPDX-License-Identifier: Apache-2.0
"""Monitor: the one object every integration drives (Ultralytics, Lightning, Hugging Face, loops).

A hook call costs a clock read and, when it sends an event, one JSON encode and one non-blocking
datagram (tens of microseconds). Every ``interval`` seconds it also prints the resource line,
which reads three /proc files, the snapshot file and, with CUDA, torch's allocator statistics
(well under a millisecond). Nothing waits on the recorder, on the GPU or on a sleep.
"""

import logging
import os
import sys
import time

from . import _format, _proc, _torch
from ._client import EventClient
from ._snapshot import SnapshotSource

__all__ = ["Monitor"]

_log = logging.getLogger("trainmon")


def _int_or_none(value):
    if value is None or isinstance(value, bool):
        return None
    try:
        i = int(value)
    except (TypeError, ValueError):
        return None
    return i if i >= 0 else None


def _imgsz(value):
    """Largest side of an image size given as an int or a [h, w] list; None otherwise."""
    if isinstance(value, (list, tuple)):
        sides = [_int_or_none(v) for v in value]
        sides = [s for s in sides if s]
        return max(sides) if sides else None
    size = _int_or_none(value)
    return size if size else None


class Monitor:
    """Prints the resource line at most every ``interval`` seconds and sends training events.

    interval: seconds between printed lines (the first call prints); 0 prints at every call,
        None or a negative number never prints.
    framework: name sent with every event ("loop", "ultralytics", "lightning", "transformers").
    logger: a logging.Logger (or any callable taking the line) to print through; None uses the
        "trainmon" logger when logging is configured, else writes to ``stream`` (sys.stderr).
    send_events: send events when TRAINMON_EVENTS_SOCKET is set (under ``trainmon run``).
    batch_events_per_s: most batch_end events sent per second (0: every batch); epoch events
        are never thinned.
    start_agent: outside ``trainmon run``, start ``trainmon agent`` for GPU data if none runs.
    Set TRAINMON_DISABLE=1 to turn every Monitor into a no-op.
    """

    def __init__(self, interval=30.0, framework="loop", logger=None, stream=None, send_events=True,
                 batch_events_per_s=10.0, start_agent=True, proc_root="/proc", env=None):
        env = os.environ if env is None else env
        self.enabled = env.get("TRAINMON_DISABLE") != "1"
        self.interval = interval
        self.framework = framework
        self.logger = logger
        self.stream = stream
        self.batch_gap_s = 1.0 / batch_events_per_s if batch_events_per_s and batch_events_per_s > 0 else 0.0
        self.lines_printed = 0
        self.last_line = None
        self.proc = _proc.ProcReader(proc_root)
        self.snapshots = SnapshotSource(start_agent=start_agent, env=env)
        socket_path = env.get("TRAINMON_EVENTS_SOCKET")
        self.client = EventClient(socket_path, env.get("TRAINMON_RUN_ID")) if (
            send_events and socket_path and self.enabled) else None
        self._next_print = 0.0  # monotonic time of the next allowed line
        self._next_batch_event = 0.0
        self._hello_sent = False
        # Progress as last reported (0-based epoch), for lines printed from any hook.
        self.epoch = None
        self.epochs = None
        self.step = None
        self.batch_size = None
        self.imgsz = None
        # Plain-loop tracking (trainmon.step): the epoch whose epoch_end is still owed.
        self._loop_epoch = None
        self._loop_batch = -1

    # ---- counters ----------------------------------------------------------------------------
    @property
    def sent(self):
        """Events the kernel accepted for the recorder."""
        return self.client.sent if self.client else 0

    @property
    def dropped(self):
        """Events not delivered (recorder slow, gone, or a message that could not be encoded)."""
        return self.client.dropped if self.client else 0

    # ---- events ------------------------------------------------------------------------------
    def _note(self, epoch, epochs, step, batch_size, imgsz):
        if epoch is not None:
            self.epoch = epoch
        if epochs is not None:
            self.epochs = epochs
        if step is not None:
            self.step = step
        if batch_size is not None:
            self.batch_size = batch_size
        if imgsz is not None:
            self.imgsz = imgsz

    def send(self, event_type, epoch=None, epochs=None, batch=None, batches=None, step=None,
             batch_size=None, imgsz=None, loss=None, lr=None, memory=False):
        """Record progress and send one event (when a recorder is attached).

        Numbers that are None, negative or not numbers are left out; ``loss`` may be a CPU tensor
        (a CUDA tensor is skipped rather than synchronised). ``memory`` adds this process's RSS
        and torch's allocator statistics. Returns True when the event went out.
        """
        if not self.enabled:
            return False
        epoch, epochs, step = _int_or_none(epoch), _int_or_none(epochs), _int_or_none(step)
        batch_size, imgsz = _int_or_none(batch_size), _imgsz(imgsz)
        self._note(epoch, epochs, step, batch_size, imgsz)
        if self.client is None:
            return False
        if not self._hello_sent:
            self._hello_sent = True
            self.client.send("hello", {"framework": self.framework, "gpu": _torch.cuda_device_index(),
                                       "rank": _int_or_none(os.environ.get("RANK"))})
        fields = {"framework": self.framework, "epoch": epoch, "epochs": epochs,
                  "batch": _int_or_none(batch), "batches": _int_or_none(batches), "step": step,
                  "batch_size": batch_size, "imgsz": imgsz, "loss": _torch.as_float(loss),
                  "lr": _torch.as_float(lr)}
        if memory:
            fields["rss_bytes"] = self.proc.rss_bytes()
            fields["torch"] = _torch.torch_memory()
            fields["gpu"] = _torch.cuda_device_index()
        return self.client.send(event_type, fields)

    def batch_end(self, epoch=None, batch=None, batch_size=None, loss=None, step=None, epochs=None,
                  batches=None, lr=None):
        """A batch finished: a (thinned) batch_end event, then a line if one is due."""
        if not self.enabled:
            return
        now = time.monotonic()
        if self.client is not None and now >= self._next_batch_event:
            self._next_batch_event = now + self.batch_gap_s
            self.send("batch_end", epoch=epoch, epochs=epochs, batch=batch, batches=batches, step=step,
                      batch_size=batch_size, loss=loss, lr=lr)
        else:
            self._note(_int_or_none(epoch), _int_or_none(epochs), _int_or_none(step),
                       _int_or_none(batch_size), None)
        if now >= self._next_print:
            self.maybe_print(now)

    def epoch_end(self, epoch=None, epochs=None, loss=None, batch_size=None, imgsz=None, step=None,
                  kind="epoch_end"):
        """An epoch (``kind="epoch_end"``) or its validation (``"val_end"``) finished: an event
        with memory figures, then a line if one is due."""
        if not self.enabled:
            return
        # The epoch hooks of some frameworks (Lightning) do not see the batch: use the last known.
        if batch_size is None:
            batch_size = self.batch_size
        if imgsz is None:
            imgsz = self.imgsz
        self.send(kind, epoch=epoch, epochs=epochs, loss=loss, batch_size=batch_size, imgsz=imgsz,
                  step=step, memory=True)
        self.maybe_print()

    # ---- the resource line -------------------------------------------------------------------
    def maybe_print(self, now=None):
        """Print the resource line when ``interval`` has passed since the last one.

        Returns the line printed, or None.
        """
        if not self.enabled or self.interval is None or self.interval < 0:
            return None
        now = time.monotonic() if now is None else now
        if now < self._next_print:
            return None
        self._next_print = now + self.interval
        line = self.resource_line()
        self._emit(line)
        if self.client is not None:
            self.send("memory", memory=True)
        return line

    def resource_line(self, epoch=None, epochs=None, step=None):
        """The resource line now (progress from the arguments or the last event). Never raises."""
        torch_mem = _torch.torch_memory()
        snap = None
        try:
            snap = self.snapshots.read()
        except Exception:  # a surprising file must not break training
            snap = None
        gpus = snap.get("gpus") if isinstance(snap, dict) else None
        if not isinstance(gpus, list) or not all(isinstance(g, dict) for g in gpus):
            gpus = None
        if self.snapshots.notice:
            self._emit(self.snapshots.notice)
            self.snapshots.notice = None
        line = _format.format_resource_line(
            gpus=gpus, memory=self.proc.memory(), cpu_pct=self.proc.cpu_percent(),
            rss_bytes=self.proc.rss_bytes(), torch_mem=torch_mem,
            epoch=self.epoch if epoch is None else epoch,
            epochs=self.epochs if epochs is None else epochs,
            step=self.step if step is None else step)
        self.last_line = line
        return line

    def _emit(self, line):
        self.lines_printed += 1
        logger = self.logger
        if logger is None and _log.hasHandlers() and _log.isEnabledFor(logging.INFO):
            logger = _log
        if isinstance(logger, logging.Logger):
            logger.info(line)
            return
        if callable(logger):
            try:
                logger(line)
                return
            except Exception:
                pass
        stream = self.stream or sys.stderr
        try:
            stream.write(line + "\n")
            stream.flush()
        except Exception:
            pass

    # ---- plain loops (trainmon.step) ---------------------------------------------------------
    def loop_step(self, epoch=None, batch=None, batch_size=None, loss=None, epochs=None, step=None,
                  lr=None, imgsz=None):
        """trainmon.step(): infers epoch boundaries from a changing ``epoch`` and counts batches."""
        if not self.enabled:
            return
        epoch = _int_or_none(epoch)
        if imgsz is not None:
            self.imgsz = _imgsz(imgsz)
        if epoch is not None and epoch != self._loop_epoch:
            if self._loop_epoch is not None:
                self.epoch_end(epoch=self._loop_epoch, epochs=epochs, batch_size=batch_size, imgsz=self.imgsz)
            self._loop_epoch = epoch
            self._loop_batch = -1
            self.send("epoch_start", epoch=epoch, epochs=epochs, batch_size=batch_size, imgsz=self.imgsz)
        self._loop_batch = _int_or_none(batch) if batch is not None else self._loop_batch + 1
        self.batch_end(epoch=epoch, batch=self._loop_batch, batch_size=batch_size, loss=loss, step=step,
                       epochs=epochs, lr=lr)

    def loop_finish(self, failed=False):
        """End of a plain loop: the owed epoch_end, then train_end."""
        if not self.enabled:
            return
        if self._loop_epoch is not None:
            self.epoch_end(epoch=self._loop_epoch, epochs=self.epochs, batch_size=self.batch_size,
                           imgsz=self.imgsz)
            self._loop_epoch = None
        self.send("train_end", epoch=self.epoch, epochs=self.epochs, memory=True)

    def close(self):
        """Close the socket and stop an agent this Monitor started. Idempotent."""
        if self.client is not None:
            self.client.close()
        self.snapshots.close()
