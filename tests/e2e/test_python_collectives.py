# SPDX-License-Identifier: Apache-2.0
"""Collective wait in the Python package (python/trainmon/_collectives.py, docs/python.md
"Collective wait"), without the trainmon binary: the step timer's split of each step into data wait,
collective wait and compute, driven with exact times; the window aggregates under hypothesis (exact
totals whatever the windows and the thinning of the percentile lists); the wrappers on stand-in
functions (nesting, phase, sequence numbers per group, errors unchanged); the CUDA event logic with a
stand-in event (no GPU here); and a real three-rank gloo job (torch.multiprocessing): DDP with the
timing hook gives bit-identical parameters to DDP without it (DDP's default, a user's Python hook, the
FP16 builtin), a user's hook runs exactly once per bucket, a second registration raises as torch does,
and the waits measured on the ranks that wait are the time the late rank made them wait.

This file is also the script of that job: `python3 test_python_collectives.py OUT_DIR`.
"""

import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("TRAINMON_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
PYTHON_DIR = os.path.join(SOURCE_DIR, "python")
WORLD = 3
LATE_S = 0.3   # how late rank 1 comes to the explicit all_reduce
SLOW_S = 0.15  # rank 2's extra compute per DDP step (before backward: its buckets are late)
DDP_STEPS = 4


# ---- the job (runs in the children) ---------------------------------------------------------------

def _params(m):
    return [p.detach().clone() for p in m.parameters()]


def _model(torch):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 5))


def _train(torch, ddp, rank, steps=6):
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(rank)
    for _ in range(steps):
        x = torch.randn(7, 32, generator=g)
        y = torch.randint(0, 5, (7,), generator=g)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()


def _rank_main(rank, out_dir, init):
    sys.path.insert(0, PYTHON_DIR)
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from trainmon import _collectives, _timing
    how = _collectives.install(torch)
    hot = _timing._tls
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="file://" + init, rank=rank, world_size=WORLD)
    plain_init = DDP.__init__.__wrapped__  # DDP as torch builds it, without the timing hook

    def plain(module):
        d = DDP.__new__(DDP)
        plain_init(d, module, bucket_cap_mb=0.001)
        return d

    res = {"how": how}
    # 1. DDP's default: with and without the hook (small buckets: several per step)
    a, b = _model(torch), _model(torch)
    _train(torch, DDP(a, bucket_cap_mb=0.001), rank)
    _train(torch, plain(b), rank)
    res["default_identical"] = all(torch.equal(x, y) for x, y in zip(_params(a), _params(b)))
    # 2. a user's Python hook: runs once per bucket, results as without our wrapper
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    calls = {"hooked": 0, "plain": 0}

    def counting(name):
        def hook(state, bucket):
            calls[name] += 1
            return default_hooks.allreduce_hook(state, bucket)
        return hook

    a, b = _model(torch), _model(torch)
    da, db = DDP(a, bucket_cap_mb=0.001), plain(b)
    da.register_comm_hook(None, counting("hooked"))
    db.register_comm_hook(None, counting("plain"))
    _train(torch, da, rank)
    _train(torch, db, rank)
    res["user_identical"] = all(torch.equal(x, y) for x, y in zip(_params(a), _params(b)))
    res["user_calls"] = [calls["hooked"], calls["plain"]]
    try:
        da.register_comm_hook(None, counting("hooked"))
        res["second_registration"] = "accepted"
    except RuntimeError as e:
        res["second_registration"] = "RuntimeError: " + str(e)[:80]
    # 3. the FP16 builtin
    a, b = _model(torch), _model(torch)
    da, db = DDP(a, bucket_cap_mb=0.001), plain(b)
    da._register_builtin_comm_hook(dist.BuiltinCommHookType.FP16_COMPRESS)
    db._register_builtin_comm_hook(dist.BuiltinCommHookType.FP16_COMPRESS)
    _train(torch, da, rank)
    _train(torch, db, rank)
    res["fp16_identical"] = all(torch.equal(x, y) for x, y in zip(_params(a), _params(b)))
    # 3b. a user's hook that returns no Future: the same error as without our wrapper, not one of ours
    def not_a_future(state, bucket):
        return bucket.buffer()

    errors = []
    for d in (DDP(_model(torch), bucket_cap_mb=0.001), plain(_model(torch))):
        d.register_comm_hook(None, not_a_future)
        try:
            d(torch.ones(4, 32)).sum().backward()
            errors.append("no error")
        except Exception as e:
            errors.append("%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200]))
    res["bad_hook_errors"] = errors

    # 4. an explicit all_reduce that rank 1 comes to LATE_S late; the others wait that long
    dist.barrier()
    seen = {}
    import threading

    def watch():  # what a heartbeat would read while the rank waits
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if hot.phase == "collective" and hot.coll is not None and hot.coll[0] == "all_reduce":
                seen.update(phase=hot.phase, coll=_collectives.coll_info(hot.coll))
                return
            time.sleep(0.005)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    before = hot.comm or 0.0
    if rank == 1:
        time.sleep(LATE_S)
    t = torch.ones(1024)
    dist.all_reduce(t)
    res["late_wait"] = (hot.comm or 0.0) - before
    res["late_sum_ok"] = bool(torch.all(t == WORLD))
    watcher.join(timeout=6)
    res["seen"] = seen
    res["phase_after"] = hot.phase

    # 5. DDP's bucket wait: rank 2 computes SLOW_S more per step before backward
    model = DDP(_model(torch), bucket_cap_mb=0.001)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    dist.barrier()
    before = hot.comm or 0.0
    for _ in range(DDP_STEPS):
        x = torch.randn(7, 32)
        loss = model(x).sum()
        if rank == 2:
            time.sleep(SLOW_S)
        opt.zero_grad()
        loss.backward()
        opt.step()
    res["ddp_wait"] = (hot.comm or 0.0) - before
    dist.barrier()
    with open(os.path.join(out_dir, "rank-%d.json" % rank), "w") as f:
        json.dump(res, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    import torch.multiprocessing as mp
    out = sys.argv[1]
    mp.spawn(_rank_main, args=(out, os.path.join(out, "rdv")), nprocs=WORLD, join=True)
    sys.exit(0)


# ---- the tests --------------------------------------------------------------------------------------

import pytest  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from test_python_helpers import check_steps, reset_package  # noqa: E402

sys.path.insert(0, PYTHON_DIR)
from trainmon import _collectives, _timing  # noqa: E402


@pytest.fixture(autouse=True)
def fresh_package():
    reset_package()
    _collectives._seqs.clear()
    _collectives._works.clear()
    yield
    reset_package()


def _steps_via_journal(T, steps, t=100.0):
    """Feed ``steps`` [(data_s, comm_s, compute_s)] through the journal as the zero-code hook does
    (a batch, collectives adding to the hot object's wait, the optimizer step's entry); returns the end."""
    hot = _timing._tls
    for i, (data, comm, compute) in enumerate(steps):
        T.journal.append((_timing.J_BATCH, "train", 7, t, t + data, 4))
        t += data
        if comm:
            hot.comm = comm if hot.comm is None else hot.comm + comm
        t += comm + compute
        T.journal.append((_timing.J_OPT, 1, t, hot.comm))
    return t


def test_each_step_gets_the_collective_wait_since_the_previous_step_end():
    T = _timing.timer()
    T.collect = True
    hot = _timing._tls
    # immediate forms: 0.2 s data, 0.3 s all-reduce, 0.5 s compute
    T.loader_batch("train", 1, 100.0, 100.2, None)
    hot.comm = 0.3
    assert T.optimizer_step(1, 101.0)
    T.loader_batch("train", 1, 101.0, 101.1, None)
    hot.comm = 0.8  # 0.5 s more
    assert T.optimizer_step(1, 102.0)
    T.loader_batch("train", 1, 102.0, 102.1, None)
    assert T.optimizer_step(1, 103.0)  # no collective in this step
    T.loader_batch("train", 1, 103.0, 103.1, None)
    hot.comm = 9.0  # more than the step leaves (a wait before the step started): capped
    assert T.optimizer_step(1, 104.0)
    w = T.take_window()
    check_steps(w)
    assert w["n"] == 4
    assert w["comm_s"]["sum"] == pytest.approx(0.3 + 0.5 + 0.0 + 0.9)
    assert (w["comm_s"]["min"], w["comm_s"]["max"]) == (0.0, pytest.approx(0.9))
    assert w["total"]["comm_s"] == pytest.approx(1.7) and w["total"]["data_s"] == pytest.approx(0.5)
    # the journal's bulk path gives the same split
    end = _steps_via_journal(T, [(0.2, 0.3, 0.5), (0.1, 0.0, 0.9), (0.1, 0.6, 0.3)], t=104.0)
    w = T.take_window()
    check_steps(w)
    assert w["n"] == 3 and w["last_step_mt"] == pytest.approx(end)
    assert sorted(w["comm_s"][k] for k in ("min", "p50", "max")) == pytest.approx([0.0, 0.3, 0.6])
    assert w["total"]["comm_s"] == pytest.approx(1.7 + 0.9)


def test_without_collectives_no_comm_is_sent():
    T = _timing.timer()
    T.collect = True
    _steps_via_journal(T, [(0.1, 0.0, 0.2)] * 3)
    w = T.take_window()
    assert w["n"] == 3 and "comm_s" not in w and "comm_s" not in w["total"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.integers(0, 50), st.integers(0, 400), st.integers(0, 300)),
                      min_size=1, max_size=60),
       cuts=st.lists(st.integers(0, 60), max_size=8), cap=st.integers(1, 8))
def test_window_aggregates_are_exact_whatever_the_windows_and_the_thinning(steps, cuts, cap, monkeypatch):
    # times in whole milliseconds: the sums are exact to the protocol's microsecond rounding
    reset_package()
    monkeypatch.setattr(_timing, "_WINDOW_CAP", cap)  # the percentile lists keep `cap` values only
    T = _timing.timer()
    T.collect = True
    _timing._tls.comm = 0.0  # a job whose collectives were seen (waits of 0 included)
    ms = [(d / 1000.0, c / 1000.0, x / 1000.0) for d, c, x in steps]
    windows, t, done = [], 100.0, 0
    for cut in sorted(set(cuts)) + [len(ms)]:
        if cut <= done:
            continue
        t = _steps_via_journal(T, ms[done:cut], t)
        done = cut
        windows.append(T.take_window())
    n = sum(w["n"] for w in windows)
    assert n == len(ms) == windows[-1]["total"]["steps"]
    comm = sum(w["comm_s"]["sum"] for w in windows if w["n"] and "comm_s" in w)
    assert comm == pytest.approx(sum(c for _, c, _ in ms), abs=1e-6 * (len(windows) + 1))
    assert windows[-1]["total"]["comm_s"] == pytest.approx(sum(c for _, c, _ in ms), abs=1e-6)
    assert windows[-1]["total"]["data_s"] == pytest.approx(sum(d for d, _, _ in ms), abs=1e-6)
    assert windows[-1]["total"]["step_s"] == pytest.approx(sum(map(sum, ms)), abs=1e-6)
    for w in windows:
        if w["n"] <= cap:  # beyond, min and max are those of the values kept
            check_steps(w)
        if w["n"]:
            c = w["comm_s"]
            assert c["min"] <= c["p50"] <= c["max"] and c["sum"] <= w["step_s"]["sum"] - w["data_s"]["sum"] + 1e-5


class FakeEvent:
    """A CUDA event stand-in: record() takes the stream's time; query() is True once the stream
    got that far; elapsed_time() in milliseconds, as torch.cuda.Event gives it."""

    made = 0

    def __init__(self, stream):
        FakeEvent.made += 1
        self.stream = stream
        self.at = None

    def record(self):
        self.at = self.stream.enqueued

    def query(self):
        if self.stream.broken:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return self.at is not None and self.at <= self.stream.done

    def elapsed_time(self, end):
        return (end.at - self.at) * 1000.0


class FakeStream:
    def __init__(self):
        self.enqueued = 0.0  # seconds of work queued on the stream
        self.done = 0.0      # how far the GPU got
        self.broken = False


def test_cuda_timing_reads_completed_pairs_in_order_and_never_waits():
    s = FakeStream()
    timing = _collectives.CudaTiming(lambda: FakeEvent(s), cap=3)
    a = timing.begin()
    s.enqueued += 0.25  # the collective: 250 ms on the stream
    timing.end(a)
    b = timing.begin()
    s.enqueued += 0.5
    timing.end(b)
    assert timing.poll() == 0.0 and len(timing.pending) == 2  # nothing done yet: nothing read
    s.done = 0.3
    assert timing.poll() == pytest.approx(0.25) and len(timing.pending) == 1
    s.done = 10
    assert timing.poll() == pytest.approx(0.5) and not timing.pending
    made = FakeEvent.made
    for _ in range(5):  # events are reused; at most `cap` pairs wait, the oldest dropped
        timing.end(timing.begin())
    assert FakeEvent.made - made <= 6 and len(timing.pending) == 3 and timing.dropped == 2
    s.broken = True  # a failing query() drops the pair, never raises
    assert timing.poll() == 0.0 and timing.dropped == 5 and not timing.pending


class CudaTensor:
    is_cuda = True

    def numel(self):
        return 1000

    def element_size(self):
        return 4


def test_cuda_calls_are_timed_by_events_not_by_the_host(monkeypatch):
    hot = _timing._tls
    s = FakeStream()
    timing = _collectives.CudaTiming(lambda: FakeEvent(s))
    monkeypatch.setitem(_collectives._cuda, "timing", timing)
    monkeypatch.setitem(_collectives._cuda, "on", True)
    monkeypatch.setitem(_collectives._cuda, "next_check", math.inf)

    def all_reduce(tensor, op=None, group=None, async_op=False):
        s.enqueued += 0.04  # queued, returns at once
        time.sleep(0.01)

    w = _collectives._wrap("all_reduce", all_reduce, 2)
    w(CudaTensor())
    assert hot.comm is None and len(timing.pending) == 1  # the host's 10 ms are not the wait
    s.done = 1.0
    _collectives.poll_cuda()
    assert hot.comm == pytest.approx(0.04)


def test_wrapper_counts_nested_calls_once_keeps_errors_and_numbers_each_group():
    hot = _timing._tls
    seen = []
    g = object()

    def all_gather(tensor_list, tensor, group=None, async_op=False):
        seen.append((hot.phase, _collectives.coll_info(hot.coll)))
        time.sleep(0.02)

    inner = _collectives._wrap("all_gather", all_gather, 2)

    def all_gather_object(object_list, obj, group=None):
        inner([CudaTensor()], CudaTensor(), group=group)  # nested: counted in the outer call
        inner([], CudaTensor(), group=group)

    outer = _collectives._wrap("all_gather_object", all_gather_object, 2)

    def broken(tensor, op=None, group=None, async_op=False):
        raise ValueError("bad tensor")

    bad = _collectives._wrap("all_reduce", broken, 2)
    hot.phase = "compute"
    t0 = time.monotonic()
    outer([None], {"x": 1})
    took = time.monotonic() - t0
    assert hot.comm == pytest.approx(took, abs=0.005) and hot.comm >= 0.04
    assert hot.phase == "compute" and hot.coll is None and hot.coll_depth == 0
    assert [p for p, _ in seen] == ["collective", "collective"]
    assert seen[0][1]["op"] == "all_gather_object" and seen[0][1]["seq"] == 0
    inner([CudaTensor(), CudaTensor()], CudaTensor(), group=g)
    inner([CudaTensor()], CudaTensor(), g)
    assert _collectives._seqs[g] == 2 and _collectives._seqs[None] == 1
    with pytest.raises(ValueError, match="bad tensor"):
        bad(CudaTensor(), group=g)
    assert _collectives._seqs[g] == 3 and hot.coll_depth == 0 and hot.phase == "compute"
    # bytes: the tensor list's sum
    assert _collectives.coll_info(("all_gather", 4, None, ([CudaTensor(), CudaTensor()], CudaTensor()), {})) \
        ["bytes"] == 8000


def test_a_real_gloo_job_ddp_results_are_bit_identical_and_waits_are_measured(tmp_path):
    if os.environ.get("TRAINMON_SANITIZED") == "1":
        pytest.skip("three torch processes: not a memory-safety test")
    pytest.importorskip("torch")
    env = dict(os.environ, PYTHONPATH=HERE + os.pathsep + PYTHON_DIR)
    env.pop("TRAINMON_EVENTS_SOCKET", None)
    p = subprocess.run([sys.executable, os.path.abspath(__file__), str(tmp_path)], env=env,
                       capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-3000:]
    r = [json.loads((tmp_path / ("rank-%d.json" % i)).read_text()) for i in range(WORLD)]
    for i, x in enumerate(r):
        assert x["how"] == "functions+ddp"
        assert x["default_identical"] and x["user_identical"] and x["fp16_identical"], (i, x)
        assert x["user_calls"][0] == x["user_calls"][1] > 0, x  # the user's hook: once per bucket
        assert x["second_registration"].startswith("RuntimeError"), x
        # a user's hook that returns no Future: DDP's own error, the same as without trainmon
        wrapped, bare = x["bad_hook_errors"]
        assert wrapped == bare and "Future" in bare and "_collectives" not in wrapped, x["bad_hook_errors"]
        assert x["late_sum_ok"] and x["phase_after"] != "collective"
    # the explicit all_reduce: ranks 0 and 2 waited for rank 1, which did not wait
    for i in (0, 2):
        assert LATE_S * 0.8 <= r[i]["late_wait"] <= LATE_S + 1.0, r[i]
        assert r[i]["seen"]["phase"] == "collective"
        c = r[i]["seen"]["coll"]
        assert c["op"] == "all_reduce" and c["bytes"] == 4096 and c["pg"] == "0" and c["seq"] >= 1, c
    assert r[1]["late_wait"] < LATE_S * 0.5, r[1]
    # DDP: ranks 0 and 1 waited in backward for rank 2's buckets each step
    for i in (0, 1):
        assert r[i]["ddp_wait"] >= DDP_STEPS * SLOW_S * 0.7, r[i]
    assert r[2]["ddp_wait"] < DDP_STEPS * SLOW_S * 0.5, r[2]
