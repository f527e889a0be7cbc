# SPDX-License-Identifier: Apache-2.0
"""Shared helpers of the Python package's tests (no tests here): a test-side recorder socket and
a checker of the events protocol (docs/python.md, "Message fields" and "Step timing"), so that
every message the package sends in a test is also checked against the table the recorder applies
(one out-of-range field makes the recorder refuse the whole message)."""

import json
import math
import os
import select
import socket
import sys
import threading
import time

SOURCE_DIR = os.environ.get("TRAINMON_SOURCE_DIR",
                            os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PYTHON_DIR = os.path.join(SOURCE_DIR, "python")
BOOT_DIR = os.path.join(PYTHON_DIR, "boot")
if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)

# The C speedups (python/trainmon/_speedups.c) are a build output, not in the source tree: ctest
# gives the built module's path (TRAINMON_SPEEDUPS_SO), loaded here as trainmon._speedups before
# the package (imported from the source tree) looks for it. TRAINMON_NO_SPEEDUPS=1: the package
# ignores it (the pure-Python pass). docs/python.md, "Speedups".
SPEEDUPS_SO = os.environ.get("TRAINMON_SPEEDUPS_SO") or None
if SPEEDUPS_SO and "trainmon._speedups" not in sys.modules and os.path.isfile(SPEEDUPS_SO):
    import importlib.machinery
    import importlib.util
    _spec = importlib.util.spec_from_file_location(
        "trainmon._speedups", SPEEDUPS_SO, loader=importlib.machinery.ExtensionFileLoader("trainmon._speedups",
                                                                                         SPEEDUPS_SO))
    _mod = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_mod)
    sys.modules["trainmon._speedups"] = _mod

SANITIZED = os.environ.get("TRAINMON_SANITIZED") == "1"


def reset_package():
    """Forget the process-wide state of the package (step timer, shared client, printing
    Monitors), so that each test starts as a fresh process would."""
    from trainmon import _client, _i18n, _identity, _timing
    _timing._reset_for_tests()
    _i18n.reset()
    _client._process_client = None
    _identity._lines.clear()


class Clock:
    """A fake time.monotonic() for the step timer and the callbacks: time passes only in sleep()."""

    def __init__(self, t=1000.0):
        self.t = t

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s


class Receiver:
    """A test-side recorder: a listening seqpacket socket. ``messages()`` reads what is queued;
    with ``thread=True`` a thread drains every connection as it comes (for child processes)."""

    def __init__(self, path, thread=False):
        self.path = str(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.bind(self.path)
        self.sock.listen(64)
        self.sock.setblocking(False)
        self.conns = []
        self.got = []
        self._lock = threading.Lock()
        self._stop = False
        self._thread = None
        if thread:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except (BlockingIOError, OSError):
                return
            c.setblocking(False)
            self.conns.append(c)

    def _drain(self):
        out = []
        for c in list(self.conns):
            while True:
                try:
                    data = c.recv(70000)
                except (BlockingIOError, OSError):
                    break
                if not data:
                    self.conns.remove(c)
                    c.close()
                    break
                out.append(json.loads(data))
        return out

    def _run(self):
        while not self._stop:
            try:
                select.select([self.sock] + self.conns, [], [], 0.05)
                with self._lock:
                    self._accept()
                    self.got.extend(self._drain())
            except Exception:
                time.sleep(0.05)

    def messages(self):
        """Every message received so far (and not returned before)."""
        with self._lock:
            self._accept()
            self.got.extend(self._drain())
            out, self.got = self.got, []
        return out

    def close(self):
        self._stop = True
        if self._thread is not None:
            self._thread.join(timeout=2)
        for c in self.conns:
            c.close()
        self.sock.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass


# ---- the protocol's field table (docs/python.md) ---------------------------------------------

TYPES = {"hello", "train_start", "epoch_start", "batch_end", "epoch_end", "val_end", "memory", "heartbeat",
         "train_end"}
_INT = {"seq": (0, 10 ** 15), "pid": (1, 4194304), "rank": (0, 65535), "gpu": (0, 1023), "local_rank": (0, 65535),
        "node_rank": (0, 65535), "world_size": (1, 65536), "stack_signal": (1, 64), "epoch": (0, 10 ** 9),
        "epochs": (0, 10 ** 9), "batch": (0, 10 ** 15), "batches": (0, 10 ** 15), "step": (0, 10 ** 15),
        "batch_size": (1, 10 ** 7), "imgsz": (1, 10 ** 6), "rss_bytes": (0, 2 ** 53), "dropped": (0, 2 ** 53)}
_NUM = {"t": (1e9, 1e10), "mt": (0, 1e10), "lines": (0, 1e7), "loss": (-1e30, 1e30), "lr": (0, 1e6)}
_TEXT = {"host": 128, "gpu_uuid": 128, "cuda_visible_devices": 1024, "cuda_device_order": 128,
         "framework": 128, "run_id": 128}
_STATS = ("sum", "min", "max", "p50", "p90", "p99")


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _printable(s, n):
    return isinstance(s, str) and 0 < len(s) <= n and all(" " <= ch <= "~" for ch in s)


def check_steps(steps, where="steps"):
    assert isinstance(steps, dict), where
    n = steps.get("n")
    assert _is_int(n) and 0 <= n <= 10 ** 9, (where, n)
    for key in ("step_s", "data_s", "comm_s"):
        if key in steps:
            assert n > 0, (where, "stats without steps")
            st = steps[key]
            assert set(st) == set(_STATS), (where, key, st)
            assert all(_is_num(st[k]) and 0 <= st[k] <= 1e7 for k in _STATS), (where, key, st)
            assert st["min"] <= st["p50"] <= st["p90"] <= st["p99"] <= st["max"], (where, key, st)
            assert n * st["min"] - 1e-5 <= st["sum"] <= n * st["max"] + 1e-5, (where, key, st)
    if n:
        assert "step_s" in steps, (where, "n > 0 without step_s")
    if "samples" in steps:
        assert _is_int(steps["samples"]) and 0 <= steps["samples"] <= 10 ** 15, where
    if "span_s" in steps:
        assert _is_num(steps["span_s"]) and 0 <= steps["span_s"] <= 1e7, where
        assert steps["span_s"] + 1e-5 >= steps["step_s"]["sum"], (where, "span shorter than its steps")
    total = steps.get("total")
    assert isinstance(total, dict), (where, "no total")
    assert _is_int(total.get("steps")) and 0 <= total["steps"] <= 10 ** 15, where
    assert _is_num(total.get("step_s")) and 0 <= total["step_s"] <= 1e7, where
    for k in ("samples",):
        if k in total:
            assert _is_int(total[k]) and 0 <= total[k] <= 10 ** 15, where
    if "data_s" in total:
        assert _is_num(total["data_s"]) and 0 <= total["data_s"] <= total["step_s"] + 1e-5, where
    if "comm_s" in total:
        assert _is_num(total["comm_s"]) and 0 <= total["comm_s"] <= total["step_s"] + 1e-5, where
        assert total["comm_s"] + total.get("data_s", 0.0) <= total["step_s"] + 2e-5, where
    if "last_step_t" in steps:
        assert _is_num(steps["last_step_t"]) and 1e9 <= steps["last_step_t"] <= 1e10, where
        assert _is_num(steps["last_step_mt"]) and 0 <= steps["last_step_mt"] <= 1e10, where
    assert steps.get("phase") in ("data", "compute", "idle", "collective", "optimizer"), (where, steps.get("phase"))
    assert _is_num(steps.get("phase_mt")) and 0 <= steps["phase_mt"] <= 1e10, where
    if "coll" in steps:  # protocol v3: the collective the rank is inside
        c = steps["coll"]
        assert steps["phase"] == "collective", where
        assert _printable(c.get("op"), 128), (where, c)
        assert set(c) <= {"op", "seq", "pg", "bytes"}, (where, c)
        if "seq" in c:
            assert _is_int(c["seq"]) and 0 <= c["seq"] <= 10 ** 15, (where, c)
        if "pg" in c:
            assert _printable(c["pg"], 128), (where, c)
        if "bytes" in c:
            assert _is_int(c["bytes"]) and 0 <= c["bytes"] <= 2 ** 53, (where, c)
    extra = set(steps) - {"n", "samples", "span_s", "step_s", "data_s", "comm_s", "total", "last_step_t",
                          "last_step_mt", "phase", "phase_mt", "coll"}
    assert not extra, (where, extra)


def check_message(m):
    """Assert that ``m`` (a decoded message) passes the recorder's field table."""
    assert isinstance(m, dict)
    assert m.get("v") == 3, m
    assert m.get("type") in TYPES, m
    for k, (lo, hi) in _INT.items():
        if k in m:
            assert _is_int(m[k]) and lo <= m[k] <= hi, (k, m[k], m["type"])
    for k, (lo, hi) in _NUM.items():
        if k in m:
            assert _is_num(m[k]) and lo <= m[k] <= hi, (k, m[k], m["type"])
    assert "t" in m and "mt" in m
    for k, n in _TEXT.items():
        if k in m:
            assert _printable(m[k], n), (k, m[k])
    if "torch" in m:
        assert isinstance(m["torch"], dict)
        for k, v in m["torch"].items():
            assert _is_int(v) and 0 <= v <= 2 ** 53, (k, v)
    if "steps" in m:
        check_steps(m["steps"], m["type"])
    if m["type"] == "heartbeat":
        assert m["steps"]["n"] == 0 and "step_s" not in m["steps"], m
    assert len(json.dumps(m, separators=(",", ":"))) <= 64 * 1024
    return m


def check_all(msgs):
    for m in msgs:
        check_message(m)
    return msgs


def of_type(msgs, kind):
    return [m for m in msgs if m["type"] == kind]


def windows(msgs):
    """The steps windows in order (heartbeats excluded)."""
    return [m["steps"] for m in msgs if "steps" in m and m["type"] != "heartbeat"]


def window_totals(msgs):
    """Steps, summed step time and data wait over every window of ``msgs``."""
    ws = windows(msgs)
    n = sum(w["n"] for w in ws)
    step = sum(w["step_s"]["sum"] for w in ws if w["n"])
    data = sum(w["data_s"]["sum"] for w in ws if "data_s" in w)
    return n, step, data


# ---- stand-ins for the frameworks' training loops --------------------------------------------
# Each calls the callback's hooks in the library's order with the library's signatures. The work
# itself comes from callables: fetch(i) -> batch (the loader's next()), compute(batch) -> loss
# (forward, backward, optimizer step), validate() (one evaluation batch).

import types  # noqa: E402


class LightningStandIn:
    """lightning 2.x (`Trainer.fit` -> `_run_sanity_check`, `_FitLoop`, `_TrainingEpochLoop.advance`
    and `on_advance_end`): sanity-check validation, on_train_start, then per epoch
    on_train_epoch_start; per batch the fetch (`next(data_fetcher)`, batch_to_device),
    on_train_batch_start(trainer, pl_module, batch, batch_idx), the training step,
    on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx), validation when due
    (every `val_every` batches and at the epoch end: on_validation_start, on_validation_epoch_start,
    batches, on_validation_epoch_end, on_validation_end); on_train_epoch_end; on_train_end."""

    def __init__(self, callback, epochs, batches, fetch, compute, validate, val_batches=2, val_every=None):
        self.cb, self.epochs, self.batches = callback, epochs, batches
        self.fetch, self.compute, self.validate = fetch, compute, validate
        self.val_batches, self.val_every = val_batches, val_every
        self.trainer = types.SimpleNamespace(current_epoch=0, max_epochs=epochs, global_step=0,
                                             num_training_batches=batches, sanity_checking=False,
                                             callback_metrics={})
        self.module = object()

    def _val_loop(self):
        cb, tr, pl = self.cb, self.trainer, self.module
        cb.on_validation_start(tr, pl)
        cb.on_validation_epoch_start(tr, pl)
        for i in range(self.val_batches):
            cb.on_validation_batch_start(tr, pl, None, i, 0)
            self.validate()
            cb.on_validation_batch_end(tr, pl, {"val_loss": 1.0}, None, i, 0)
        cb.on_validation_epoch_end(tr, pl)
        cb.on_validation_end(tr, pl)

    def fit(self):
        cb, tr, pl = self.cb, self.trainer, self.module
        tr.sanity_checking = True
        cb.on_sanity_check_start(tr, pl)
        self._val_loop()
        cb.on_sanity_check_end(tr, pl)
        tr.sanity_checking = False
        cb.on_train_start(tr, pl)
        for epoch in range(self.epochs):
            tr.current_epoch = epoch
            cb.on_train_epoch_start(tr, pl)
            for i in range(self.batches):
                batch = self.fetch(i)
                cb.on_train_batch_start(tr, pl, batch, i)
                loss = self.compute(batch)
                tr.global_step += 1
                cb.on_train_batch_end(tr, pl, {"loss": loss}, batch, i)
                last = i == self.batches - 1
                if last or (self.val_every and (i + 1) % self.val_every == 0):
                    self._val_loop()
            tr.callback_metrics = {"train_loss": loss}
            cb.on_train_epoch_end(tr, pl)
        cb.on_train_end(tr, pl)


class HFStandIn:
    """transformers >= 4.46 `Trainer._inner_training_loop`: on_train_begin; per epoch
    on_epoch_begin, iter(train_dataloader); per update `get_batch_samples` takes
    gradient_accumulation_steps batches, then per micro-batch on_step_begin (first one only), the
    training step, and on_substep_end or, after the optimizer step, on_step_end followed by
    `_maybe_log_save_evaluate` (on_log; every `eval_steps` an evaluation: on_prediction_step per
    batch, on_evaluate; every `save_steps` on_save); on_epoch_end (+ log/save/evaluate); on_train_end.
    The callback handler passes model, processing_class, optimizer, lr_scheduler,
    train_dataloader and eval_dataloader as keyword arguments."""

    def __init__(self, callback, epochs, updates, fetch, compute, validate, per_device=8, gas=2,
                 eval_steps=None, save_steps=None, eval_batches=2):
        self.cb = callback
        self.epochs, self.updates, self.fetch, self.compute, self.validate = epochs, updates, fetch, compute, validate
        self.args = types.SimpleNamespace(num_train_epochs=float(epochs), per_device_train_batch_size=per_device,
                                          gradient_accumulation_steps=gas, logging_steps=1)
        self.state = types.SimpleNamespace(epoch=0.0, global_step=0)
        self.control = types.SimpleNamespace(should_epoch_stop=False, should_training_stop=False)
        self.eval_steps, self.save_steps, self.eval_batches = eval_steps, save_steps, eval_batches
        self.kw = dict(model=object(), processing_class=None, optimizer=object(), lr_scheduler=object(),
                       train_dataloader=object(), eval_dataloader=object())

    def _call(self, event, **extra):
        getattr(self.cb, event)(self.args, self.state, self.control, **dict(self.kw, **extra))

    def _log_save_evaluate(self, loss):
        self._call("on_log", logs={"loss": loss, "learning_rate": 0.01})
        if self.eval_steps and self.state.global_step % self.eval_steps == 0:
            for _ in range(self.eval_batches):
                self.validate()
                self._call("on_prediction_step")
            self._call("on_evaluate", metrics={"eval_loss": 1.0})
        if self.save_steps and self.state.global_step % self.save_steps == 0:
            self._call("on_save")

    def train(self):
        gas = self.args.gradient_accumulation_steps
        self._call("on_train_begin")
        step = -1
        for epoch in range(self.epochs):
            self._call("on_epoch_begin")
            step = -1
            for u in range(self.updates):
                batch_samples = [self.fetch(u * gas + k) for k in range(gas)]
                for i, inputs in enumerate(batch_samples):
                    step += 1
                    if step % gas == 0:
                        self._call("on_step_begin")
                    loss = self.compute(inputs)
                    if (step + 1) % gas == 0:
                        self.state.global_step += 1
                        self.state.epoch = epoch + (u + 1) / self.updates
                        self._call("on_step_end")
                        self._log_save_evaluate(float(loss))
                    else:
                        self._call("on_substep_end")
            self._call("on_epoch_end")
            self._log_save_evaluate(float(loss))
        self._call("on_train_end")


class UltralyticsStandIn:
    """ultralytics 8.x `BaseTrainer._do_train`: on_train_start; per epoch on_train_epoch_start;
    per batch of `enumerate(self.train_loader)` on_train_batch_start, forward/backward, the optimizer
    step every `accumulate` batches, on_batch_end (rank 0), on_train_batch_end; then
    on_train_epoch_end, validation, saving (on_model_save), on_fit_epoch_end; on_train_end (rank 0).
    `batch_size` is the global batch; `world_size` the device count (the loader holds
    batch_size // world_size per rank)."""

    def __init__(self, epochs, batches, fetch, compute, validate, batch_size=16, world_size=0, val_batches=2):
        self.callbacks = {}
        self.epoch, self.epochs, self.batch_size, self.world_size = 0, epochs, batch_size, world_size
        self.args = types.SimpleNamespace(imgsz=640)
        self.tloss = None
        self.batches, self.fetch, self.compute, self.validate, self.val_batches = (
            batches, fetch, compute, validate, val_batches)

    def add_callback(self, event, fn):
        self.callbacks.setdefault(event, []).append(fn)

    def run_callbacks(self, event):
        for callback in self.callbacks.get(event, []):
            callback(self)

    def train(self):
        self.run_callbacks("on_train_start")
        for epoch in range(self.epochs):
            self.epoch = epoch
            self.run_callbacks("on_train_epoch_start")
            self.tloss = None
            for i in range(self.batches):
                batch = self.fetch(i)
                self.run_callbacks("on_train_batch_start")
                loss = self.compute(batch)
                self.tloss = loss if self.tloss is None else (self.tloss * i + loss) / (i + 1)
                self.run_callbacks("on_batch_end")
                self.run_callbacks("on_train_batch_end")
            self.run_callbacks("on_train_epoch_end")
            for _ in range(self.val_batches):
                self.validate()
            self.run_callbacks("on_model_save")
            self.run_callbacks("on_fit_epoch_end")
        self.run_callbacks("on_train_end")


# Inputs that raise from every operation (the never-raise tests of test_python_robust and
# test_python_speedups).
class Boom(Exception):
    pass


class Hostile:
    """Everything raises: attributes, len, bool, iteration, numbers, comparison, str."""

    def __getattr__(self, name):
        raise Boom(name)

    def __len__(self):
        raise Boom("len")

    def __bool__(self):
        raise Boom("bool")

    def __iter__(self):
        raise Boom("iter")

    def __float__(self):
        raise Boom("float")

    def __int__(self):
        raise Boom("int")

    def __index__(self):
        raise Boom("index")

    def __eq__(self, other):
        raise Boom("eq")

    def __lt__(self, other):
        raise Boom("lt")

    __hash__ = object.__hash__

    def __str__(self):
        raise Boom("str")

    def __repr__(self):  # hypothesis prints the examples it draws
        return "Hostile()"
