# SPDX-License-Identifier: Apache-2.0
"""Who this process is, for the ``hello`` message (docs/python.md, "Message fields").

Rank figures come from torch.distributed when the script initialised it (an mp.spawn job has no
RANK in its environment), else from the launcher's environment (torchrun, SLURM). The CUDA device is
read only when the script already initialised CUDA (never initialised here). ``announce`` sends a
new hello whenever what it says changes, looking at most once a second.
"""

import os
import socket
import sys

from . import _stacks, _torch
from ._values import int_in, num_in, text

__all__ = ["identity", "announce", "set_lines", "rank_of"]

_host = None
_lines = {}  # id(Monitor) -> interval seconds, for the Monitors of this process that print
_RECHECK_S = 1.0


def _env_int(env, name, lo, hi):
    v = env.get(name)
    if v is None:
        return None
    try:
        return int_in(int(str(v).strip()), lo, hi)
    except Exception:
        return None


def _dist():
    """torch.distributed when the script initialised it, else None."""
    dist = sys.modules.get("torch.distributed")
    if dist is None:
        return None
    try:
        if dist.is_available() and dist.is_initialized():
            return dist
    except Exception:
        pass
    return None


def rank_of(env=None):
    """This process's global rank: torch.distributed's when initialised, else RANK; None when
    unknown (a single-process job)."""
    env = os.environ if env is None else env
    dist = _dist()
    if dist is not None:
        try:
            return int_in(dist.get_rank(), 0, 65535)
        except Exception:
            pass
    return _env_int(env, "RANK", 0, 65535)


def identity(env=None, framework=None, lines=None, stack_signal=None):
    """The hello fields of this process now (unknown ones absent). Never raises."""
    global _host
    env = os.environ if env is None else env
    out = {}
    try:
        out["framework"] = text(framework, 128)
        out["rank"] = rank_of(env)
        ws = None
        dist = _dist()
        if dist is not None:
            try:
                ws = int_in(dist.get_world_size(), 1, 65536)
            except Exception:
                ws = None
        out["world_size"] = ws if ws is not None else _env_int(env, "WORLD_SIZE", 1, 65536)
        out["local_rank"] = _env_int(env, "LOCAL_RANK", 0, 65535)
        node = None
        for name in ("GROUP_RANK", "NODE_RANK", "SLURM_NODEID"):
            node = _env_int(env, name, 0, 65535)
            if node is not None:
                break
        out["node_rank"] = node
        if _host is None:
            try:
                _host = text(socket.gethostname(), 128) or ""
            except Exception:
                _host = ""
        out["host"] = _host or None
        gpu = _torch.cuda_device_index()
        out["gpu"] = int_in(gpu, 0, 1023)
        out["gpu_uuid"] = text(_torch.cuda_device_uuid(gpu), 128) if gpu is not None else None
        out["cuda_visible_devices"] = text(env.get("CUDA_VISIBLE_DEVICES"), 1024)
        out["cuda_device_order"] = text(env.get("CUDA_DEVICE_ORDER"), 128)
        out["stack_signal"] = int_in(stack_signal, 1, 64)
        out["lines"] = num_in(lines, 0, 1e7)
    except Exception:
        pass
    return {k: v for k, v in out.items() if v is not None}


def set_lines(owner, interval):
    """Monitor ``owner`` prints the resource line every ``interval`` s (None: it does not)."""
    key = id(owner)
    if interval is None:
        _lines.pop(key, None)
    else:
        _lines[key] = interval


def lines():
    """The shortest interval at which a Monitor of this process prints, or None."""
    return min(_lines.values()) if _lines else None


def announce(client, framework, now, env=None, force=False):
    """Send ``hello`` on ``client`` when what it would say changed since the last one (checked
    at most once a second unless ``force``). Keeps ``client.common["rank"]`` up to date, so that
    every message names its rank. Never raises."""
    try:
        if client is None:
            return
        if not force and now < client.hello_check_mt:
            return
        client.hello_check_mt = now + _RECHECK_S
        env = os.environ if env is None else env
        sig = _stacks.ensure(client.path)
        fields = identity(env, framework=framework, lines=lines(), stack_signal=sig)
        if fields != client.hello_fields:
            client.hello_fields = fields
            rank = fields.get("rank")
            if rank is None:
                client.common.pop("rank", None)
            else:
                client.common["rank"] = rank
            if not client.send("hello", fields):
                client.hello_fields = None  # say it again at the next check
    except Exception:
        pass
