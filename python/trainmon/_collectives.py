# SPDX-License-Identifier: Apache-2.0
"""Collective wait: the time a rank's training thread spends inside torch.distributed
(docs/python.md, "Collective wait"). Installed by the zero-code hook (_auto) right after
``import torch``; nothing here imports torch or touches CUDA on its own.

What is timed:
 - the Python collectives and point-to-point calls of ``torch.distributed`` (``_WRAPPED``): the
   names in ``torch.distributed`` and in ``torch.distributed.distributed_c10d`` are replaced by a
   wrapper that times the call with time.monotonic() (the step timer's clock) and counts it per
   process group (``seq``). Nested calls (all_gather_object calls all_gather) count once;
 - ``Work.wait()`` of the async ones (``async_op=True``, isend / irecv);
 - DistributedDataParallel's gradient buckets, which never pass through those functions: a comm hook
   (``_ddp_hook``) around DDP's own behaviour is registered when a DDP module is built. What a rank
   waits for in backward() is the tail from its last bucket becoming ready (the last hook call) to
   the last bucket's all-reduce completing (its future's callback): that tail is the bucket wait.
   A user's own ``register_comm_hook`` (or ``_register_builtin_comm_hook``) replaces the inner hook
   our wrapper calls: it runs, once per bucket, as it would have; a second registration raises as
   torch does.

The wait accumulates in the hot object (``_tls.comm``, seconds since the process started timing,
None before the first collective); every step end snapshots it into its journal entry, so the
step timer gives each step its share (``_timing``). While inside a call the phase is "collective"
and ``_tls.coll`` says which (op, seq, group, the call's arguments: bytes and the group's name are
read only when a heartbeat or a window needs them).

On CUDA the calls return before the GPU is done: for a CUDA tensor the call is timed with two CUDA
events recorded on the current stream around it (``CudaTiming``), read later with query() when the
next collective or step end comes, never synchronising.

Never raises into the job: every failure of ours falls back to the unwrapped call.
"""

import threading
import time
import weakref

from . import _timing

__all__ = ["install", "installed", "CudaTiming", "coll_info"]

_tls = _timing._tls
_mono = time.monotonic

# name -> index of the positional `group` argument (None: the call has none)
_WRAPPED = {
    "all_reduce": 2, "all_gather": 2, "all_gather_into_tensor": 2, "_all_gather_base": 2,
    "reduce_scatter": 3, "reduce_scatter_tensor": 3, "_reduce_scatter_base": 3,
    "broadcast": 2, "reduce": 3, "barrier": 0, "monitored_barrier": 0,
    "all_to_all": 2, "all_to_all_single": 4, "gather": 3, "scatter": 3,
    "all_gather_object": 2, "broadcast_object_list": 2, "gather_object": 3, "scatter_object_list": 3,
    "send": 2, "recv": 2, "isend": 2, "irecv": 2, "batch_isend_irecv": None,
}
_OP_NAMES = {"_all_gather_base": "all_gather_into_tensor", "_reduce_scatter_base": "reduce_scatter_tensor",
             "monitored_barrier": "barrier"}
_WORKS_CAP = 4096

_state = {"installed": False, "ddp": False, "orig": {}, "how": None}
_seqs = {}      # process group (None: the default one) -> collectives counted on it
_works = {}     # id(Work) -> (op, seq, group, on CUDA): what a later wait() waits for
_taps = weakref.WeakKeyDictionary()  # DDP module -> its _DdpTap


def installed():
    """What is timed ("functions", "functions+ddp"), or None when not installed."""
    return _state["how"] if _state["installed"] else None


_timing._coll_info = None  # set at the end of this module (coll_info)


def _add(dt):
    """Add ``dt`` seconds of collective wait (main thread, or a DDP future callback)."""
    if dt > 0.0:
        c = _tls.comm
        _tls.comm = dt if c is None else c + dt
    elif _tls.comm is None:
        _tls.comm = 0.0


# ---- CUDA ---------------------------------------------------------------------------------------

class CudaTiming:
    """Timing of collectives on CUDA streams without synchronising: ``begin()`` records an event on
    the current stream before the call, ``end(start)`` one after it; ``poll()`` reads the pairs that
    completed (``query()``), in order, and returns their summed ``elapsed_time`` in seconds. Events are
    reused. ``make_event`` builds an event (torch.cuda.Event(enable_timing=True) in real use; a
    stand-in in tests). At most ``cap`` pairs wait; older ones are dropped (counted)."""

    __slots__ = ("make_event", "pending", "free", "cap", "dropped")

    def __init__(self, make_event, cap=1024):
        self.make_event = make_event
        self.pending = []
        self.free = []
        self.cap = cap
        self.dropped = 0

    def _event(self):
        return self.free.pop() if self.free else self.make_event()

    def begin(self):
        ev = self._event()
        ev.record()
        return ev

    def end(self, start):
        ev = self._event()
        ev.record()
        pending = self.pending
        if len(pending) >= self.cap:
            del pending[0]
            self.dropped += 1
        pending.append((start, ev))

    def poll(self):
        """Seconds of the pairs that completed since the last poll (0.0 when none). Never raises:
        a pair whose reading fails is dropped."""
        pending = self.pending
        total = 0.0
        done = 0
        for start, end in pending:
            try:
                if not end.query():
                    break  # one stream: the later ones are not done either
                ms = start.elapsed_time(end)
                if ms > 0.0:
                    total += ms / 1000.0
            except Exception:
                self.dropped += 1
            done += 1
            if len(self.free) < 64:
                self.free.append(start)
                self.free.append(end)
        if done:
            del pending[:done]
        return total


_cuda = {"timing": None, "next_check": 0.0, "on": False, "torch": None}


def _cuda_on(t):
    """Whether CUDA is initialised in this process (looked at once a second: never initialises it)."""
    if t < _cuda["next_check"]:
        return _cuda["on"]
    _cuda["next_check"] = t + 1.0
    try:
        torch = _cuda["torch"]
        on = bool(torch is not None and torch.cuda.is_initialized())
        if on and _cuda["timing"] is None:
            cuda = torch.cuda
            _cuda["timing"] = CudaTiming(lambda: cuda.Event(enable_timing=True))
    except Exception:
        on = False
    _cuda["on"] = on
    return on


def _is_cuda(args):
    """Whether the call's first tensor argument (or first element of a list argument) is on CUDA."""
    for a in args[:2]:
        if type(a) is list or type(a) is tuple:
            a = a[0] if a else None
        dev = getattr(a, "is_cuda", None)
        if dev is not None:
            return bool(dev)
    return False


def poll_cuda():
    """Add the CUDA-timed collectives that completed (main thread). Never raises."""
    timing = _cuda["timing"]
    if timing is not None and timing.pending:
        try:
            _add(timing.poll())
        except Exception:
            pass


# ---- the functions ------------------------------------------------------------------------------

_members = [None]  # torch.distributed's GroupMember (WORLD: the default group), once installed


def _key(g):
    """The group's key for the sequence numbers: None for the default group (passed or not)."""
    if g is None:
        return None
    try:
        return None if g is _members[0].WORLD else g
    except Exception:
        return g


def _enter_cuda():
    """A CUDA call's start event (None when the events cannot be recorded: host-timed instead)."""
    try:
        poll_cuda()
        return _cuda["timing"].begin()
    except Exception:
        return None


def _leave(hot, prev, t0, t1, start, cuda):
    """The end of a timed call (t0..t1, monotonic s): the phase back to what it was, the wait added
    (by the CUDA end event when the call was timed on the GPU, else by the host's clock)."""
    hot.coll_depth = 0
    hot.coll = None
    hot.phase = prev if prev != "collective" else "compute"
    hot.phase_mt = t1
    if start is not None:
        try:
            _cuda["timing"].end(start)
        except Exception:
            pass
    elif not cuda:
        c = hot.comm
        hot.comm = t1 - t0 if c is None else c + (t1 - t0)


def _wrap(name, fn, gpos):
    hot = _tls
    mono = _mono
    seqs = _seqs
    works = _works
    op = _OP_NAMES.get(name, name)

    def wrapper(*args, **kwargs):
        if hot.coll_depth:
            return fn(*args, **kwargs)
        try:
            g = kwargs.get("group") if kwargs else None
            if g is None and gpos is not None and len(args) > gpos:
                g = args[gpos]
            if g is not None:
                g = _key(g)
            seq = seqs.get(g, 0)
            seqs[g] = seq + 1
            prev = hot.phase
            hot.coll = (op, seq, g, args, kwargs)
            hot.phase = "collective"
            hot.phase_mt = t0 = mono()
            cuda = _cuda_on(t0) and _is_cuda(args)
        except Exception:
            return fn(*args, **kwargs)
        hot.coll_depth = 1
        start = None
        try:
            if cuda:
                start = _enter_cuda()
            result = fn(*args, **kwargs)
        finally:
            _leave(hot, prev, t0, mono(), start, cuda)
        if result is not None:
            try:
                if len(works) >= _WORKS_CAP:
                    works.clear()
                works[id(result)] = (op, seq, g, cuda)
            except Exception:
                pass
        return result

    wrapper.__wrapped__ = fn
    wrapper.__name__ = getattr(fn, "__name__", name)
    wrapper.__qualname__ = getattr(fn, "__qualname__", name)
    wrapper.__doc__ = getattr(fn, "__doc__", None)
    wrapper.__module__ = getattr(fn, "__module__", None)
    wrapper._trainmon = True
    return wrapper


def _wrap_wait(fn):
    hot = _tls
    mono = _mono
    works = _works

    def wait(self, *args, **kwargs):
        if hot.coll_depth:
            return fn(self, *args, **kwargs)
        try:
            what = works.pop(id(self), None)
            op, seq, g, cuda = what if what is not None else ("wait", -1, None, False)
            prev = hot.phase
            hot.coll = (op, seq, g, (), None)
            hot.phase = "collective"
            hot.phase_mt = t0 = mono()
            cuda = cuda and _cuda["timing"] is not None
        except Exception:
            return fn(self, *args, **kwargs)
        hot.coll_depth = 1
        start = None
        try:
            if cuda:
                start = _enter_cuda()
            return fn(self, *args, **kwargs)
        finally:
            _leave(hot, prev, t0, mono(), start, cuda)

    wait.__wrapped__ = fn
    wait.__name__ = "wait"
    wait.__doc__ = getattr(fn, "__doc__", None)
    wait._trainmon = True
    return wait


def coll_info(coll):
    """The ``coll`` object of the protocol ({"op", "seq", "pg", "bytes"}) of a ``_tls.coll`` tuple, or
    None. Called by the heartbeat and the windows, not per call. Never raises."""
    if not coll:
        return None
    try:
        op, seq, g, args, kwargs = coll
        out = {"op": str(op)[:64]}
        if isinstance(seq, int) and seq >= 0:
            out["seq"] = seq
        out["pg"] = _group_name(g)
        n = _payload_bytes(args, kwargs)
        if n is not None:
            out["bytes"] = n
        return out
    except Exception:
        return None


def _group_name(g):
    try:
        import sys
        c10d = sys.modules.get("torch.distributed.distributed_c10d")
        if c10d is None:
            return "0" if g is None else "?"
        if g is None or g is getattr(c10d.GroupMember, "WORLD", None):
            return "0"  # the default group
        name = c10d._pg_names.get(g)
        text = str(name) if name is not None else "?"
        return "".join(ch for ch in text if " " <= ch <= "~")[:64] or "?"
    except Exception:
        return "?"


def _tensor_bytes(x):
    try:
        n = x.numel() * x.element_size()
        return int(n) if n >= 0 else None
    except Exception:
        return None


def _payload_bytes(args, kwargs):
    """Bytes of the first tensor argument (or the sum over a list of them): the payload."""
    items = list(args[:2]) if args else []
    if kwargs:
        for key in ("tensor", "input", "input_tensor", "output", "output_tensor", "tensor_list"):
            if key in kwargs:
                items.insert(0, kwargs[key])
    for a in items:
        if type(a) is list or type(a) is tuple:
            total = 0
            ok = False
            for x in a[:4096]:
                b = _tensor_bytes(x)
                if b is not None:
                    total += b
                    ok = True
            if ok:
                return total
            continue
        b = _tensor_bytes(a)
        if b is not None:
            return b
    return None


# ---- DistributedDataParallel ----------------------------------------------------------------------

def _first(fut):
    return fut.value()[0]


def _ddp_default(tap, bucket):
    """What DDP does without a comm hook: each gradient divided by the group's size (DDP multiplies
    by 1/size while copying into the bucket; the same multiplication here, on the bucket), summed
    across the group."""
    buf = bucket.buffer()
    buf.mul_(tap.scale)
    return tap.all_reduce(buf, group=tap.group, async_op=True).get_future().then(_first)


class _DdpTap:
    """One DDP module's timing state (the comm hook's ``state``)."""

    __slots__ = ("inner", "inner_state", "user", "lock", "pending", "t_ready", "t_done", "group", "key",
                 "scale", "all_reduce", "done", "__weakref__")

    def __init__(self, group, size, all_reduce):
        self.inner = _ddp_default
        self.inner_state = self
        self.user = False
        self.lock = threading.Lock()
        self.pending = 0
        self.t_ready = None
        self.t_done = 0.0
        self.group = group
        self.key = group
        self.scale = 1.0 / size
        self.all_reduce = all_reduce
        self.done = self._done

    def _done(self, fut):
        try:
            now = _mono()
            with self.lock:
                self.pending -= 1
                if now > self.t_done:
                    self.t_done = now
                wait = None
                if self.pending <= 0 and self.t_ready is not None:
                    wait = self.t_done - self.t_ready
                    self.pending = 0
                    self.t_ready = None
                    self.t_done = 0.0
            if wait is not None:
                _add(wait)
                hot = _tls
                if hot.phase == "collective" and not hot.coll_depth:
                    hot.coll = None
                    hot.phase = "compute"
                    hot.phase_mt = now
        except Exception:
            pass
        return fut.value()


def _ddp_hook(state, bucket):
    """The comm hook registered on every DDP module: the inner hook (DDP's default, or the user's),
    timed."""
    tap = state
    try:
        last = bucket.is_last()
    except Exception:
        last = False
    with tap.lock:
        tap.pending += 1
    try:
        fut = tap.inner(tap.inner_state, bucket)
    except BaseException:
        with tap.lock:
            tap.pending -= 1
        raise
    try:
        then = fut.then
    except Exception:  # not a Future (a user's hook that returns something else): DDP itself then
        with tap.lock:  # raises its own error about the hook, as it does without trainmon
            tap.pending -= 1
        return fut
    if last:
        try:
            t = _mono()
            g = tap.key
            seq = _seqs.get(g, 0)
            _seqs[g] = seq + 1
            with tap.lock:
                tap.t_ready = t
            hot = _tls
            if not hot.coll_depth:
                hot.coll = ("ddp_bucket", seq, g, (bucket.buffer(),), None)
                hot.phase = "collective"
                hot.phase_mt = t
        except Exception:
            pass
    try:
        return then(tap.done)
    except Exception:
        with tap.lock:
            tap.pending -= 1
        return fut


def _uses_sparse(module):
    try:
        import torch
        for m in module.modules():
            if isinstance(m, (torch.nn.Embedding, torch.nn.EmbeddingBag)) and getattr(m, "sparse", False):
                return True
    except Exception:
        return True
    return False


def _attach(ddp, c10d, dist_c):
    """Register the timing hook on a just-built DDP module (skipped when DDP would not take a
    Python hook the same way: sparse gradients)."""
    reducer = getattr(ddp, "reducer", None)
    if reducer is None or _uses_sparse(getattr(ddp, "module", ddp)):
        return
    group = getattr(ddp, "process_group", None)
    size = group.size() if group is not None else c10d.get_world_size()
    tap = _DdpTap(group, size, _state["orig"].get("all_reduce", c10d.all_reduce))
    tap.key = _key(group)
    dist_c._register_comm_hook(reducer, tap, _ddp_hook)
    _taps[ddp] = tap


def _patch_ddp(torch, c10d):
    import sys
    mod = sys.modules.get("torch.nn.parallel.distributed")
    if mod is None:
        import importlib
        mod = importlib.import_module("torch.nn.parallel.distributed")
    ddp_cls = mod.DistributedDataParallel
    dist_c = torch._C._distributed_c10d
    if getattr(ddp_cls.__init__, "_trainmon", False):
        return True
    orig_init = ddp_cls.__init__
    orig_register = ddp_cls.register_comm_hook
    orig_builtin = getattr(ddp_cls, "_register_builtin_comm_hook", None)

    def __init__(self, *args, **kwargs):
        orig_init(self, *args, **kwargs)
        try:
            _attach(self, c10d, dist_c)
        except Exception:
            pass

    def register_comm_hook(self, state, hook):
        tap = _taps.get(self)
        if tap is None or tap.user:
            return orig_register(self, state, hook)
        self._check_comm_hook(hook)
        try:
            self.logger._set_comm_hook_name(hook.__qualname__)
        except Exception:
            pass
        tap.inner, tap.inner_state, tap.user = hook, state, True

    def _register_builtin_comm_hook(self, comm_hook_type):
        tap = _taps.get(self)
        if tap is None or tap.user:
            return orig_builtin(self, comm_hook_type)
        kinds = getattr(c10d, "BuiltinCommHookType", None) or getattr(dist_c, "BuiltinCommHookType")
        if comm_hook_type == kinds.ALLREDUCE:
            inner, state = _ddp_default, tap
        elif comm_hook_type == getattr(kinds, "FP16_COMPRESS", object()):
            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
            inner, state = default_hooks.fp16_compress_hook, self.process_group
        else:
            return orig_builtin(self, comm_hook_type)
        try:
            self.logger._set_comm_hook_name(str(comm_hook_type))
        except Exception:
            pass
        tap.inner, tap.inner_state, tap.user = inner, state, True

    for new, old in ((__init__, orig_init), (register_comm_hook, orig_register),
                     (_register_builtin_comm_hook, orig_builtin)):
        if old is None:
            continue
        new.__wrapped__ = old
        new.__name__ = old.__name__
        new.__qualname__ = getattr(old, "__qualname__", old.__name__)
        new.__doc__ = old.__doc__
        new._trainmon = True
    ddp_cls.__init__ = __init__
    ddp_cls.register_comm_hook = register_comm_hook
    if orig_builtin is not None:
        ddp_cls._register_builtin_comm_hook = _register_builtin_comm_hook
    return True


def install(torch, ddp=True):
    """Wrap torch.distributed's collectives, Work.wait() and (with ``ddp``) DDP's construction.
    Returns what is timed, or None when torch.distributed is not available. Raises on an unexpected
    torch (the caller reports it in one line; the job goes on untimed)."""
    if _state["installed"]:
        return _state["how"]
    dist = getattr(torch, "distributed", None)
    if dist is None or not dist.is_available():
        return None
    import sys
    c10d = sys.modules.get("torch.distributed.distributed_c10d")
    if c10d is None:
        import importlib
        c10d = importlib.import_module("torch.distributed.distributed_c10d")
    _cuda["torch"] = torch
    _members[0] = c10d.GroupMember
    orig = _state["orig"]
    for name, gpos in _WRAPPED.items():
        fn = getattr(c10d, name, None)
        if fn is None or not callable(fn) or getattr(fn, "_trainmon", False):
            continue
        orig[name] = fn
        w = _wrap(name, fn, gpos)
        setattr(c10d, name, w)
        if getattr(dist, name, None) is fn:
            setattr(dist, name, w)
    work = getattr(torch._C._distributed_c10d, "Work", None)
    if work is not None and not getattr(work.wait, "_trainmon", False):
        work.wait = _wrap_wait(work.wait)
    how = "functions"
    if ddp:
        try:
            if _patch_ddp(torch, c10d):
                how = "functions+ddp"
                _state["ddp"] = True
        except Exception:
            pass
    _state.update(installed=True, how=how)
    return how


_timing._coll_info = coll_info
