# SPDX-License-Identifier: Apache-2.0
"""PyTorch's own view of CUDA memory, read only when the training script already uses CUDA.

We never import torch ourselves (that costs seconds) and never initialise CUDA: when torch is not
in ``sys.modules`` or CUDA is not initialised in this process, there is nothing to report.
"""

import sys

__all__ = ["torch_memory", "cuda_device_index", "cuda_device_uuid", "as_float"]


def _cuda():
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        cuda = torch.cuda
        # is_initialized() first: it only reads a flag, while is_available() asks the driver.
        if not cuda.is_initialized():
            return None
        return cuda
    except Exception:  # a broken or stubbed torch must not break training
        return None


def cuda_device_index():
    """The current CUDA device index of this process, or None without CUDA."""
    cuda = _cuda()
    if cuda is None:
        return None
    try:
        return int(cuda.current_device())
    except Exception:
        return None


_uuids = {}


def cuda_device_uuid(index):
    """The UUID of CUDA device ``index`` as NVML spells it ("GPU-..." unless CUDA gave a prefix),
    from torch's device properties (torch >= 2.0 has ``uuid``); None without CUDA or before."""
    if index is None:
        return None
    if index in _uuids:
        return _uuids[index]
    cuda = _cuda()
    if cuda is None:
        return None
    uuid = None
    try:
        raw = getattr(cuda.get_device_properties(index), "uuid", None)
        if raw is not None:
            uuid = str(raw).strip()
            if uuid and not uuid.startswith(("GPU-", "MIG-")):
                uuid = "GPU-" + uuid
    except Exception:
        uuid = None
    _uuids[index] = uuid or None
    return _uuids[index]


def torch_memory(device=None, with_stats=True):
    """Caching-allocator figures for ``device`` (the current one by default).

    Returns a dict of byte counts ``allocated_bytes`` (memory_allocated), ``reserved_bytes``
    (memory_reserved), ``peak_bytes`` (max_memory_allocated) and, with ``with_stats``, the counts
    ``num_alloc_retries`` (cudaMalloc retried after freeing the cache: fragmentation pressure) and
    ``num_ooms`` from memory_stats(); or None when torch/CUDA is not in use or the query fails.
    memory_stats() builds a dict of ~100 entries (tens of microseconds), so callers ask for it at
    epoch ends and printed lines, not every batch.
    """
    cuda = _cuda()
    if cuda is None:
        return None
    try:
        out = {
            "allocated_bytes": int(cuda.memory_allocated(device)),
            "reserved_bytes": int(cuda.memory_reserved(device)),
            "peak_bytes": int(cuda.max_memory_allocated(device)),
        }
        if with_stats:
            stats = cuda.memory_stats(device)
            out["num_alloc_retries"] = int(stats.get("num_alloc_retries", 0))
            out["num_ooms"] = int(stats.get("num_ooms", 0))
        return out
    except Exception:
        return None


def as_float(value):
    """A plain float from a number or a one-element/summable CPU tensor; None otherwise.

    A CUDA tensor gives None: reading it (``.item()``) would wait for the GPU, which is exactly
    the stall this package must not add.
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            f = float(value)
        except OverflowError:  # an int beyond a double
            return None
        return f if f == f and f not in (float("inf"), float("-inf")) else None
    try:
        if getattr(value, "is_cuda", False):
            return None
        if hasattr(value, "numel") and value.numel() != 1:
            value = value.sum()
        f = float(value)
        return f if f == f and f not in (float("inf"), float("-inf")) else None
    except Exception:
        return None
