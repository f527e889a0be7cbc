# SPDX-License-Identifier: Apache-2.0
"""Monitor: the one object every integration drives (Ultralytics, Lightning, Hugging Face, loops,
the zero-code hook).

A hook call costs a clock read and, when it sends an event, one JSON encode and one non-blocking
send (tens of microseconds); batch events go out at most ``batch_events_per_s`` times a second,
each carrying the step-timing window since the previous one (_timing). Every ``interval`` seconds
a printing Monitor also prints the resource line, which reads three /proc files, the snapshot file
and, with CUDA, torch's allocator statistics (well under a millisecond). Nothing waits on the
recorder, on the GPU or on a sleep, and no method raises into the training code.
"""

import logging
import math
import os
import sys
import time

from . import _format, _identity, _proc, _timing, _torch
from ._client import process_client
from ._snapshot import SnapshotSource
from ._values import MAX_EXACT_INT, int_in, num_in, text

__all__ = ["Monitor"]

_log = logging.getLogger("trainmon")
_mono = time.monotonic
_BIG = 10 ** 15  # batches, steps (the protocol's bound)
_J_LOOP, _JOURNAL_CAP = _timing.J_LOOP, _timing._JOURNAL_CAP


def _int_or_none(value, hi=_BIG):
    return int_in(value, 0, hi)


def _imgsz(value):
    """Largest side of an image size given as an int or a [h, w] list; None otherwise."""
    try:
        if isinstance(value, (list, tuple)):
            sides = [int_in(v, 1, 1_000_000) for v in value[:8]]
            sides = [s for s in sides if s]
            return max(sides) if sides else None
    except Exception:
        return None
    return int_in(value, 1, 1_000_000)


def _interval(value):
    """Seconds between lines: a number >= 0 (inf: the first line only), or None (never print)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        f = float(value)
    except Exception:
        return None
    if math.isnan(f) or f < 0:
        return None
    return f


def _env_get(env, name):
    try:
        v = env.get(name)
        return v if isinstance(v, str) else None
    except Exception:
        return None


class Monitor:
    """Prints the resource line at most every ``interval`` seconds and sends training events.

    interval: seconds between printed lines (the first call prints); 0 prints at every call,
        None or a negative number never prints. Only global rank 0 prints (or a process whose
        rank is unknown); a printing Monitor says so in its hello (``lines``) so that
        ``trainmon run`` prints none of its own.
    framework: name sent with every event ("loop", "ultralytics", "lightning", "transformers",
        "torch").
    logger: a logging.Logger (or any callable taking the line) to print through; None uses the
        "trainmon" logger when logging is configured, else writes to ``stream`` (sys.stderr).
    send_events: send events when TRAINMON_EVENTS_SOCKET is set (under ``trainmon run``).
    batch_events_per_s: most batch_end events sent per second (0: every batch); epoch events
        are never thinned. Thinning loses no step: each event carries the window since the last.
    start_agent: outside ``trainmon run``, start ``trainmon agent`` for GPU data if none runs.
    Set TRAINMON_DISABLE=1 to turn every Monitor into a no-op. Nothing here raises.
    """

    def __init__(self, interval=30.0, framework="loop", logger=None, stream=None, send_events=True,
                 batch_events_per_s=10.0, start_agent=True, proc_root="/proc", env=None):
        self.enabled = False
        self.client = None
        self.interval = None
        self.framework = "loop"
        self.lines_printed = 0
        self.last_line = None
        self._pending = None
        self.timer = _timing.timer()
        self._journal = self.timer.journal  # one list for the life of the process (loop_step appends)
        self._hot = self.timer._hot
        self.report_level = None  # the zero-code Monitor reports only while nothing outranks it
        try:
            self._setup(interval, framework, logger, stream, send_events, batch_events_per_s,
                        start_agent, proc_root, env)
        except Exception:
            self.enabled = False
            self.client = None

    def _setup(self, interval, framework, logger, stream, send_events, batch_events_per_s, start_agent,
               proc_root, env):
        env = os.environ if env is None else env
        if not hasattr(env, "get"):
            env = {}
        self.env = env
        self.interval = _interval(interval)
        self.framework = text(framework, 128) or "loop"
        self.logger = logger
        self.stream = stream
        rate = num_in(batch_events_per_s, 0, 1e9)
        self.batch_gap_s = 1.0 / rate if rate else 0.0
        self.proc = _proc.ProcReader(proc_root if isinstance(proc_root, str) else "/proc")
        self._next_print = 0.0  # monotonic time of the next allowed line
        self._next_batch_event = 0.0
        self._pending = None  # (epoch, epochs, step, batch_size) of the last unsent batch_end
        self._loop_claimed = False
        # Progress as last reported (0-based epoch), for lines printed from any hook.
        self.epoch = None
        self.epochs = None
        self.step = None
        self.batch_size = None
        self.imgsz = None
        # Plain-loop tracking (trainmon.step): the epoch whose epoch_end is still owed.
        self._loop_epoch = None
        self._loop_epoch_raw = None  # the object last passed as epoch (a cheap "unchanged" test)
        self._loop_batch = -1
        self.snapshots = SnapshotSource(start_agent=bool(start_agent), env=env)
        self.enabled = _env_get(env, "TRAINMON_DISABLE") != "1"
        socket_path = _env_get(env, "TRAINMON_EVENTS_SOCKET")
        if send_events and socket_path and self.enabled:
            self.client = process_client(socket_path, _env_get(env, "TRAINMON_RUN_ID"))
            self.timer.attach_client(self.client)
        # The hooks compare the clock with these two before doing anything else per batch.
        if self.client is None:
            self._next_batch_event = math.inf
        if self.interval is None:
            self._next_print = math.inf
        if self.enabled and self.interval is not None:
            self.timer.line_wanted = True
            self._update_lines()

    # ---- counters ----------------------------------------------------------------------------
    @property
    def sent(self):
        """Events the kernel accepted for the recorder (this process's connection)."""
        return self.client.sent if self.client else 0

    @property
    def dropped(self):
        """Events not delivered (recorder slow, gone, or a message that could not be encoded)."""
        return self.client.dropped if self.client else 0

    # ---- who prints --------------------------------------------------------------------------
    def _prints(self):
        if not self.enabled or self.interval is None:
            return False
        return _identity.rank_of(self.env) in (None, 0)

    def _update_lines(self):
        _identity.set_lines(self, self.interval if self._prints() else None)

    # ---- events ------------------------------------------------------------------------------
    def _apply_pending(self):
        p = self._pending
        if p is not None:
            self._pending = None
            self._note(_int_or_none(p[0], 10 ** 9), _int_or_none(p[1], 10 ** 9), _int_or_none(p[2]),
                       int_in(p[3], 1, 10_000_000), None)

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
             batch_size=None, imgsz=None, loss=None, lr=None, memory=False, steps=None):
        """Record progress and send one event (when a recorder is attached).

        Numbers that are None, out of the protocol's range or not numbers are left out; ``loss``
        may be a CPU tensor (a CUDA tensor is skipped rather than synchronised). ``memory`` adds
        this process's RSS and torch's allocator statistics; ``steps`` a timing window.
        Returns True when the event went out. Never raises.
        """
        if not self.enabled:
            return False
        try:
            self._apply_pending()
            epoch, epochs = _int_or_none(epoch, 10 ** 9), _int_or_none(epochs, 10 ** 9)
            step = _int_or_none(step)
            batch_size, imgsz = int_in(batch_size, 1, 10_000_000), _imgsz(imgsz)
            self._note(epoch, epochs, step, batch_size, imgsz)
            client = self.client
            if client is None:
                return False
            if not client.available():  # recorder gone: do not even build the message
                client.drop()
                return False
            _identity.announce(client, self.timer.framework or self.framework, _mono(), env=self.env)
            fields = {"framework": self.framework, "epoch": epoch, "epochs": epochs,
                      "batch": _int_or_none(batch), "batches": _int_or_none(batches), "step": step,
                      "batch_size": batch_size, "imgsz": imgsz, "loss": num_in(loss, -1e30, 1e30),
                      "lr": num_in(lr, 0, 1e6)}
            if memory:
                fields["rss_bytes"] = int_in(self.proc.rss_bytes(), 0, MAX_EXACT_INT)
                fields["torch"] = _torch.torch_memory()
                fields["gpu"] = int_in(_torch.cuda_device_index(), 0, 1023)
            if steps is not None:
                fields["steps"] = steps
            return client.send(event_type, fields)
        except Exception:
            return False

    def due(self, now):
        """True when a batch_end at ``now`` would send an event or print a line (the hooks read
        the trainer's attributes only then)."""
        return now >= self._next_batch_event or now >= self._next_print

    def _reports(self):
        return self.report_level is None or self.timer.level == self.report_level

    def _window(self):
        """The timing window for an event now, or None (no client, outranked, recorder gone: the
        window then stays for a later event, so no step is lost)."""
        c = self.client
        if c is None or not self._reports() or not c.available():
            return None
        return self.timer.take_window()

    def batch_end(self, epoch=None, batch=None, batch_size=None, loss=None, step=None, epochs=None,
                  batches=None, lr=None):
        """A batch finished: a (thinned) batch_end event with the timing window, then a line if
        one is due. Step timing itself is marked on the timer by the caller."""
        if not self.enabled:
            return
        try:
            now = _mono()
            client = self.client
            if client is not None and now >= self._next_batch_event and self._reports():
                self._next_batch_event = now + self.batch_gap_s
                if not client.available():  # recorder gone: the window waits for a later event
                    client.drop()
                    return
                self.send("batch_end", epoch=epoch, epochs=epochs, batch=batch, batches=batches, step=step,
                          batch_size=batch_size, loss=loss, lr=lr, steps=self.timer.take_window())
            else:  # checked only when a line or an event needs them (this path runs per batch)
                self._pending = (epoch, epochs, step, batch_size)
            if now >= self._next_print:
                self.maybe_print(now)
        except Exception:
            pass

    def epoch_end(self, epoch=None, epochs=None, loss=None, batch_size=None, imgsz=None, step=None,
                  kind="epoch_end"):
        """An epoch (``kind="epoch_end"``) or its validation (``"val_end"``) finished: an event
        with memory figures and the timing window, then a line if one is due."""
        if not self.enabled:
            return
        try:
            # The epoch hooks of some frameworks (Lightning) do not see the batch: use the last known.
            if batch_size is None:
                batch_size = self.batch_size
            if imgsz is None:
                imgsz = self.imgsz
            kind = kind if kind in ("epoch_end", "val_end") else "epoch_end"
            steps = self._window()
            self.send(kind, epoch=epoch, epochs=epochs, loss=loss, batch_size=batch_size, imgsz=imgsz,
                      step=step, memory=True, steps=steps)
            self.maybe_print()
        except Exception:
            pass

    def train_end(self, epoch=None, epochs=None, step=None):
        """Training finished: train_end with memory figures and the last timing window; the
        heartbeat pauses until a next step."""
        if not self.enabled:
            return
        try:
            steps = self._window()
            if self._reports():
                self.timer.ended = True
            self.send("train_end", epoch=epoch, epochs=epochs, step=step, memory=True, steps=steps)
        except Exception:
            pass

    # ---- the resource line -------------------------------------------------------------------
    def maybe_print(self, now=None):
        """Print the resource line when ``interval`` has passed since the last one (global rank
        0 or an unknown rank only). Returns the line printed, or None."""
        try:
            if not self.enabled or self.interval is None:
                return None
            now = _mono() if now is None else now
            if now < self._next_print:
                return None
            self._next_print = now + self.interval
            self._update_lines()
            if not self._prints():
                return None
            line = self.resource_line(train=self.timer.take_line())
            self._emit(line)
            if self.client is not None:
                self.send("memory", memory=True)
            return line
        except Exception:
            return None

    def resource_line(self, epoch=None, epochs=None, step=None, train=None):
        """The resource line now (progress from the arguments or the last event; ``train`` the
        training figures, by default those since the last printed line). Never raises."""
        try:
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
            self._apply_pending()
            if train is None:
                train = self.timer.take_line(reset=False)
            line = _format.format_resource_line(
                gpus=gpus, memory=self.proc.memory(), cpu_pct=self.proc.cpu_percent(),
                rss_bytes=self.proc.rss_bytes(), torch_mem=torch_mem,
                epoch=self.epoch if epoch is None else epoch,
                epochs=self.epochs if epochs is None else epochs,
                step=self.step if step is None else step, train=train)
            self.last_line = line
            return line
        except Exception:
            return "Resource: "

    def _emit(self, line):
        self.lines_printed += 1
        logger = self.logger
        try:
            if logger is None and _log.hasHandlers() and _log.isEnabledFor(logging.INFO):
                logger = _log
            if isinstance(logger, logging.Logger):
                logger.info(line)
                return
        except Exception:
            logger = None
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
    def claim_loop(self):
        """This Monitor reports a plain loop: loop step marks outrank the zero-code hook."""
        if not self._loop_claimed and self.enabled:
            self._loop_claimed = True
            self.timer.claim(_timing.LOOP, self.framework)

    def release_loop(self):
        if self._loop_claimed:
            self._loop_claimed = False
            self.timer.release(_timing.LOOP)

    def loop_step(self, epoch=None, batch=None, batch_size=None, loss=None, epochs=None, step=None,
                  lr=None, imgsz=None):
        """trainmon.step(): marks the end of a step on the timer, infers epoch boundaries from a
        changing ``epoch`` and counts batches."""
        if not self.enabled:
            return
        try:
            t = _mono()
            if not self._loop_claimed:
                self.claim_loop()
            if imgsz is not None:
                self.imgsz = _imgsz(imgsz)
            if epoch is not None and epoch is not self._loop_epoch_raw:
                self._loop_epoch_raw = epoch
                epoch = _int_or_none(epoch, 10 ** 9)
                if epoch is not None and epoch != self._loop_epoch:
                    if self._loop_epoch is not None:  # the step that just ended is the new epoch's
                        self.epoch_end(epoch=self._loop_epoch, epochs=epochs, batch_size=batch_size,
                                       imgsz=self.imgsz)
                    self._loop_epoch = epoch
                    self._loop_batch = -1
                    self.send("epoch_start", epoch=epoch, epochs=epochs, batch_size=batch_size, imgsz=self.imgsz)
            # timer.journal_loop_step, inline (this runs per step)
            hot = self._hot
            if hot.level <= _timing.LOOP:
                journal = self._journal
                journal.append((_J_LOOP, t, None if batch_size is None else int_in(batch_size, 1, 10_000_000),
                                hot.comm))
                if hot.phase != "compute":
                    hot.phase = "compute"
                    hot.phase_mt = t
                if len(journal) > _JOURNAL_CAP:
                    self.timer.drain()
            if batch is None:
                self._loop_batch += 1
            else:
                b = _int_or_none(batch)
                self._loop_batch = b if b is not None else self._loop_batch + 1
            if t >= self._next_batch_event or t >= self._next_print:
                self.batch_end(epoch=self._loop_epoch, batch=min(self._loop_batch, _BIG), batch_size=batch_size,
                               loss=loss, step=step, epochs=epochs, lr=lr)
            else:
                self._pending = (self._loop_epoch, epochs, step, batch_size)
        except Exception:
            pass

    def loop_finish(self, failed=False):
        """End of a plain loop: the owed epoch_end, then train_end."""
        if not self.enabled:
            return
        try:
            if self._loop_epoch is not None:
                self.epoch_end(epoch=self._loop_epoch, epochs=self.epochs, batch_size=self.batch_size,
                               imgsz=self.imgsz)
                self._loop_epoch = None
                self._loop_epoch_raw = None
            self.train_end(epoch=self.epoch, epochs=self.epochs)
        except Exception:
            pass

    def close(self):
        """Close the socket and stop an agent this Monitor started. Idempotent; never raises."""
        try:
            _identity.set_lines(self, None)
            self.release_loop()
            if self.client is not None:
                self.client.close()
            self.snapshots.close()
        except Exception:
            pass
