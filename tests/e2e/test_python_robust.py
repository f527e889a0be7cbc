# SPDX-License-Identifier: Apache-2.0
"""Never raise, whatever the training script hands us (python3-hypothesis): every public function
of the package and every framework hook gets arbitrary values (None, NaN, inf, huge ints,
negatives, strings, bytes, nested containers, CPU tensors, tensors that claim to be on CUDA, objects
whose every attribute, __len__, __bool__, shape or __float__ raises) and must return normally; and
every message it sends meanwhile must still pass the protocol's field table (an out-of-range field
would make the recorder refuse the whole message)."""

import io
import math
import os
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_python_helpers import SANITIZED, Boom, Hostile, Receiver, check_all, reset_package

import trainmon  # noqa: E402
from trainmon import _auto, _format, _timing, _values, hf, lightning, ultralytics  # noqa: E402

try:
    import torch
except Exception:  # the package must not need torch
    torch = None


class BadShape:
    @property
    def shape(self):
        raise Boom("shape")


class HugeShape:
    shape = (10 ** 30, 3)


class FakeCuda:
    """A tensor-like that says it lives on the GPU: reading it would synchronise."""

    is_cuda = True
    shape = (8,)

    def __float__(self):
        raise AssertionError("a CUDA value was read")

    def item(self):
        raise AssertionError("a CUDA value was read")

    def numel(self):
        return 1


ATOMS = [None, True, False, 0, -1, 1, 2 ** 63, 10 ** 400, -10 ** 400, float("nan"), float("inf"), float("-inf"),
         -0.0, 1e308, 1e-320, "", "abc", "12", "\x00\u2028é", b"\xff", bytearray(b"x"), Hostile(), BadShape(),
         HugeShape(), FakeCuda(), object(), [], (), {}, {"loss": Hostile()}, [Hostile()], (BadShape(), 1),
         {"a": HugeShape()}, {Hostile(): 1}, range(3), iter([1, 2]), print]
if torch is not None:
    ATOMS += [torch.tensor(float("nan")), torch.tensor(3), torch.tensor([1.0, 2.0]), torch.zeros(0),
              torch.zeros(4, 3, 8, 8), torch.tensor(10 ** 18), torch.tensor(True)]

anything = st.recursive(
    st.sampled_from(ATOMS) | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner) | st.dictionaries(st.text(max_size=5), inner,
                                                                                          max_size=3),
    max_leaves=6)

# database=None: no .hypothesis/ directory is written into the source tree.
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)

# Pure Python: the sanitizer pass would run exactly the same code again (30 s of CI for nothing).
pytestmark = pytest.mark.skipif(SANITIZED, reason="pure Python: runs in the release pass only")

_dir = tempfile.mkdtemp(prefix="trainmon-robust-")
_rx = Receiver(os.path.join(_dir, "events.sock"))


@pytest.fixture(autouse=True)
def environment(monkeypatch):
    monkeypatch.setenv("TRAINMON_EVENTS_SOCKET", _rx.path)
    monkeypatch.setenv("TRAINMON_NO_AGENT", "1")
    monkeypatch.delenv("TRAINMON_DISABLE", raising=False)
    reset_package()
    yield
    check_all(_rx.messages())
    reset_package()


def _checked():
    """Every message sent so far must be valid protocol."""
    check_all(_rx.messages())


def _obj(values):
    """An object with the given attributes (a stand-in trainer / args / state)."""
    class Obj:
        pass

    o = Obj()
    for k, v in values.items():
        setattr(o, k, v)
    return o


attrs = st.dictionaries(st.sampled_from(["epoch", "epochs", "batch_size", "world_size", "args", "tloss",
                                         "current_epoch", "max_epochs", "global_step", "num_training_batches",
                                         "sanity_checking", "callback_metrics", "num_train_epochs",
                                         "per_device_train_batch_size", "gradient_accumulation_steps", "imgsz"]),
                        anything, max_size=8)
holders = attrs.map(_obj) | st.sampled_from([Hostile(), None, 3, "trainer", object()])


# ---- public functions -----------------------------------------------------------------------------

@SETTINGS
@given(st.dictionaries(st.sampled_from(["epoch", "batch", "batch_size", "loss", "epochs", "step", "lr", "imgsz"]),
                       anything, max_size=8), st.integers(1, 3))
def test_step_takes_anything(kwargs, n):
    with trainmon.session(interval=0, stream=io.StringIO(), batch_events_per_s=0):
        for _ in range(n):
            assert trainmon.step(**kwargs) is None
    trainmon.epoch_end(kwargs.get("epoch"), kwargs.get("epochs"), kwargs.get("loss"))
    assert isinstance(trainmon.resource_line(), str)
    _checked()


@SETTINGS
@given(anything, anything, anything, anything, anything, anything, anything)
def test_session_and_monitor_options_take_anything(interval, epochs, batch_size, imgsz, rate, framework, logger):
    with trainmon.session(interval=interval, epochs=epochs, batch_size=batch_size, imgsz=imgsz,
                          batch_events_per_s=rate, framework=framework, logger=logger, stream=io.StringIO()) as mon:
        trainmon.step(epoch=0)
        mon.maybe_print()
    m = trainmon.Monitor(interval=interval, framework=framework, logger=logger, stream=logger,
                         batch_events_per_s=rate, start_agent=rate, proc_root=framework, env=imgsz,
                         send_events=epochs)
    m.batch_end(epoch=epochs, batch=batch_size, batch_size=imgsz, loss=rate, step=framework, lr=interval)
    m.epoch_end(epoch=interval, epochs=epochs, loss=logger, batch_size=batch_size, imgsz=imgsz, kind=framework)
    m.send(framework if isinstance(framework, str) else "memory", epoch=rate, memory=True)
    m.train_end(epoch=imgsz, epochs=rate, step=logger)
    assert m.maybe_print() is None or isinstance(m.last_line, str)
    assert isinstance(m.resource_line(epoch=rate, epochs=interval, step=imgsz), str)
    m.close()
    _checked()


@SETTINGS
@given(st.lists(anything, max_size=6), anything)
def test_loader_wraps_anything_and_iterates_as_the_object_does(items, obj):
    got = list(trainmon.loader(items))
    assert len(got) == len(items) and all(a is b for a, b in zip(got, items))
    wrapped = trainmon.loader(obj)
    try:
        expected = list(iter(obj))
    except BaseException as e:
        kind = type(e)
        with pytest.raises(kind):
            list(wrapped)
    else:
        if not isinstance(obj, type(iter([]))):  # a one-shot iterator is used up by now
            assert len(list(wrapped)) == len(expected)
    trainmon.step(epoch=0)
    repr(wrapped)
    _checked()


@SETTINGS
@given(anything, anything, anything, anything, anything, anything, anything, anything, anything, anything)
def test_format_functions_take_anything(gpus, memory, cpu, rss, tmem, epoch, epochs, step, train, elapsed):
    line = _format.format_resource_line(gpus=gpus, memory=memory, cpu_pct=cpu, rss_bytes=rss, torch_mem=tmem,
                                        epoch=epoch, epochs=epochs, step=step, train=train, elapsed_s=elapsed)
    assert isinstance(line, str) and line.startswith("Resource")
    assert isinstance(_format.short_gpu_name(gpus), str)
    assert isinstance(_format.format_progress(epoch, epochs, step, elapsed), str)
    out = _format.format_train(cpu, rss, tmem)
    assert out is None or isinstance(out, str)


@SETTINGS
@given(anything)
def test_value_readers_take_anything(v):
    for fn in (lambda x: _values.int_in(x, 0, 10), lambda x: _values.num_in(x, -1, 1),
               lambda x: _values.text(x, 8), _values.batch_samples):
        r = fn(v)
        assert r is None or isinstance(r, (int, float, str))
        if isinstance(r, float):
            assert math.isfinite(r)


# ---- framework hooks --------------------------------------------------------------------------------

@SETTINGS
@given(holders, anything, anything, anything, st.lists(anything, max_size=2))
def test_lightning_hooks_take_anything(trainer, batch, outputs, batch_idx, extra):
    cb = lightning.TrainmonCallback(interval=0, stream=io.StringIO(), batch_events_per_s=0)
    cb.on_train_start(trainer, None)
    cb.on_train_epoch_start(trainer, None)
    cb.on_train_batch_start(trainer, None, batch, batch_idx, *extra)
    cb.on_train_batch_end(trainer, None, outputs, batch, batch_idx, *extra)
    cb.on_validation_start(trainer, None)
    cb.on_validation_epoch_end(trainer, None)
    cb.on_validation_end(trainer, None)
    cb.on_train_epoch_end(trainer, None)
    cb.on_train_end(trainer, None)
    _checked()


@SETTINGS
@given(holders, holders, anything, anything)
def test_hf_hooks_take_anything(args, state, control, logs):
    cb = hf.TrainmonCallback(interval=0, stream=io.StringIO(), batch_events_per_s=0)
    for hook in ("on_train_begin", "on_epoch_begin", "on_step_begin", "on_substep_end", "on_step_end",
                 "on_prediction_step", "on_evaluate", "on_save", "on_epoch_end"):
        getattr(cb, hook)(args, state, control, model=logs)
    cb.on_log(args, state, control, logs=logs)
    cb.on_log(args, state, control, logs={"loss": logs})
    cb.on_step_end(args, state, control)
    cb.on_train_end(args, state, control)
    _checked()


@SETTINGS
@given(holders, holders)
def test_ultralytics_hooks_take_anything(trainer, model):
    rm = ultralytics.ResourceMonitor(interval=0, stream=io.StringIO(), batch_events_per_s=0)
    for hook in ultralytics.HOOKS:
        getattr(rm, hook)(trainer)
        rm(trainer)
    ultralytics.register(model, interval=0, stream=io.StringIO())
    assert ultralytics.rank_batch_size(trainer) is None or ultralytics.rank_batch_size(trainer) >= 1
    _checked()


@SETTINGS
@given(anything, anything)
def test_zero_code_hook_functions_take_anything(optimizer, batch):
    _auto._on_optimizer_step(optimizer)
    T = _timing.timer()
    T.loader_batch("dl", 1, 1.0, 2.0, batch)
    _auto._on_optimizer_step(optimizer)
    _auto._report_step(1.0)
    _auto._epoch_done(batch)
    _auto._at_exit()
    assert T.take_window() is None or T.take_window()["total"]["steps"] >= 0


def test_a_recorder_that_is_gone_costs_nothing(tmp_path, monkeypatch):
    """10,000 batch hooks and steps with a socket path where nobody listens: each call stays
    cheap (retry gate) and nothing raises. Prints the per-call cost; no timing assertion."""
    import time
    monkeypatch.setenv("TRAINMON_EVENTS_SOCKET", str(tmp_path / "gone.sock"))
    cb = ultralytics.ResourceMonitor(interval=None, batch_events_per_s=0)
    trainer = _obj({"epoch": 0, "epochs": 3, "batch_size": 16})
    t0 = time.perf_counter()
    for _ in range(10000):
        cb.on_train_batch_start(trainer)
        cb.on_train_batch_end(trainer)
    per = (time.perf_counter() - t0) / 10000 * 1e6
    print("gone recorder: %.1f us per step (two hooks, an event attempt each)" % per)
    assert cb.monitor.sent == 0 and cb.monitor.dropped >= 10000
    assert cb.monitor.client.last_error
