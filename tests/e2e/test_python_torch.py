# SPDX-License-Identifier: Apache-2.0
"""Step timing on real PyTorch (python3-torch 1.13, CPU), no trainmon binary: the test reads the
events on its own SOCK_SEQPACKET socket.

 - a real DataLoader whose Dataset sleeps a known time per item, timed with trainmon.loader +
   trainmon.step: the data-wait share matches the injected sleep, and without the sleep it is small;
 - the zero-code hook (PYTHONPATH=python/boot:python, TRAINMON_AUTO=1) on a script with no trainmon
   import: gradient accumulation, a second optimizer, an Optimizer subclass calling super().step(),
   evaluation between epochs, torch 1.13's profiler hook kept;
 - a two-process torch.distributed gloo job (torch.multiprocessing.spawn, so RANK is not in the
   environment) under the zero-code hook where rank 1 does extra work per step;
 - the start-up hook chains to the sitecustomize it shadows.
The real jobs are slow (torch imports): skipped in the sanitizer pass (TRAINMON_SANITIZED=1).
"""

import os
import statistics
import subprocess
import sys
import textwrap
import time

import pytest

from test_python_helpers import (BOOT_DIR, PYTHON_DIR, SANITIZED, Receiver, check_all, of_type, reset_package,
                                 windows)

torch = pytest.importorskip("torch")
import trainmon  # noqa: E402

slow = pytest.mark.skipif(SANITIZED, reason="real PyTorch jobs run in the release pass only")


@pytest.fixture(autouse=True)
def fresh_package():
    reset_package()
    yield
    reset_package()


def _child_env(tmp_path, rx, **extra):
    env = dict(os.environ)
    env.update(PYTHONPATH=os.pathsep.join([BOOT_DIR, PYTHON_DIR]), TRAINMON_AUTO="1",
               TRAINMON_EVENTS_SOCKET=rx.path, TRAINMON_RUN_ID="42", TRAINMON_NO_AGENT="1")
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TRAINMON_DISABLE", "TRAINMON_SNAPSHOT_FILE"):
        env.pop(name, None)
    env.update(extra)
    return env


# ---- trainmon.loader + trainmon.step on a real DataLoader ----------------------------------------

class SleepyDataset(torch.utils.data.Dataset):
    """Sleeps ``sleep_s`` per item and adds up how long it really slept (a loaded machine
    oversleeps): that is the data wait the loop must see."""

    def __init__(self, n, sleep_s):
        self.n, self.sleep_s, self.slept_s = n, sleep_s, 0.0

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.sleep_s:
            t0 = time.monotonic()
            time.sleep(self.sleep_s)
            self.slept_s += time.monotonic() - t0
        return torch.randn(3, 48, 48), i % 10


def _real_loop(rx, sleep_s, steps=24, batch=2):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(32, 32, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    dataset = SleepyDataset(steps * batch, sleep_s)
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch)
    with trainmon.session(interval=None, batch_events_per_s=0):
        for x, y in trainmon.loader(loader):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            trainmon.step(epoch=0, loss=loss.detach())
    msgs = check_all(rx.messages())
    total = of_type(msgs, "train_end")[0]["steps"]["total"]
    assert total["steps"] == steps and total["samples"] == steps * batch
    return total, dataset.slept_s / steps


def test_real_dataloader_data_wait_matches_the_injected_sleep(tmp_path, monkeypatch):
    rx = Receiver(tmp_path / "events.sock")
    monkeypatch.setenv("TRAINMON_EVENTS_SOCKET", rx.path)
    monkeypatch.setenv("TRAINMON_NO_AGENT", "1")
    try:
        sleep_s, batch = 0.015, 2
        total, injected = _real_loop(rx, sleep_s, batch=batch)
        reset_package()
        fast, _ = _real_loop(rx, 0.0, batch=batch)
    finally:
        rx.close()
    per_step = total["step_s"] / total["steps"]
    measured = total["data_s"] / total["steps"]
    print("data wait %.1f ms per step (injected %.1f ms) of %.1f ms; without sleep %.1f%% of %.1f ms" % (
        measured * 1e3, injected * 1e3, per_step * 1e3, 100 * fast["data_s"] / fast["step_s"],
        1e3 * fast["step_s"] / fast["steps"]))
    assert injected >= sleep_s * batch  # two items per batch; sleep never returns early
    assert abs(measured - injected) <= 0.10 * per_step
    assert fast["data_s"] / fast["step_s"] < 0.10


# ---- the zero-code hook ---------------------------------------------------------------------------

SINGLE = textwrap.dedent("""
    # A plain PyTorch script: no trainmon import.
    import sys, time
    import torch
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, Dataset

    class Sleepy(Dataset):
        def __init__(self, n, s):
            self.n, self.s, self.spent = n, s, 0.0
        def __len__(self):
            return self.n
        def __getitem__(self, i):
            t0 = time.perf_counter()
            time.sleep(self.s)  # at least s: more on a busy machine, which `spent` measures
            item = torch.randn(3, 16, 16), i % 10
            self.spent += time.perf_counter() - t0
            return item

    class MySGD(torch.optim.SGD):  # a subclass whose step() calls the parent's
        def step(self, closure=None):
            return super().step(closure)

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                                torch.nn.Flatten(), torch.nn.Linear(8, 10))
    aux = torch.nn.Linear(4, 1)
    opt, opt2 = MySGD(model.parameters(), lr=0.01), torch.optim.Adam(aux.parameters())
    train = DataLoader(Sleepy(24, 0.01), batch_size=2)   # 12 batches, 2 per optimizer step
    val = DataLoader(Sleepy(8, 0.05), batch_size=2)      # 0.4 s of evaluation per epoch
    names = set()
    for epoch in range(2):
        prof = torch.autograd.profiler.profile() if epoch == 0 else None
        if prof is not None:
            prof.__enter__()
        for i, (x, y) in enumerate(train):
            (F.cross_entropy(model(x), y) / 2).backward()
            if i % 2 == 1:
                opt.step()
                opt.zero_grad()
                aux(torch.randn(2, 4)).sum().backward()  # a second optimizer in the same iteration
                opt2.step()
                opt2.zero_grad()
        if prof is not None:
            prof.__exit__(None, None, None)
            names = {e.name for e in prof.function_events if e.name.startswith("Optimizer.step#")}
        with torch.no_grad():
            for x, y in val:
                model(x)
    print("PROFILED", sorted(names))
    print("FETCHED", train.dataset.spent)
    print("HOOKED", getattr(MySGD.step, "hooked", None), getattr(MySGD.step, "_trainmon_step", None),
          getattr(torch.optim.Adam.step, "hooked", None), getattr(torch.optim.Adam.step, "_trainmon_step", None))
    print("DONE", flush=True)
""")


@slow
def test_zero_code_hook_times_a_script_without_any_import(tmp_path):
    rx = Receiver(tmp_path / "events.sock", thread=True)
    script = tmp_path / "train.py"
    script.write_text(SINGLE)
    try:
        p = subprocess.run([sys.executable, str(script)], env=_child_env(tmp_path, rx), capture_output=True,
                           text=True, timeout=240)
        time.sleep(0.2)
        msgs = check_all(rx.messages())
    finally:
        rx.close()
    assert p.returncode == 0, p.stderr[-3000:]
    assert "trainmon" not in p.stderr, p.stderr  # nothing of ours in the user's output
    out = dict(line.split(" ", 1) for line in p.stdout.splitlines() if " " in line)
    # torch 1.13's profiler wrapper still names each optimizer's step; its `hooked` marker is kept
    assert "Optimizer.step#MySGD.step" in out["PROFILED"] and "Optimizer.step#Adam.step" in out["PROFILED"]
    assert out["HOOKED"] == "True True True True"
    hello = of_type(msgs, "hello")
    assert len(hello) == 1 and hello[0]["framework"] == "torch" and "lines" not in hello[0]
    assert hello[0]["run_id"] == "42" and "stack_signal" in hello[0]
    end = of_type(msgs, "train_end")
    assert len(end) == 1
    total = end[0]["steps"]["total"]
    # 2 epochs x 6 optimizer steps of MySGD (Adam in the same iteration, super().step(): not counted)
    assert total["steps"] == 12 and total["samples"] == 48
    ws = [w for w in windows(msgs) if w["n"]]
    assert sum(w["n"] for w in ws) == 12
    worst = max(w["step_s"]["max"] for w in ws)
    assert worst < 0.35, "evaluation (0.4 s) leaked into a step: %.3f s" % worst
    data = total["data_s"] / total["steps"]
    # The wait holds every fetch of the step's 2 batches (4 x 10 ms of sleep, longer on a busy machine:
    # measured by the dataset itself) and is counted once (twice would add another 40 ms or more).
    fetched = float(out["FETCHED"]) / total["steps"]
    assert fetched >= 0.040, fetched
    assert fetched - 0.001 <= data <= fetched + 0.1 * total["step_s"] / total["steps"] + 0.01, (data, fetched)
    assert [m["epoch"] for m in of_type(msgs, "epoch_end")] == [0, 1]


DDP = textwrap.dedent("""
    # Two ranks with torch.multiprocessing.spawn (no RANK in the environment); no trainmon import.
    import sys, time
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    from torch.utils.data import DataLoader, Dataset

    class Sleepy(Dataset):
        def __len__(self):
            return 20
        def __getitem__(self, i):
            time.sleep(0.01)
            return torch.randn(8), i % 2

    def run(rank, world, init_file):
        dist.init_process_group("gloo", init_method="file://" + init_file, rank=rank, world_size=world)
        torch.manual_seed(rank)
        torch.set_num_threads(1)
        model = torch.nn.Linear(8, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            for i, (x, y) in enumerate(DataLoader(Sleepy(), batch_size=2)):
                torch.nn.functional.cross_entropy(model(x), y).backward()
                if rank == 1:
                    time.sleep(0.04)  # the straggler's extra work
                opt.step()
                opt.zero_grad()
                if i % 5 == 4:  # the ranks meet every 5 steps (metrics all-reduce)
                    dist.all_reduce(torch.ones(1))
        dist.barrier()
        dist.destroy_process_group()

    if __name__ == "__main__":
        mp.spawn(run, args=(2, sys.argv[1]), nprocs=2, join=True)
        print("DONE", flush=True)
""")


@slow
def test_two_rank_gloo_job_each_rank_reports_its_own_steps(tmp_path):
    rx = Receiver(tmp_path / "events.sock", thread=True)
    script = tmp_path / "ddp.py"
    script.write_text(DDP)
    try:
        p = subprocess.run([sys.executable, str(script), str(tmp_path / "rendezvous")],
                           env=_child_env(tmp_path, rx), capture_output=True, text=True, timeout=300)
        time.sleep(0.2)
        msgs = check_all(rx.messages())
    finally:
        rx.close()
    assert p.returncode == 0 and "DONE" in p.stdout, p.stderr[-3000:]
    by_rank = {}
    for m in msgs:
        if m["type"] in ("batch_end", "epoch_end", "train_end"):
            assert "rank" in m, m  # every timing message names its rank
            by_rank.setdefault(m["rank"], []).append(m)
    assert sorted(by_rank) == [0, 1]
    hellos = {m["pid"]: m for m in of_type(msgs, "hello")}
    assert sorted(h.get("rank") for h in hellos.values()) == [0, 1]
    assert all(h["world_size"] == 2 and h["framework"] == "torch" for h in hellos.values())
    medians = {}
    for rank, rm in by_rank.items():
        total = of_type(rm, "train_end")[0]["steps"]["total"]
        assert total["steps"] == 20 and total["samples"] == 40
        assert 0.020 <= total["data_s"] / total["steps"] <= 0.035
        ws = [w["steps"] for w in rm if w.get("steps", {}).get("n")]
        medians[rank] = statistics.median(w["step_s"]["p50"] for w in ws)
        assert len({m["pid"] for m in rm}) == 1
    print("median step: rank 0 %.1f ms, rank 1 %.1f ms" % (medians[0] * 1e3, medians[1] * 1e3))
    assert medians[1] > medians[0] + 0.025


# ---- start-up -------------------------------------------------------------------------------------

def test_boot_chains_to_the_sitecustomize_it_shadows_and_is_cheap(tmp_path):
    other = tmp_path / "site"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import os\nos.environ['CHAINED'] = 'yes'\n")
    probe = "import os, sys; print(sys.modules['sitecustomize'].__file__, os.environ.get('CHAINED'), " \
            "[type(f).__name__ for f in sys.meta_path][0])"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([BOOT_DIR, PYTHON_DIR, str(other)]), TRAINMON_AUTO="1")
    r = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert r.stdout.split() == [str(other / "sitecustomize.py"), "yes", "_TorchImportHook"]
    # Debian's own (the apport hook) when nothing else comes first; no hook without TRAINMON_AUTO
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([BOOT_DIR, PYTHON_DIR]))
    env.pop("TRAINMON_AUTO", None)
    r = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    site = r.stdout.split()[0]
    assert site.endswith("sitecustomize.py") and not site.startswith(BOOT_DIR), r.stdout
    assert "_TorchImportHook" not in r.stdout
    # A failure of the patch (a torch we do not understand) leaves the program running
    fake = tmp_path / "fake"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text("VALUE = 7\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([BOOT_DIR, PYTHON_DIR, str(fake)]), TRAINMON_AUTO="1",
               TRAINMON_EVENTS_SOCKET=str(tmp_path / "none.sock"))
    r = subprocess.run([sys.executable, "-c", "import torch; print(torch.VALUE)"], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "7"
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("trainmon: zero-code step timing is off")


def test_zero_code_hook_and_trainmon_loader_count_the_wait_once(tmp_path, monkeypatch):
    """The patch in this process (as the boot hook would apply it), then trainmon.loader around a
    patched DataLoader: the wait is counted once, not twice. The patch is undone afterwards."""
    from trainmon import _auto
    rx = Receiver(tmp_path / "events.sock")
    monkeypatch.setenv("TRAINMON_EVENTS_SOCKET", rx.path)
    monkeypatch.setenv("TRAINMON_NO_AGENT", "1")
    dl = torch.utils.data.dataloader
    saved = {(dl._BaseDataLoaderIter, "__next__"): dl._BaseDataLoaderIter.__dict__["__next__"],
             (dl.DataLoader, "__iter__"): dl.DataLoader.__dict__["__iter__"],
             (torch.optim.Optimizer, "__init__"): torch.optim.Optimizer.__dict__["__init__"],
             (torch.optim.SGD, "step"): torch.optim.SGD.__dict__["step"]}
    state = dict(_auto._state)
    try:
        assert _auto.install(torch)
        assert _auto.installed() == "wrap_step"
        total, injected = _real_loop(rx, 0.015, batch=2)
        assert getattr(torch.optim.SGD.step, "_trainmon_step", False)  # wrapped, and only once
        assert not getattr(torch.optim.SGD.step.__wrapped__, "_trainmon_step", False)
    finally:
        for (cls, name), f in saved.items():
            setattr(cls, name, f)
        _auto._state.clear()
        _auto._state.update(state)
        rx.close()
    per_step = total["step_s"] / total["steps"]
    measured = total["data_s"] / total["steps"]
    assert abs(measured - injected) <= 0.10 * per_step, (measured, injected)  # twice would be 2x
