# SPDX-License-Identifier: Apache-2.0
"""The optional C loader iterator (python/trainmon/_speedups.c) against the Python one it mirrors
(_timing._PyTimedIterator): the same batches, the same journal entries (codes, keys, times, sample
counts), the same _Hot fields after every next(), the same exceptions, for batches of every kind
(python3-hypothesis); no reference leaked. Skipped where the module was not built (ctest passes its
path: TRAINMON_SPEEDUPS_SO, see test_python_helpers)."""

import itertools
import os
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_python_helpers import SPEEDUPS_SO, Boom, Hostile, reset_package

import trainmon  # noqa: E402
from trainmon import _timing  # noqa: E402

try:
    import torch
except Exception:  # the package must not need torch
    torch = None

_timing._learn_torch()
C = _timing._load_speedups(force=True)
PY = _timing._PyTimedIterator
NO_SPEEDUPS = os.environ.get("TRAINMON_NO_SPEEDUPS", "") not in ("", "0")

needs_c = pytest.mark.skipif(C is None, reason="trainmon._speedups not built (TRAINMON_SPEEDUPS_SO unset)")


@pytest.fixture(autouse=True)
def fresh_package():
    reset_package()
    yield
    reset_package()


def test_the_c_iterator_is_used_when_built_and_not_refused():
    if SPEEDUPS_SO:
        assert C is not None, "TRAINMON_SPEEDUPS_SO is set but trainmon._speedups did not load"
    expected = C if C is not None and not NO_SPEEDUPS else PY
    assert _timing._TimedIterator is expected
    assert type(iter(trainmon.loader([1]))) is expected


@needs_c
def test_clock_is_time_monotonic():
    from trainmon import _speedups
    for _ in range(100):
        a = time.monotonic()
        b = _speedups.now()
        c = time.monotonic()
        assert a <= b <= c


class BadShape:
    @property
    def shape(self):
        raise Boom("shape")


class ShapeNotIndexable:
    shape = 5


class FloatShape:
    shape = (3.0, 2)


class HugeShape:
    shape = (10 ** 30, 3)


class BoolShape:
    shape = (True,)


class Shape:
    def __init__(self, n):
        self.shape = (n, 3)


ATOMS = [None, True, 0, -1, 1, 2 ** 63, 10 ** 400, float("nan"), float("inf"), "", "abc", b"\xff", BadShape(),
         ShapeNotIndexable(), FloatShape(), HugeShape(), BoolShape(), Hostile(), object(), Shape(4), Shape(0),
         Shape(10 ** 7), Shape(10 ** 7 + 1), [], (), {}, {"x": Shape(3)}, {Hostile(): 1}, range(3)]
if torch is not None:
    ATOMS += [torch.zeros(1, 1), torch.zeros(32, 3), torch.tensor(3.0), torch.zeros(0), torch.zeros(0, 4),
              torch.tensor(True), [torch.zeros(8, 2), torch.zeros(8)], (torch.zeros(5),), {"x": torch.zeros(6, 1)}]

batches = st.recursive(
    st.sampled_from(ATOMS) | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner) | st.dictionaries(st.text(max_size=3), inner,
                                                                                          max_size=3),
    max_leaves=5)

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)


def trace(cls, items, level=_timing.LOOP):
    """What iterating ``items`` through ``cls`` does, step by step, on a counting clock."""
    ticks = itertools.count()
    saved = _timing._mono
    _timing._mono = lambda: next(ticks) * 0.5
    try:
        reset_package()
        T = _timing.timer()
        T.level = level
        it = cls(iter(items), ("loader", 7))
        hot = _timing._tls
        out = []
        for _ in range(len(items) + 2):
            try:
                b = next(it)
            except StopIteration:
                out.append(("stop", hot.depth, hot.phase, hot.phase_mt, len(_timing._journal)))
                break
            entries = list(_timing._journal)
            _timing._journal.clear()
            for e in entries:
                assert len(e) == 6 and e[2] == id(it)
            out.append((id(b), [(e[0], e[1], e[3], e[4], type(e[5]), e[5]) for e in entries],
                        hot.depth, hot.phase, hot.phase_mt))
        return out
    finally:
        _timing._mono = saved


def ids(items):
    return [id(x) for x in items]


@needs_c
@SETTINGS
@given(st.lists(batches, max_size=6))
def test_same_batches_and_journal_as_python(items):
    py, c = trace(PY, items), trace(C, items)
    assert c == py
    assert [x[0] for x in c[:-1]] == ids(items)  # the very objects, in order
    assert c[-1][0] == "stop"


@needs_c
def test_same_for_every_atom_and_nested_levels():
    for level in (_timing.AUTO, _timing.LOOP, _timing.FRAMEWORK):
        assert trace(C, ATOMS, level) == trace(PY, ATOMS, level)
    # inside another timed next() (depth set): passed through, nothing journaled
    for cls in (C, PY):
        reset_package()
        _timing._tls.depth = 1
        assert list(cls(iter(ATOMS), ("k",))) == ATOMS
        assert _timing._journal == [] and _timing._tls.phase == "idle"


@needs_c
def test_tensor_samples():
    if torch is None:
        pytest.skip("no torch")
    items = [torch.zeros(1, 1), [torch.zeros(7, 2), 1], (torch.zeros(0, 2),), torch.tensor(2.0)]
    got = trace(C, items)
    assert got == trace(PY, items)
    assert [e[1][0][5] for e in got[:-1]] == [1, 7, -1, -1]


@needs_c
def test_exceptions_of_the_wrapped_iterator_propagate_unchanged():
    class Fails:
        def __init__(self, exc):
            self.exc = exc

        def __iter__(self):
            return self

        def __next__(self):
            raise self.exc

    for exc in (Boom("x"), StopIteration("value"), KeyboardInterrupt(), GeneratorExit(), SystemExit(3)):
        for cls in (C, PY):
            reset_package()
            it = cls(Fails(exc), ("k",))
            with pytest.raises(BaseException) as info:
                next(it)
            assert info.value is exc, (cls, exc)
            assert _timing._tls.depth == 0

    def gen():
        yield 1
        raise Boom("in the generator")

    for cls in (C, PY):
        reset_package()
        it = cls(gen(), ("k",))
        assert next(it) == 1
        with pytest.raises(Boom, match="in the generator"):
            next(it)
        assert _timing._tls.depth == 0
    # not an iterator: next()'s TypeError
    for cls in (C, PY):
        with pytest.raises(TypeError):
            next(cls([1], ("k",)))


@needs_c
def test_our_own_failures_are_swallowed_as_in_python():
    class Interrupting:
        @property
        def shape(self):
            raise KeyboardInterrupt  # not an Exception: propagates from both, as in Python

    for cls in (C, PY):
        reset_package()
        with pytest.raises(KeyboardInterrupt):
            next(cls(iter([Interrupting()]), ("k",)))
    saved = _timing.fast_samples
    try:
        def broken(batch):
            raise Boom("fast_samples")
        _timing.fast_samples = broken
        for cls in (C, PY):
            reset_package()
            assert list(cls(iter([1, 2]), ("k",))) == [1, 2]  # no entry, no error
            assert _timing._journal == []
    finally:
        _timing.fast_samples = saved


@needs_c
def test_the_journal_drains_itself_and_loader_stop_runs():
    items = list(range(3 * _timing._JOURNAL_CAP))
    for cls in (C, PY):
        reset_package()
        T = _timing.timer()
        with trainmon.session(interval=None):
            for i, x in enumerate(cls(iter(items), ("loader", 1))):
                assert x == i
                assert len(_timing._journal) <= _timing._JOURNAL_CAP
                if i % 3 == 2:
                    trainmon.step(epoch=0)  # a step ends: the loader is training
            assert T._loaders[("loader", 1)].training and T.phase == "idle"  # loader_stop: the epoch ended
            assert T.steps == len(items) // 3


@needs_c
def test_no_reference_leaked():
    batch, key = object(), ("loader", 3)
    items = [batch] * 2000 + [[batch], (batch,)] * 500
    before = sys.getrefcount(batch), sys.getrefcount(key)
    for _ in range(3):
        it = C(iter(items), key)
        for x in it:
            pass
        del it, x
        _timing._journal.clear()
        reset_package()
    assert (sys.getrefcount(batch), sys.getrefcount(key)) == before
    import weakref
    it = C(iter([]), key)
    r = weakref.ref(it)
    assert iter(it) is it and it._key is key
    del it
    assert r() is None


@pytest.mark.skipif(not SPEEDUPS_SO or not os.environ.get("TRAINMON_BIN"),
                    reason="needs the built binary and module (ctest)")
def test_trainmon_run_gives_its_child_the_built_module(tmp_path):
    """The module is built into the binary with the package; the zero-code hook's copy loads (and
    TRAINMON_NO_SPEEDUPS still refuses it)."""
    import subprocess
    env = dict(os.environ)
    env["TRAINMON_NVML_LIBRARY"] = os.environ.get("TRAINMON_FAKE_NVML_PATH", "")
    env["TRAINMON_FAKE_NVML_SCENARIO"] = os.path.join(os.environ.get("TRAINMON_SCENARIOS_DIR", ""),
                                                      "healthy-1gpu.json")
    env["TRAINMON_DB"] = str(tmp_path / "runs.db")
    env["XDG_RUNTIME_DIR"] = str(tmp_path)
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    for name in ("TRAINMON_EVENTS_SOCKET", "TRAINMON_SNAPSHOT_FILE", "TRAINMON_NO_SPEEDUPS", "PYTHONPATH"):
        env.pop(name, None)
    script = ("import os, stat, trainmon._timing as t, trainmon._speedups as s; "
              "print('ITER', t._TimedIterator.__module__, oct(stat.S_IMODE(os.stat(s.__file__).st_mode)))")
    for refuse, expected in (("", "trainmon._speedups"), ("1", "trainmon._timing")):
        env["TRAINMON_NO_SPEEDUPS"] = refuse
        proc = subprocess.run([os.environ["TRAINMON_BIN"], "run", "--no-report", "--", "/usr/bin/python3", "-c", script],
                              capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "ITER %s 0o700" % expected in proc.stdout, proc.stdout + proc.stderr[-3000:]

