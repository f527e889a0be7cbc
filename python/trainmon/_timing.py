# SPDX-License-Identifier: Apache-2.0
"""Step timing: one timer per process (docs/python.md, "Step timing").

Every source of step marks feeds the same StepTimer: the zero-code hook (DataLoader iterators'
next() and optimizer steps), ``trainmon.loader`` + ``trainmon.step`` (plain loops) and the framework
callbacks (batch-start / batch-end hooks). Sources have levels (AUTO < LOOP < FRAMEWORK); while a
higher level is claimed, lower ones are ignored, so nothing is counted twice:
 - step ends come only from the highest level claimed;
 - loader waits come from ``trainmon.loader`` or the zero-code DataLoader hook (the outermost of the
   two when nested) unless a framework callback is claimed (its data wait is its hook gap).

Clock: time.monotonic() everywhere (CLOCK_MONOTONIC, the clock the recorder compares ``mt``
against; on Linux time.perf_counter() reads the same clock). Every method takes its times as
arguments so that tests can drive it with exact values; the hot paths cost a few dict and list
operations, no allocation beyond a tuple per batch, no system call but the clock.

Loop and zero-code steps (``_loop_step_end``):
 - A loader becomes *training* when a step ends right after one of its batches, or when a step
   ends between two of its batches taken from the same iterator. Other loaders (evaluation) are
   never credited: their waits are not data wait, and their time is not step time.
 - A step starts at the end of the previous step, unless a loader that is not training was used
   in between (an evaluation loop): then it starts at the first activity (iter() or next()) of a
   training loader after that. The first step starts at the first such activity.
 - Data wait: the time inside next() (and iter(), which starts the workers) of training loaders
   since the step started; samples: the first dimension of those batches, summed over
   micro-batches (gradient accumulation), else the batch size the caller gave.
 - Zero-code: an optimizer step ends a step when a batch arrived since the previous step, or,
   without a new batch, when it is the optimizer that ended the previous step; another optimizer
   stepping in the same iteration (GANs: D then G) belongs to that iteration.
Framework steps: data wait = from the previous batch-end (or the loop's resumption after an
evaluation / an epoch boundary) to the batch-start hook; step = from there to the batch-end hook.
"""

import math
import os
import threading
import time

from ._values import batch_samples, int_in

__all__ = ["AUTO", "LOOP", "FRAMEWORK", "StepTimer", "timer", "TimedIterable", "loader"]

AUTO, LOOP, FRAMEWORK = 0, 1, 2
_mono = time.monotonic
_wall = time.time
_WINDOW_CAP = 1 << 20     # steps kept for a window's percentiles (n, sum stay exact beyond)
_LINE_CAP = 8192          # step times kept for the resource line's median (decimated beyond)
_LOG_CAP = 4096           # loader activities kept between two steps (evaluation loops are long)
_LOADERS_CAP = 256
_MAX_S = 1e7              # the protocol's bound for a duration, seconds
_PCTS = (("p50", 0.50), ("p90", 0.90), ("p99", 0.99))

_tls = threading.local()  # .depth: inside a timed next()/iter() of this thread (nesting: count once)


def _round(x):
    return round(x, 6) if 0.0 <= x <= _MAX_S else (0.0 if not x > 0.0 else _MAX_S)


def _stats(values, total):
    """sum, min, max and nearest-rank percentiles of ``values`` (seconds, each 0..1e7)."""
    n = len(values)
    if n == 1:
        v = _round(values[0])
        return {"sum": _round(total), "min": v, "max": v, "p50": v, "p90": v, "p99": v}
    s = sorted(values)
    out = {"sum": _round(total), "min": _round(s[0]), "max": _round(s[-1])}
    for name, q in _PCTS:
        out[name] = _round(s[max(0, int(math.ceil(q * n)) - 1)])
    return out


class _Loader:
    """What the timer knows about one loader (a DataLoader's dataset, or a wrapped iterable)."""

    __slots__ = ("training", "it", "steps_seen", "epochs")

    def __init__(self):
        self.training = False
        self.it = None          # id of the iterator that gave its last batch (None: ended / new)
        self.steps_seen = -1    # timer.steps at its last batch
        self.epochs = 0         # training epochs it finished (StopIteration)


class StepTimer:
    """The process's step timer; see the module docstring. Use ``timer()``."""

    def __init__(self):
        self._tls = _tls
        self._claims = [1, 0, 0]
        self._frameworks = [None, None, None]
        self.level = AUTO
        self.framework = None
        self.collect = False      # a recorder client exists: keep windows
        self.line_wanted = False  # a printing Monitor exists: keep the line's figures
        self._client = None
        self._reset_measurements()

    # ---- state ---------------------------------------------------------------------------------
    def _reset_measurements(self):
        now = _mono()
        self._pid = os.getpid()
        self.phase = "idle"
        self.phase_mt = now
        self.steps = 0
        self.samples = 0
        self.samples_known = False
        self.step_s = 0.0
        self.data_s = 0.0
        self.data_known = False
        self.last_mt = None
        self.last_t = None
        self.ended = False
        self._hb = None
        self._hb_stop = threading.Event()
        # window (sent on batch_end / epoch_end / val_end / train_end)
        self._w_step = []
        self._w_data = []
        self._w_n = 0
        self._w_sum = 0.0
        self._w_dsum = 0.0
        self._w_data_ok = True
        self._w_samples = 0
        self._w_samples_ok = True
        self._w_start = None
        self._w_end = None
        # the resource line's interval
        self._l_step = []
        self._l_stride = 1
        self._l_skip = 0
        self._l_n = 0
        self._l_sum = 0.0
        self._l_data = 0.0
        self._l_data_ok = True
        self._l_samples = 0
        self._l_samples_ok = True
        # loops and the zero-code hook
        self._loaders = {}
        self._log = []            # (loader or None, t0, wait_s, samples: >0, 0 none, -1 unknown)
        self._last_loader = None
        self._batch_since = False
        self._last_opt = None
        self._prev_end = None
        self._armed = None
        self.loaders_seen = False
        # framework hooks
        self._f_start = None
        self._f_in_batch = False
        self._f_step_start = None
        self._f_data = None
        self._f_samples = None

    def _after_fork(self):
        # A forked child is a new sender: no totals, no heartbeat thread (threads do not survive a
        # fork), no loader history. Claims and configuration stay (same code, same callbacks).
        self._reset_measurements()

    # ---- levels ----------------------------------------------------------------------------------
    def claim(self, level, framework=None):
        """A source of ``level`` is active (callbacks: from their construction to train end)."""
        try:
            self._claims[level] += 1
            if framework:
                self._frameworks[level] = framework
            self._update_level()
        except Exception:
            pass

    def release(self, level):
        """Undo one claim(level). Never raises."""
        try:
            if level > AUTO and self._claims[level] > 0:
                self._claims[level] -= 1
            self._update_level()
        except Exception:
            pass

    def _update_level(self):
        for lv in (FRAMEWORK, LOOP, AUTO):
            if self._claims[lv] > 0:
                self.level = lv
                self.framework = self._frameworks[lv]
                return

    def attach_client(self, client):
        """An event client exists: keep windows, and start the heartbeat with the first step."""
        if client is not None:
            self._client = client
            self.collect = True

    def set_phase(self, phase, t):
        if phase != self.phase:
            self.phase = phase
            self.phase_mt = t

    def arm(self, t):
        """Start of a loop (trainmon.session): the first step starts here when no loader tells."""
        if self._armed is None and self._prev_end is None:
            self._armed = t

    # ---- loaders (zero-code hook, trainmon.loader) -----------------------------------------------
    def _loader(self, key):
        rec = self._loaders.get(key)
        if rec is None:
            if len(self._loaders) >= _LOADERS_CAP:
                self._loaders.clear()
            rec = self._loaders[key] = _Loader()
        return rec

    def _add_log(self, entry):
        log = self._log
        log.append(entry)
        if len(log) > _LOG_CAP:
            # Keep what could still be credited: the entries after the last non-training one,
            # which becomes a marker (rec None: "not step time before this").
            cut = None
            for i in range(len(log) - 1, -1, -1):
                rec = log[i][0]
                if rec is None or not rec.training:
                    cut = i
                    break
            if cut:
                del log[:cut]
                log[0] = (None, log[0][1], 0.0, 0)
            else:  # thousands of training batches and no step: keep the latest half
                log[:] = log[:1] + log[-(_LOG_CAP // 2):] if cut == 0 else log[-(_LOG_CAP // 2):]

    def loader_enter(self, key, t0):
        """A next() or iter() on loader ``key`` begins: the loop waits for data (unless this loader
        is known not to be training: an evaluation loop, phase idle)."""
        if self.level > LOOP:
            return
        rec = self._loaders.get(key)
        if rec is None or rec.training or not self.steps:
            self.set_phase("data", t0)

    def loader_iter(self, key, t0, t1):
        """iter() of loader ``key`` took t0..t1 (it starts the worker processes)."""
        if self.level > LOOP:
            return
        rec = self._loader(key)
        rec.it = None
        self._add_log((rec, t0, t1 - t0, 0))
        self.loaders_seen = True

    def loader_batch(self, key, it_id, t0, t1, batch):
        """next() of iterator ``it_id`` of loader ``key`` returned ``batch`` after t0..t1."""
        if self.level > LOOP:
            return
        rec = self._loader(key)
        steps = self.steps
        if rec.it == it_id and rec.steps_seen != steps:
            rec.training = True  # a step ended between two batches of one iterator
        rec.it = it_id
        rec.steps_seen = steps
        n = batch_samples(batch)
        self._add_log((rec, t0, t1 - t0, -1 if n is None else n))
        self._last_loader = rec
        self._batch_since = True
        self.loaders_seen = True
        self.set_phase("compute" if rec.training or not steps else "idle", t1)

    def loader_stop(self, key, t0, t1):
        """next() of loader ``key`` raised StopIteration after t0..t1. Returns the number of the
        training epoch that ended (0-based) when ``key`` is a training loader, else None."""
        if self.level > LOOP:
            return None
        rec = self._loader(key)
        rec.it = None
        self._add_log((rec, t0, t1 - t0, 0))
        if not rec.training:
            self.set_phase("idle" if self.steps else self.phase, t1)
            return None
        rec.epochs += 1
        self.set_phase("idle", t1)  # outside the training loop: epoch end, evaluation, saving
        return rec.epochs - 1

    def training_epochs(self):
        """Epochs finished by the busiest training loader (0 before the first)."""
        return max([r.epochs for r in self._loaders.values() if r.training] or [0])

    # ---- step ends: loops and the zero-code hook --------------------------------------------------
    def optimizer_step(self, opt_id, t):
        """An optimizer finished step() (zero-code hook). True when it ended a counted step."""
        if self.level != AUTO:
            return False
        if not self._batch_since and self._last_opt is not None and opt_id != self._last_opt:
            return False  # a second optimizer in the same iteration
        self._last_opt = opt_id
        return self._loop_step_end(t, None)

    def loop_step(self, t, batch_size=None):
        """trainmon.step(): a step of a plain loop ended at ``t``. True when it was counted."""
        if self.level > LOOP:
            return False
        return self._loop_step_end(t, int_in(batch_size, 1, 10_000_000))

    def _loop_step_end(self, t, given_samples):
        log = self._log
        last = self._last_loader
        if last is not None:
            last.training = True
        cut = -1
        for i in range(len(log) - 1, -1, -1):
            rec = log[i][0]
            if rec is None or not rec.training:
                cut = i
                break
        start = None
        data = 0.0
        samples = 0
        samples_ok = True
        batches = 0
        for j in range(cut + 1, len(log)):
            _rec, t0, wait, n = log[j]
            if start is None:
                start = t0
            data += wait
            if n > 0:
                samples += n
                batches += 1
            elif n < 0:
                samples_ok = False
                batches += 1
        prev = self._prev_end
        if cut < 0 and prev is not None:
            start = prev
        elif start is None:  # no training activity: after an evaluation, from its end
            if cut >= 0:
                start = log[cut][1] + log[cut][2]
            else:
                start = prev if prev is not None else self._armed
        log.clear()
        self._batch_since = False
        self._last_loader = None
        self.set_phase("compute", t)  # what follows belongs to the next step
        if start is None:  # nothing to measure the first step from: it starts the clock
            self._prev_end = t
            return False
        self._prev_end = t
        self._record(start, t, data if self.loaders_seen else None,
                     samples if batches and samples_ok else given_samples)
        return True

    # ---- step ends: framework hooks ----------------------------------------------------------------
    def batch_start(self, t, samples=None, level=FRAMEWORK):
        """A framework's batch-start hook: the batch has arrived; data wait ends."""
        if level < self.level:
            return
        start = self._f_start
        if start is None:
            start = t  # after a pause without resumption: the wait is not known, count none
        self._f_step_start = start
        self._f_data = t - start
        self._f_samples = samples
        self._f_in_batch = True
        self.set_phase("compute", t)

    def batch_end(self, t, samples=None, level=FRAMEWORK):
        """A framework's batch-end hook. True when a step was counted."""
        if level < self.level:
            return False
        if self._f_in_batch:
            start, data = self._f_step_start, self._f_data
            if self._f_samples is not None:
                samples = self._f_samples
        else:  # no batch-start hook: the step runs from the previous batch end, data unknown
            start, data = self._f_start, None
        self._f_in_batch = False
        self._f_start = t
        self.set_phase("data", t)
        if start is None:
            return False
        self._record(start, t, data, samples)
        return True

    def pause(self, t, level=FRAMEWORK):
        """The framework left the training loop (evaluation, epoch end): not step time."""
        if level < self.level:
            return
        self._f_start = None
        self._f_in_batch = False
        self.set_phase("idle", t)

    def resume(self, t, level=FRAMEWORK):
        """The framework goes back to training (evaluation done, epoch start): the next step's data
        wait starts here."""
        if level < self.level:
            return
        if not self._f_in_batch:
            self._f_start = t
            self.set_phase("data", t)

    # ---- recording -----------------------------------------------------------------------------
    def _record(self, start, end, data, samples):
        d = end - start
        if not d > 0.0:
            d = 0.0
        if data is not None:
            data = 0.0 if not data > 0.0 else (d if data > d else data)
        self.steps += 1
        self.step_s += d
        if data is not None:
            self.data_s += data
            self.data_known = True
        if samples is not None:
            self.samples += samples
            self.samples_known = True
        self.last_mt = end
        self.last_t = _wall()
        self.ended = False
        if self.collect:
            if self._w_start is None:
                self._w_start = start
            self._w_end = end
            self._w_n += 1
            self._w_sum += d
            if len(self._w_step) < _WINDOW_CAP:
                self._w_step.append(d)
            if data is None:
                self._w_data_ok = False
            else:
                self._w_dsum += data
                if len(self._w_data) < _WINDOW_CAP:
                    self._w_data.append(data)
            if samples is None:
                self._w_samples_ok = False
            else:
                self._w_samples += samples
            if self._hb is None and self._client is not None:
                self._start_heartbeat()
        if self.line_wanted:
            self._l_n += 1
            self._l_sum += d
            if data is None:
                self._l_data_ok = False
            else:
                self._l_data += data
            if samples is None:
                self._l_samples_ok = False
            else:
                self._l_samples += samples
            self._l_skip += 1
            if self._l_skip >= self._l_stride:
                self._l_skip = 0
                self._l_step.append(d)
                if len(self._l_step) >= _LINE_CAP:  # keep every other: the median stays fair
                    del self._l_step[::2]
                    self._l_stride *= 2

    def _common(self):
        total = {"steps": min(self.steps, 10 ** 15), "step_s": _round(self.step_s)}
        if self.samples_known:
            total["samples"] = min(self.samples, 10 ** 15)
        if self.data_known:
            total["data_s"] = _round(self.data_s)
        out = {"total": total}
        if self.last_mt is not None:
            out["last_step_t"] = self.last_t
            out["last_step_mt"] = self.last_mt
        out["phase"] = self.phase
        out["phase_mt"] = self.phase_mt
        return out

    def take_window(self):
        """The ``steps`` object of a batch_end / epoch_end / val_end / train_end message: the steps
        since the previous window (n may be 0), the totals, the last step and the phase. Starts a
        new window. Returns None when no step was ever timed."""
        if not self.steps:
            return None
        n = self._w_n
        out = {"n": min(n, 10 ** 9)}
        if n:
            if self._w_samples_ok:
                out["samples"] = min(self._w_samples, 10 ** 15)
            out["span_s"] = _round(self._w_end - self._w_start)
            out["step_s"] = _stats(self._w_step, self._w_sum)
            if self._w_data_ok and self._w_data:
                out["data_s"] = _stats(self._w_data, self._w_dsum)
        out.update(self._common())
        self._w_step = []
        self._w_data = []
        self._w_n = 0
        self._w_sum = 0.0
        self._w_dsum = 0.0
        self._w_data_ok = True
        self._w_samples = 0
        self._w_samples_ok = True
        self._w_start = None
        self._w_end = None
        return out

    def heartbeat_steps(self):
        """The ``steps`` object of a heartbeat: n 0, the totals, the last step and the phase."""
        out = {"n": 0}
        out.update(self._common())
        return out

    def take_line(self, reset=True):
        """Figures for the resource line since the previous taking: ``(samples_per_s,
        median_step_s, data_share_pct)``, each None when unknown; None when no step ended since.
        samples/s is samples over the summed step time; data share is data wait over it."""
        n, total = self._l_n, self._l_sum
        if not n:
            return None
        steps = sorted(self._l_step)
        median = steps[(len(steps) - 1) // 2] if steps else None
        rate = self._l_samples / total if self._l_samples_ok and total > 0 else None
        share = 100.0 * self._l_data / total if self._l_data_ok and total > 0 else None
        if not reset:
            return rate, median, share
        self._l_step = []
        self._l_stride = 1
        self._l_skip = 0
        self._l_n = 0
        self._l_sum = 0.0
        self._l_data = 0.0
        self._l_data_ok = True
        self._l_samples = 0
        self._l_samples_ok = True
        return rate, median, share

    # ---- heartbeat --------------------------------------------------------------------------------
    def _start_heartbeat(self):
        if self._pid != os.getpid():
            return
        try:
            t = threading.Thread(target=_heartbeat_loop, args=(self, self._client, self._hb_stop),
                                 name="trainmon-heartbeat", daemon=True)
            self._hb = t
            t.start()
        except Exception:  # no threads left (RuntimeError): no heartbeat, training goes on
            self._hb = False


#: A message goes out at least this often (seconds) while a process is timing steps.
HEARTBEAT_S = 1.0


def _heartbeat_loop(timer_, client, stop):
    """Send a heartbeat whenever no message went out for HEARTBEAT_S seconds; ends with the
    process (daemon), after a fork (the child has no such thread) or when the client changes."""
    started = time.monotonic()
    while not stop.is_set():
        try:
            if timer_._client is not client or timer_._pid != os.getpid():
                return
            # the client's clock; a first second of grace lets the hello go out first
            idle = time.monotonic() - max(client.last_send_mt, started)
            if idle < HEARTBEAT_S:
                stop.wait(HEARTBEAT_S - idle + 0.001)
                continue
            if timer_.ended:  # train_end went out: nothing to say until the next step
                stop.wait(HEARTBEAT_S)
                continue
            client.send("heartbeat", {"steps": timer_.heartbeat_steps()})
        except Exception:
            try:
                stop.wait(HEARTBEAT_S)
            except Exception:
                return


_timer = StepTimer()


def timer():
    """The process's StepTimer."""
    return _timer


def _reset_for_tests():
    """A fresh timer (tests only: claims and measurements of earlier tests are forgotten)."""
    global _timer
    old = _timer
    old._hb_stop.set()
    old._client = None
    _timer = StepTimer()
    return _timer


def _after_fork_in_child():
    try:
        _timer._after_fork()
    except Exception:
        pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# ---- trainmon.loader ---------------------------------------------------------------------------

class _TimedIterator:
    """The iterator of a TimedIterable: times each next() of the wrapped iterator."""

    __slots__ = ("_inner", "_key", "__weakref__")

    def __init__(self, inner, key):
        self._inner = inner
        self._key = key

    def __iter__(self):
        return self

    def __next__(self):
        T = _timer
        if T.level > LOOP or getattr(_tls, "depth", 0):
            return next(self._inner)
        t0 = _mono()
        try:
            T.loader_enter(self._key, t0)
        except Exception:
            pass
        _tls.depth = 1
        try:
            batch = next(self._inner)
        except StopIteration:
            _tls.depth = 0
            try:
                T.loader_stop(self._key, t0, _mono())
            except Exception:
                pass
            raise
        except BaseException:
            _tls.depth = 0
            raise
        _tls.depth = 0
        try:
            T.loader_batch(self._key, id(self), t0, _mono(), batch)
        except Exception:
            pass
        return batch


class TimedIterable:
    """What ``trainmon.loader(iterable)`` returns: iterates ``iterable`` unchanged and times every
    next() (and iter()) as data wait. Other attributes and len() are the wrapped object's."""

    def __init__(self, iterable):
        object.__setattr__(self, "_iterable", iterable)
        object.__setattr__(self, "_key", ("loader", id(iterable)))

    def __iter__(self):
        T = _timer
        if T.level > LOOP or getattr(_tls, "depth", 0):
            return _TimedIterator(iter(self._iterable), self._key)
        t0 = _mono()
        try:
            T.loader_enter(self._key, t0)
        except Exception:
            pass
        _tls.depth = 1
        try:
            inner = iter(self._iterable)
        finally:
            _tls.depth = 0
        try:
            T.loader_iter(self._key, t0, _mono())
        except Exception:
            pass
        return _TimedIterator(inner, self._key)

    def __len__(self):
        return len(self._iterable)

    def __getattr__(self, name):
        if name.startswith("__") or name in ("_iterable", "_key"):
            raise AttributeError(name)
        return getattr(self._iterable, name)

    def __repr__(self):
        try:
            return "trainmon.loader(%r)" % (self._iterable,)
        except Exception:
            return "trainmon.loader(...)"


def loader(iterable):
    """Wrap ``iterable`` (a DataLoader or any iterable) so that the time spent waiting in its
    next() is the step's data wait: ``for x, y in trainmon.loader(train_loader): ...``.
    Combined with the zero-code hook the wait is counted once. Never raises for the wrapping
    itself (iterating behaves exactly as the wrapped object does)."""
    return TimedIterable(iterable)
