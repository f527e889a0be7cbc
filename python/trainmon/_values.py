# SPDX-License-Identifier: Apache-2.0
"""Turning whatever a training script hands us into protocol values, or None; pure, never raising.

The recorder refuses a whole message when one known field is out of its range (docs/python.md,
"Message fields"), so every value is checked here against that table and left out when it does not
fit. A CUDA tensor is never read (that would wait for the GPU): it gives None.
"""

import math

__all__ = ["int_in", "num_in", "text", "batch_samples", "MAX_EXACT_INT"]

#: 2**53: the largest integer a JSON reader keeps exactly (the protocol's bound for byte counts).
MAX_EXACT_INT = 1 << 53


def _is_cuda(value):
    try:
        return bool(getattr(value, "is_cuda", False))
    except Exception:
        return True  # an object that cannot say: do not touch it


def int_in(value, lo, hi):
    """``value`` as an int when it is a whole number (int, integral float, numpy or CPU tensor
    scalar) with lo <= value <= hi; None otherwise (bool, NaN, inf, strings, CUDA tensors ...)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        if isinstance(value, int):
            i = value
        elif isinstance(value, float):
            if not math.isfinite(value) or value != int(value):
                return None
            i = int(value)
        else:
            if isinstance(value, (str, bytes, bytearray)) or _is_cuda(value):
                return None
            f = float(value)  # numpy scalars, one-element CPU tensors
            if not math.isfinite(f) or f != int(f):
                return None
            i = int(f)
        return i if lo <= i <= hi else None
    except Exception:
        return None


def num_in(value, lo, hi):
    """``value`` as a finite float with lo <= value <= hi; None otherwise (CUDA tensors too)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        if isinstance(value, (str, bytes, bytearray)):
            return None
        if not isinstance(value, (int, float)):
            if _is_cuda(value):
                return None
            if hasattr(value, "numel") and value.numel() != 1:
                value = value.sum()
        f = float(value)
    except Exception:
        return None
    return f if math.isfinite(f) and lo <= f <= hi else None


def text(value, max_len):
    """``value`` when it is a str of 1..max_len printable ASCII characters; None otherwise."""
    if not isinstance(value, str) or not value or len(value) > max_len:
        return None
    for ch in value:
        if not " " <= ch <= "~":
            return None
    return value


def batch_samples(batch):
    """Samples in a batch: the first dimension of its first tensor-like element (looking into
    tuples, lists and mappings, a mapping's first value that has a shape), or None when there is
    none or it is not 1..1e7. Reads only ``.shape`` (no data, no GPU wait). Never raises."""
    try:
        x = batch
        for _ in range(4):
            shape = getattr(x, "shape", None)
            if shape is not None:
                n = shape[0]
                if isinstance(n, bool):
                    return None
                n = int(n)
                return n if 1 <= n <= 10_000_000 else None
            if isinstance(x, (list, tuple)):
                x = x[0] if x else None
                continue
            values = getattr(x, "values", None) if not isinstance(x, (str, bytes, bytearray)) else None
            if values is None or not callable(values):
                return None
            first = chosen = None
            for i, v in enumerate(values()):
                if i == 0:
                    first = v
                if getattr(v, "shape", None) is not None:
                    chosen = v
                    break
                if i >= 15:
                    break
            x = chosen if chosen is not None else first
        return None
    except Exception:
        return None
