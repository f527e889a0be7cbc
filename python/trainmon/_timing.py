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
_JOURNAL_CAP = 1024       # entries before the hot path drains itself (no window taken for long)
J_BATCH, J_ITER, J_STOP, J_OPT, J_LOOP, J_FSTART, J_FEND, J_PAUSE, J_RESUME = range(1, 10)
_MAX_S = 1e7              # the protocol's bound for a duration, seconds
_PCTS = (("p50", 0.50), ("p90", 0.90), ("p99", 0.99))

class _Hot:
    """What the per-step hooks read and write, in one small object (a few slots, next to each other
    in memory: between two hooks the training step evicts the caches, so every other object a hook
    touches costs a miss). One per StepTimer; the process's timer's is ``_tls``.

    depth, opt_depth: whether a timed call is in progress, so that nested ones count once: a
    trainmon.loader around a DataLoader (both timed), an optimizer step() calling super().step().
    One per process, not per thread (a thread-local costs a microsecond per step here): a loader
    that another thread iterates at the same moment is not timed.
    level: the timer's level (StepTimer.level reads it). phase, phase_mt: what the loop does since
    when (StepTimer.phase / phase_mt). report_at: monotonic time of the zero-code hook's next
    batch event (_auto).
    comm: seconds the training thread waited inside torch.distributed since timing began (None before
    the first collective; _collectives adds to it); every step end snapshots it in its journal entry.
    coll: while inside a collective, (op, seq, group, args, kwargs) of the call; coll_depth: whether a
    timed collective is in progress (nested ones count once)."""

    __slots__ = ("depth", "opt_depth", "level", "phase", "phase_mt", "report_at", "comm", "coll", "coll_depth")

    def __init__(self):
        self.depth = 0
        self.opt_depth = 0
        self.level = AUTO
        self.phase = "idle"
        self.phase_mt = 0.0
        self.report_at = 0.0
        self.comm = None
        self.coll = None
        self.coll_depth = 0


_Nesting = _Hot  # the former name
_tls = _Hot()
_coll_info = None  # _collectives.coll_info once that module is loaded (the `coll` object of a window)


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


# torch.Tensor and the C slot of len() for it (no Python frame, no torch.Size built; 0 for a 0-d
# tensor), once torch is imported (_learn_torch); None before.
_Tensor = None
_tensor_len = None


def _learn_torch():
    """Look for an imported torch (never imports it): fast_samples then reads a tensor's length
    directly."""
    global _Tensor, _tensor_len
    if _Tensor is not None:
        return
    try:
        import sys
        torch = sys.modules.get("torch")
        tensor = getattr(torch, "Tensor", None)
        length = getattr(getattr(getattr(torch, "_C", None), "_TensorBase", None), "__len__", None)
        if isinstance(tensor, type) and callable(length) and length(tensor([1, 2])) == 2:
            _tensor_len = length
            _Tensor = tensor
    except Exception:
        pass


def fast_samples(batch):
    """batch_samples() with the common shapes first (a torch tensor, or a tuple / list that starts
    with one); -1 when unknown. Never raises."""
    tb = type(batch)
    x = batch[0] if (tb is list or tb is tuple) and batch else batch
    if type(x) is _Tensor:  # (never when torch is not known: _Tensor is None)
        try:
            n = _tensor_len(x)
            return n if 0 < n <= 10_000_000 else -1
        except Exception:
            return -1
    if tb is dict:
        n = batch_samples(batch)
    else:
        try:
            n = (batch[0] if tb is tuple or tb is list else batch).shape[0]
            if type(n) is not int:
                n = batch_samples(batch)
        except Exception:
            n = batch_samples(batch)
    return n if n is not None and 0 < n <= 10_000_000 else -1


class _Loader:
    """What the timer knows about one loader (a DataLoader's dataset, or a wrapped iterable)."""

    __slots__ = ("key", "training", "it", "steps_seen", "epochs")

    def __init__(self, key):
        self.key = key
        self.training = False
        self.it = None          # id of the iterator that gave its last batch (None: ended / new)
        self.steps_seen = -1    # timer.steps at its last batch
        self.epochs = 0         # training epochs it finished (StopIteration)


class StepTimer:
    """The process's step timer; see the module docstring. Use ``timer()``."""

    # Slots: the hooks and the drain read and write these per step (a slot is a fixed offset; an
    # instance dict of this many keys is not specialised by CPython 3.11). __dict__ stays for tests.
    __slots__ = ("_tls", "_hot", "_claims", "_frameworks", "framework", "collect", "line_wanted", "_client",
                 "_pid", "steps", "samples", "samples_known", "step_s", "data_s",
                 "data_known", "last_mt", "ended", "_hb", "_hb_stop", "comm_s", "comm_known", "_prev_comm",
                 "_w_step", "_w_data", "_w_n", "_w_sum", "_w_dsum", "_w_data_ok", "_w_samples", "_w_samples_ok",
                 "_w_comm", "_w_csum", "_w_comm_ok",
                 "_w_start", "_w_end",
                 "_l_step", "_l_stride", "_l_skip", "_l_n", "_l_sum", "_l_data", "_l_data_ok", "_l_samples",
                 "_l_samples_ok",
                 "journal", "train_keys", "_drain_lock", "_loaders", "_log", "_last_loader", "_batch_since",
                 "_last_opt", "_prev_end", "_armed", "loaders_seen",
                 "_f_start", "_f_in_batch", "_f_step_start", "_f_data", "_f_samples",
                 "__dict__", "__weakref__")

    def __init__(self, hot=None):
        if hot is None:
            hot = getattr(self, "_hot", None) or _Hot()  # a reset keeps the object the hooks hold
        self._hot = hot
        self._tls = hot
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
        self.comm_s = 0.0         # collective wait in counted steps (protocol v3 total comm_s)
        self.comm_known = False
        self._prev_comm = None    # _tls.comm at the last step end applied
        self.last_mt = None
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
        self._w_comm = []
        self._w_csum = 0.0
        self._w_comm_ok = True
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
        # Appended by the hot paths, applied by drain(). The same list for the life of the timer (the
        # hooks hold its bound append), emptied in place on a reset.
        journal = getattr(self, "journal", None)
        if journal is None:
            self.journal = []
        else:
            journal.clear()
        # Keys of the loaders known to be training (read by the hooks, which hold it: one set for
        # the life of the timer, emptied in place).
        train_keys = getattr(self, "train_keys", None)
        if train_keys is None:
            self.train_keys = set()
        else:
            train_keys.clear()
        self._drain_lock = threading.Lock()
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

    # level, phase and phase_mt live in the hot object (read and written by the hooks directly)
    @property
    def level(self):
        return self._hot.level

    @level.setter
    def level(self, value):
        self._hot.level = value

    @property
    def phase(self):
        return self._hot.phase

    @phase.setter
    def phase(self, value):
        self._hot.phase = value

    @property
    def phase_mt(self):
        return self._hot.phase_mt

    @phase_mt.setter
    def phase_mt(self, value):
        self._hot.phase_mt = value

    def _after_fork(self):
        # A forked child is a new sender: no totals, no heartbeat thread (threads do not survive a
        # fork), no loader history. Claims and configuration stay (same code, same callbacks).
        self._reset_measurements()
        self._hot.comm = None
        self._hot.coll = None
        self._hot.coll_depth = 0

    # ---- levels ----------------------------------------------------------------------------------
    def claim(self, level, framework=None):
        """A source of ``level`` is active (callbacks: from their construction to train end)."""
        try:
            self.drain()  # what was journaled counts under the level it was recorded at
            self._claims[level] += 1
            if framework:
                self._frameworks[level] = framework
            self._update_level()
        except Exception:
            pass

    def release(self, level):
        """Undo one claim(level). Never raises."""
        try:
            self.drain()
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

    # ---- loaders and loop steps: the journal -------------------------------------------------------
    # The zero-code hook and trainmon.loader / trainmon.step only append a tuple to ``journal`` per
    # next() and per step (a few hundred nanoseconds); ``drain()`` applies the rules below to the
    # entries in order when a window, the line's figures, a heartbeat or an epoch end needs them.
    # Entries: (J_BATCH, key, iterator id, t0, t1, samples or -1), (J_ITER, key, t0, t1),
    # (J_STOP, key, t0, t1), (J_OPT, optimizer id, t), (J_LOOP, t, batch size or None), and the
    # framework hooks' (J_FSTART, t, samples), (J_FEND, t, samples), (J_PAUSE, t), (J_RESUME, t).
    # The phase is kept current by the hooks themselves in the hot object (it must be right while a
    # step hangs); after next() they say "compute", and the drain turns that into "idle" when the
    # batch was a loader's that is not training (an evaluation loop).

    def drain(self, block=True):
        """Apply the journal. The heartbeat thread passes block=False (it then skips a drain that
        the training thread is doing). Never raises.

        The steady state is applied in runs, in bulk (_loader_run, _framework_run): batches of a
        training loader each followed by the step that ends with it, and framework batch starts
        each followed by their batch end. Every other entry goes through the general rules."""
        journal = self.journal
        if not journal:
            return
        lock = self._drain_lock
        if not lock.acquire(block):
            return
        try:
            n = len(journal)
            k = 0
            while k < n:
                e = journal[k]
                try:
                    code = e[0]
                    if k + 1 < n:
                        if code == J_BATCH:
                            if not self._log and self._prev_end is not None:
                                k2 = self._loader_run(journal, k, n)
                                if k2 != k:
                                    k = k2
                                    continue
                        elif code == J_FSTART:
                            k2 = self._framework_run(journal, k, n)
                            if k2 != k:
                                k = k2
                                continue
                    if code == J_BATCH:
                        self._apply_batch(e[1], e[2], e[3], e[4], e[5])
                    elif code == J_OPT:
                        self._apply_opt(e[1], e[2], e[3] if len(e) > 3 else None)
                    elif code == J_LOOP:
                        self._loop_step_end(e[1], e[2], e[3] if len(e) > 3 else None)
                    elif code == J_ITER:
                        self._apply_iter(e[1], e[2], e[3])
                    elif code == J_FEND:
                        self._apply_fend(e[1], e[2], e[3] if len(e) > 3 else None)
                    elif code == J_FSTART:
                        self._apply_fstart(e[1], e[2])
                    elif code == J_STOP:
                        self._apply_stop(e[1], e[2], e[3])
                    elif code == J_PAUSE:
                        self._apply_pause(e[1])
                    elif code == J_RESUME:
                        self._apply_resume(e[1])
                except Exception:
                    pass
                k += 1
            del journal[:n]
        finally:
            lock.release()

    def _loader_run(self, journal, k, n):
        """From journal[k]: pairs (J_BATCH of a training loader, then J_OPT or J_LOOP), with no
        loader activity left from before (log empty) and a previous step end. Each pair is what
        _apply_batch then _apply_opt / _loop_step_end do with one clean batch: the step runs from
        the previous step end to this one, its data wait is the batch's next(), its samples the
        batch's (else the step's batch size). Returns the index after the last pair applied."""
        loaders = self._loaders
        prev = first = self._prev_end
        steps0 = self.steps
        last_opt = self._last_opt
        ds, ws, ss, cs = [], [], [], []
        s_none = c_none = 0
        prev_c = self._prev_comm
        rec = key = it = None
        while k + 1 < n:
            e = journal[k]
            if e[0] != J_BATCH:
                break
            e2 = journal[k + 1]
            c2 = e2[0]
            if c2 == J_OPT:
                t = e2[2]
            elif c2 == J_LOOP:
                t = e2[1]
            else:
                break
            if e[1] != key or rec is None:
                r = loaders.get(e[1])
                if r is None or not r.training:
                    break
                if rec is not None:
                    rec.steps_seen = steps0 + len(ds) - 1
                    rec.it = it
                rec, key = r, e[1]
            it = e[2]
            nb = e[5]
            if c2 == J_OPT:
                last_opt = e2[1]
                s = nb if nb > 0 else None
            else:
                s = nb if nb > 0 else e2[2]
            if s is None:
                s_none += 1
            d = t - prev
            if not d >= 0.0:
                d = 0.0
            w = e[4] - e[3]
            if w > d:
                w = d
            elif not w >= 0.0:
                w = 0.0
            c = e2[3] if len(e2) > 3 else None
            if c is None:
                cs.append(None)
                c_none += 1
            else:
                x = c - prev_c if prev_c is not None else c
                room = d - w
                cs.append(x if 0.0 <= x <= room else (room if x > room else 0.0))
                prev_c = c
            ds.append(d)
            ws.append(w)
            ss.append(s)
            prev = t
            k += 2
        if ds:
            self._prev_comm = prev_c
            rec.steps_seen = steps0 + len(ds) - 1
            rec.it = it
            self._last_opt = last_opt
            self._prev_end = prev
            self._batch_since = False
            self._last_loader = None
            self.loaders_seen = True
            self._record_many(first, prev, ds, ws, ss, 0, s_none, cs, c_none)
        return k

    def _framework_run(self, journal, k, n):
        """From journal[k]: pairs (J_FSTART, J_FEND), each what _apply_fstart then _apply_fend do.
        Returns the index after the last pair applied."""
        f_start = self._f_start
        first = None
        ds, ws, ss, cs = [], [], [], []
        s_none = c_none = 0
        prev_c = self._prev_comm
        while k + 1 < n:
            e = journal[k]
            if e[0] != J_FSTART:
                break
            e2 = journal[k + 1]
            if e2[0] != J_FEND:
                break
            t, t2 = e[1], e2[1]
            start = t if f_start is None else f_start
            s = e[2]
            if s is None:
                s = e2[2]
                if s is None:
                    s_none += 1
            d = t2 - start
            if not d >= 0.0:
                d = 0.0
            w = t - start
            if w > d:
                w = d
            elif not w >= 0.0:
                w = 0.0
            if first is None:
                first = start
            c = e2[3] if len(e2) > 3 else None
            if c is None:
                cs.append(None)
                c_none += 1
            else:
                x = c - prev_c if prev_c is not None else c
                room = d - w
                cs.append(x if 0.0 <= x <= room else (room if x > room else 0.0))
                prev_c = c
            ds.append(d)
            ws.append(w)
            ss.append(s)
            f_start = t2
            k += 2
        if ds:
            self._prev_comm = prev_c
            self._f_start = f_start
            self._f_in_batch = False
            self._record_many(first, f_start, ds, ws, ss, 0, s_none, cs, c_none)
        return k

    def _loader(self, key):
        rec = self._loaders.get(key)
        if rec is None:
            if len(self._loaders) >= _LOADERS_CAP:
                self._loaders.clear()
                self.train_keys.clear()
            rec = self._loaders[key] = _Loader(key)
        return rec

    def _mark_training(self, rec):
        if not rec.training:
            rec.training = True
            self.train_keys.add(rec.key)

    def _add_log(self, entry):
        log = self._log
        if entry is not None:
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

    def _apply_iter(self, key, t0, t1):
        rec = self._loader(key)
        rec.it = None
        self._add_log((rec, t0, t1 - t0, 0))
        self.loaders_seen = True

    def _apply_batch(self, key, it_id, t0, t1, n):
        rec = self._loaders.get(key) or self._loader(key)
        steps = self.steps
        if rec.steps_seen != steps:
            if rec.it == it_id:
                self._mark_training(rec)  # a step ended between two batches of one iterator
            rec.steps_seen = steps
        rec.it = it_id
        log = self._log
        log.append((rec, t0, t1 - t0, n))
        if len(log) > _LOG_CAP:
            self._add_log(None)
        self._last_loader = rec
        self._batch_since = True
        self.loaders_seen = True
        if not rec.training and self.train_keys:
            # the hooks said "compute" after this next(): a loader that is not training (evaluation)
            hot = self._hot
            if hot.phase_mt == t1 and hot.phase == "compute":
                hot.phase = "idle"

    def _apply_stop(self, key, t0, t1):
        rec = self._loader(key)
        rec.it = None
        self._add_log((rec, t0, t1 - t0, 0))
        if rec.training:
            rec.epochs += 1
            return rec.epochs - 1
        return None

    def _apply_opt(self, opt_id, t, comm=None):
        if not self._batch_since and opt_id != self._last_opt and self._last_opt is not None:
            return False  # a second optimizer in the same iteration
        self._last_opt = opt_id
        return self._loop_step_end(t, None, comm)

    def _comm_since(self, comm):
        """The collective wait since the previous step end, from the hot object's snapshot ``comm``
        at this one (None: not measured)."""
        if comm is None:
            return None
        prev = self._prev_comm
        self._prev_comm = comm
        x = comm - prev if prev is not None else comm
        return x if x >= 0.0 else 0.0

    # Immediate forms (drain, then apply): for tests, and for the rare events that need an answer.
    def loader_enter(self, key, t0):
        """A next() or iter() on a loader begins: the loop waits for data."""
        if self.level > LOOP:
            return
        self.phase = "data"
        self.phase_mt = t0

    def loader_iter(self, key, t0, t1):
        """iter() of loader ``key`` took t0..t1 (it starts the worker processes)."""
        if self.level > LOOP:
            return
        self.drain()
        self._apply_iter(key, t0, t1)

    def loader_batch(self, key, it_id, t0, t1, batch):
        """next() of iterator ``it_id`` of loader ``key`` returned ``batch`` after t0..t1."""
        if self.level > LOOP:
            return
        self.drain()
        n = batch_samples(batch)
        self._apply_batch(key, it_id, t0, t1, -1 if n is None else n)
        self.phase = "compute" if key in self.train_keys or not self.steps else "idle"
        self.phase_mt = t1

    def loader_stop(self, key, t0, t1):
        """next() of loader ``key`` raised StopIteration after t0..t1. Returns the number of the
        training epoch that ended (0-based) when ``key`` is a training loader, else None."""
        if self.level > LOOP:
            return None
        self.drain()
        epoch = self._apply_stop(key, t0, t1)
        if epoch is not None or self.steps:
            self.set_phase("idle", t1)  # outside the training loop: epoch end, evaluation, saving
        return epoch

    def training_epochs(self):
        """Epochs finished by the busiest training loader (0 before the first)."""
        self.drain()
        return max([r.epochs for r in self._loaders.values() if r.training] or [0])

    def current_epoch(self):
        """The 0-based epoch of the busiest training loader: the one it iterates, or between two
        epochs (and after the last) the one it finished; None before a training loader is known."""
        self.drain()
        recs = [r for r in self._loaders.values() if r.training]
        if not recs:
            return None
        r = max(recs, key=lambda x: x.epochs)
        return r.epochs - 1 if r.it is None and r.epochs else r.epochs

    def optimizer_step(self, opt_id, t):
        """An optimizer finished step() (zero-code hook). True when it ended a counted step."""
        if self.level != AUTO:
            return False
        self.drain()
        self.set_phase("compute", t)
        return self._apply_opt(opt_id, t, self._hot.comm)

    def loop_step(self, t, batch_size=None):
        """trainmon.step(): a step of a plain loop ended at ``t``. True when it was counted."""
        if self.level > LOOP:
            return False
        self.drain()
        self.set_phase("compute", t)
        return self._loop_step_end(t, int_in(batch_size, 1, 10_000_000), self._hot.comm)

    def journal_loop_step(self, t, batch_size=None):
        """trainmon.step()'s fast form: journaled, applied at the next drain."""
        if self.level > LOOP:
            return
        journal = self.journal
        journal.append((J_LOOP, t, None if batch_size is None else int_in(batch_size, 1, 10_000_000),
                        self._hot.comm))
        if self.phase != "compute":
            self.phase = "compute"
            self.phase_mt = t
        if len(journal) > _JOURNAL_CAP:
            self.drain()

    def _loop_step_end(self, t, given_samples, comm=None):
        log = self._log
        comm = self._comm_since(comm)
        last = self._last_loader
        if last is not None and not last.training:
            self._mark_training(last)
        prev = self._prev_end
        start = None
        data = 0.0
        samples = 0
        samples_ok = True
        batches = 0
        clean = True
        for rec, t0, wait, n in log:  # usually one or a few entries, all of training loaders
            if rec is None or not rec.training:
                clean = False
                break
            data += wait
            if n:
                batches += 1
                if n > 0:
                    samples += n
                else:
                    samples_ok = False
        if clean:
            if prev is not None:
                start = prev
            elif log:
                start = log[0][1]
            else:
                start = self._armed
        else:
            # A loader that is not training was used since the last step (an evaluation loop):
            # the step starts at the first training activity after its last use.
            cut = len(log) - 1
            while cut >= 0 and log[cut][0] is not None and log[cut][0].training:
                cut -= 1
            data = 0.0
            samples = 0
            samples_ok = True
            batches = 0
            for j in range(cut + 1, len(log)):
                _rec, t0, wait, n = log[j]
                if start is None:
                    start = t0
                data += wait
                if n:
                    batches += 1
                    if n > 0:
                        samples += n
                    else:
                        samples_ok = False
            if start is None:  # no training activity after it: the step starts at its end
                start = log[cut][1] + log[cut][2]
        log.clear()
        self._batch_since = False
        self._last_loader = None
        self._prev_end = t
        if start is None:  # nothing to measure the first step from: it starts the clock
            return False
        self._record(start, t, data if self.loaders_seen else None,
                     samples if batches and samples_ok else given_samples, comm)
        return True

    # ---- step ends: framework hooks (journaled too; the phase is set at once) -------------------------
    def batch_start(self, t, samples=None, level=FRAMEWORK):
        """A framework's batch-start hook at ``t``: the batch has arrived; data wait ends. (The
        callbacks inline this: they append the same entry and set the same phase.)"""
        if level < self.level:
            return
        journal = self.journal
        journal.append((J_FSTART, t, samples))
        self.phase = "compute"
        self.phase_mt = t
        if len(journal) > _JOURNAL_CAP:
            self.drain()

    def batch_end(self, t, samples=None, level=FRAMEWORK):
        """A framework's batch-end hook at ``t`` (``samples``: used when the batch-start hook gave
        none). The step is counted at the next drain. (Inlined by the callbacks, as batch_start.)"""
        if level < self.level:
            return
        journal = self.journal
        journal.append((J_FEND, t, samples, self._hot.comm))
        self.phase = "data"  # the framework fetches the next batch now
        self.phase_mt = t
        if len(journal) > _JOURNAL_CAP:
            self.drain()

    def pause(self, t, level=FRAMEWORK):
        """The framework left the training loop (evaluation, epoch end): not step time."""
        if level < self.level:
            return
        self.journal.append((J_PAUSE, t))
        self.set_phase("idle", t)

    def resume(self, t, level=FRAMEWORK):
        """The framework goes back to training (evaluation done, epoch start): the next step's data
        wait starts here (the phase too, unless a batch is in flight)."""
        if level < self.level:
            return
        self.drain()  # rare (epoch start, end of evaluation): tells whether a batch is in flight
        in_batch = self._f_in_batch
        self.journal.append((J_RESUME, t))
        if not in_batch:
            self.set_phase("data", t)

    def _apply_fstart(self, t, samples):
        start = self._f_start
        if start is None:
            start = t  # after a pause without resumption: the wait is not known, count none
        self._f_step_start = start
        self._f_data = t - start
        self._f_samples = samples
        self._f_in_batch = True

    def _apply_fend(self, t, samples, comm=None):
        comm = self._comm_since(comm)
        if self._f_in_batch:
            start, data = self._f_step_start, self._f_data
            if self._f_samples is not None:
                samples = self._f_samples
        else:  # no batch-start hook: the step runs from the previous batch end, data unknown
            start, data = self._f_start, None
        self._f_in_batch = False
        self._f_start = t
        if start is not None:
            self._record(start, t, data, samples, comm)

    def _apply_pause(self, t):
        self._f_start = None
        self._f_in_batch = False

    def _apply_resume(self, t):
        if not self._f_in_batch:
            self._f_start = t

    # ---- recording -----------------------------------------------------------------------------
    def _record(self, start, end, data, samples, comm=None):
        """One step from ``start`` to ``end`` (data wait, samples and collective wait None when
        unknown; the collective wait is at most what the data wait leaves of the step)."""
        d = end - start
        if not d >= 0.0:
            d = 0.0
        self.steps += 1
        self.step_s += d
        if data is not None:
            if data > d:
                data = d
            elif not data >= 0.0:
                data = 0.0
            self.data_s += data
            self.data_known = True
        if samples is not None:
            self.samples += samples
            self.samples_known = True
        if comm is not None:
            room = d - (data or 0.0)
            if comm > room:
                comm = room
            self.comm_s += comm
            self.comm_known = True
        self.last_mt = end
        self.ended = False
        if self.collect:
            if self._w_start is None:
                self._w_start = start
            self._w_end = end
            self._w_n += 1
            self._w_sum += d
            ws = self._w_step
            if len(ws) < _WINDOW_CAP:
                ws.append(d)
            if data is None:
                self._w_data_ok = False
            else:
                self._w_dsum += data
                wd = self._w_data
                if len(wd) < _WINDOW_CAP:
                    wd.append(data)
            if samples is None:
                self._w_samples_ok = False
            else:
                self._w_samples += samples
            if comm is None:
                self._w_comm_ok = False
            else:
                self._w_csum += comm
                wc = self._w_comm
                if len(wc) < _WINDOW_CAP:
                    wc.append(comm)
            if self._hb is None and self._client is not None:
                self._start_heartbeat()
        if self.line_wanted:
            self._line_add(d, data, samples)

    def _line_add(self, d, data, samples):
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

    def _record_many(self, start, end, ds, ws, ss, w_none, s_none, cs=None, c_none=0):
        """Steps in order: durations ``ds`` (s, >= 0), data waits ``ws`` (0..duration, or None:
        ``w_none`` of them), samples ``ss`` (or None: ``s_none`` of them); the first starts at
        ``start``, the last ends at ``end``. The same additions as one step at a time, in C (sum,
        extend): totals, the window (count, sum, values for its percentiles) and the line's.
        ``cs``: collective waits (each within what the data wait leaves of its step, or None:
        ``c_none`` of them); None: not measured for any."""
        k = len(ds)
        if cs is None:
            cs = ()
            c_none = k
        comms = cs if not c_none else [c for c in cs if c is not None]
        csum = sum(comms)
        if comms:
            self.comm_s += csum
            self.comm_known = True
        total = sum(ds)
        self.steps += k
        self.step_s += total
        data_all = not w_none
        datas = ws if data_all else [w for w in ws if w is not None]
        dsum = sum(datas)
        if datas:
            self.data_s += dsum
            self.data_known = True
        samples_all = not s_none
        samples = ss if samples_all else [x for x in ss if x is not None]
        ssum = sum(samples)
        if samples:
            self.samples += ssum
            self.samples_known = True
        self.last_mt = end
        self.ended = False
        if self.collect:
            if self._w_start is None:
                self._w_start = start
            self._w_end = end
            self._w_n += k
            self._w_sum += total
            wl = self._w_step
            room = _WINDOW_CAP - len(wl)
            if room > 0:
                wl.extend(ds if k <= room else ds[:room])
            if not data_all:
                self._w_data_ok = False
            if datas:
                self._w_dsum += dsum
                wd = self._w_data
                room = _WINDOW_CAP - len(wd)
                if room > 0:
                    wd.extend(datas if len(datas) <= room else datas[:room])
            if not samples_all:
                self._w_samples_ok = False
            self._w_samples += ssum
            if c_none:
                self._w_comm_ok = False
            if comms:
                self._w_csum += csum
                wc = self._w_comm
                room = _WINDOW_CAP - len(wc)
                if room > 0:
                    wc.extend(comms if len(comms) <= room else comms[:room])
            if self._hb is None and self._client is not None:
                self._start_heartbeat()
        if self.line_wanted:
            self._l_n += k
            self._l_sum += total
            if not data_all:
                self._l_data_ok = False
            self._l_data += dsum
            if not samples_all:
                self._l_samples_ok = False
            self._l_samples += ssum
            ls = self._l_step
            if self._l_stride == 1 and len(ls) + k < _LINE_CAP:
                ls.extend(ds)
            else:
                for d in ds:
                    self._l_skip += 1
                    if self._l_skip >= self._l_stride:
                        self._l_skip = 0
                        ls.append(d)
                        if len(ls) >= _LINE_CAP:  # keep every other: the median stays fair
                            del ls[::2]
                            self._l_stride *= 2

    def _common(self):
        total = {"steps": min(self.steps, 10 ** 15), "step_s": _round(self.step_s)}
        if self.samples_known:
            total["samples"] = min(self.samples, 10 ** 15)
        if self.data_known:
            total["data_s"] = _round(self.data_s)
        if self.comm_known:
            total["comm_s"] = _round(self.comm_s)
        out = {"total": total}
        if self.last_mt is not None:
            # time.time() when the last step ended, from the monotonic clock's distance to it
            out["last_step_t"] = _wall() - (_mono() - self.last_mt)
            out["last_step_mt"] = self.last_mt
        hot = self._hot
        phase = hot.phase
        out["phase"] = phase
        out["phase_mt"] = hot.phase_mt
        if phase == "collective":
            coll = hot.coll
            if coll is not None and _coll_info is not None:
                info = _coll_info(coll)
                if info:
                    out["coll"] = info
        return out

    def take_window(self):
        """The ``steps`` object of a batch_end / epoch_end / val_end / train_end message: the steps
        since the previous window (n may be 0), the totals, the last step and the phase. Starts a
        new window. Returns None when no step was ever timed."""
        self.drain()
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
            if self._w_comm_ok and self._w_comm:
                out["comm_s"] = _stats(self._w_comm, self._w_csum)
        out.update(self._common())
        self._w_step = []
        self._w_data = []
        self._w_n = 0
        self._w_sum = 0.0
        self._w_dsum = 0.0
        self._w_data_ok = True
        self._w_samples = 0
        self._w_samples_ok = True
        self._w_comm = []
        self._w_csum = 0.0
        self._w_comm_ok = True
        self._w_start = None
        self._w_end = None
        return out

    def heartbeat_steps(self):
        """The ``steps`` object of a heartbeat: n 0, the totals, the last step and the phase.
        (Called from the heartbeat thread: it drains only when the training thread is not.)"""
        self.drain(block=False)
        out = {"n": 0}
        out.update(self._common())
        return out

    def take_line(self, reset=True):
        """Figures for the resource line since the previous taking: ``(samples_per_s,
        median_step_s, data_share_pct)``, each None when unknown; None when no step ended since.
        samples/s is samples over the summed step time; data share is data wait over it."""
        self.drain()
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


_timer = StepTimer(_tls)
_journal = _timer.journal  # the same list for the life of the process (reset in place)
_journal_append = _journal.append


def timer():
    """The process's StepTimer."""
    return _timer


def _reset_for_tests():
    """The timer as new (tests only: claims and measurements of earlier tests are forgotten). The
    object stays the same one, so that hooks may hold it."""
    _timer._hb_stop.set()
    _timer._client = None
    StepTimer.__init__(_timer)
    _tls.depth = _tls.opt_depth = _tls.coll_depth = 0
    _tls.report_at = 0.0
    _tls.comm = _tls.coll = None
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

    __slots__ = ("_inner", "_key", "_next", "__weakref__")

    def __init__(self, inner, key):
        self._inner = inner
        self._key = key
        # the wrapped iterator's type's __next__ bound to it (what next() calls): a call less than
        # next(inner) per batch
        try:
            self._next = type(inner).__next__.__get__(inner)
        except Exception:
            self._next = lambda: next(inner)

    def __iter__(self):
        return self

    def __next__(self):
        nest = _tls
        if nest.depth or nest.level > LOOP:
            return self._next()
        nest.phase = "data"
        nest.phase_mt = t0 = _mono()
        nest.depth = 1
        try:
            batch = self._next()
        except StopIteration:
            nest.depth = 0
            try:
                _timer.loader_stop(self._key, t0, _mono())
            except Exception:
                pass
            raise
        except BaseException:
            nest.depth = 0
            raise
        nest.depth = 0
        try:
            t1 = _mono()
            # samples: fast_samples, its torch tensor case inline
            tb = type(batch)
            x = batch[0] if (tb is list or tb is tuple) and batch else batch
            if type(x) is _Tensor:
                try:
                    n = _tensor_len(x)
                    if not 0 < n <= 10_000_000:
                        n = -1
                except Exception:  # a tensor whose sizes cannot be read (nested, ...)
                    n = -1
            else:
                n = fast_samples(batch)
            _journal_append((J_BATCH, self._key, id(self), t0, t1, n))
            # compute (a batch of a loader that is not training: set to idle by the drain)
            nest.phase = "compute"
            nest.phase_mt = t1
            if len(_journal) > _JOURNAL_CAP:
                _timer.drain()
        except Exception:
            pass
        return batch


# The optional C version of _TimedIterator (python/trainmon/_speedups.c; docs/python.md,
# "Speedups"): the same method without a Python frame, reading this module's globals at every call
# as the method above does. Used when trainmon._speedups imports and says the version below, unless
# TRAINMON_NO_SPEEDUPS is set (to anything but 0); the class above stays the reference.
_SPEEDUPS_VERSION = 3
_PyTimedIterator = _TimedIterator


def _load_speedups(force=False):
    """The C iterator type bound to this module, or None (not built, another version, refused by
    TRAINMON_NO_SPEEDUPS unless ``force``). Never raises."""
    if not force and os.environ.get("TRAINMON_NO_SPEEDUPS", "") not in ("", "0"):
        return None
    try:
        from . import _speedups
        if getattr(_speedups, "VERSION", None) != _SPEEDUPS_VERSION:
            return None
        return _speedups.configure(globals(), _Hot, time.monotonic)
    except Exception:
        return None


_CTimedIterator = _load_speedups()
if _CTimedIterator is not None:
    _TimedIterator = _CTimedIterator


class TimedIterable:
    """What ``trainmon.loader(iterable)`` returns: iterates ``iterable`` unchanged and times every
    next() (and iter()) as data wait. Other attributes and len() are the wrapped object's."""

    def __init__(self, iterable):
        _learn_torch()
        object.__setattr__(self, "_iterable", iterable)
        object.__setattr__(self, "_key", ("loader", id(iterable)))

    def __iter__(self):
        T = _timer
        if T.level > LOOP or _tls.depth:
            return _TimedIterator(iter(self._iterable), self._key)
        t0 = _mono()
        T.phase = "data"
        T.phase_mt = t0
        _tls.depth = 1
        try:
            inner = iter(self._iterable)
        finally:
            _tls.depth = 0
        try:
            T.journal.append((J_ITER, self._key, t0, _mono()))
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
