# SPDX-License-Identifier: Apache-2.0
"""The resource line (MISSION.md section 3), built from plain numbers; pure functions.

    Resource @ epoch 45/200: GPU0(V100): 94.2%/87.1% GPU1(V100): 12.3%/15.6% | Mem: 62.3%(38.2G/61.4G)
    | CPU: 42.1% | RSS: 5.1G | torch: alloc 3.1G reserved 4.0G peak 3.6G retries 0 ooms 0

(one line). GPU pairs are utilisation % / memory used %; G means GiB (2**30 bytes), one decimal.
Parts whose data is missing are left out rather than shown as zero.
"""

import re

__all__ = ["short_gpu_name", "gib", "format_progress", "format_resource_line", "RESOURCE_LINE_RE"]

_GIB = float(1 << 30)
_VENDOR_WORDS = ("NVIDIA", "Tesla", "GeForce", "Quadro")
_TWO_WORD_FAMILIES = ("RTX", "GTX", "TITAN", "Titan")

#: A regular expression every resource line matches (used by the tests and usable by log parsers).
_GPU_CELL = r"GPU\d+\([^)]*\): (\d+\.\d|N/A)%/(\d+\.\d|N/A)%"
RESOURCE_LINE_RE = re.compile(
    r"^Resource( @ (epoch \d+(/\d+)?|step \d+))?: "
    r"(" + _GPU_CELL + r"( " + _GPU_CELL + r")* \| )?"
    r"Mem: \d+\.\d%\(\d+\.\dG/\d+\.\dG\)"
    r"( \| CPU: \d+\.\d%)?"
    r"( \| RSS: \d+\.\dG)?"
    r"( \| torch: alloc \d+\.\dG reserved \d+\.\dG peak \d+\.\dG retries \d+ ooms \d+)?$"
)


def short_gpu_name(name):
    """The model part of a GPU name: 'Tesla V100-SXM2-32GB' -> 'V100', 'NVIDIA H200' -> 'H200',
    'NVIDIA GeForce RTX 4090' -> 'RTX 4090', 'NVIDIA A100-SXM4-40GB' -> 'A100'.
    Returns '?' for an empty or missing name."""
    if not name:
        return "?"
    words = [w for w in str(name).split() if w not in _VENDOR_WORDS]
    if not words:
        return str(name).strip() or "?"
    if words[0] in _TWO_WORD_FAMILIES and len(words) > 1:
        return "%s %s" % (words[0], words[1].split("-")[0])
    return words[0].split("-")[0] or words[0]


def gib(n_bytes):
    """'38.2G': bytes as GiB with one decimal."""
    return "%.1fG" % (n_bytes / _GIB)


def format_progress(epoch=None, epochs=None, step=None):
    """' @ epoch 45/200' for a 0-based ``epoch`` (shown 1-based), ' @ step 1200', or ''."""
    if epoch is not None and epoch >= 0:
        if epochs:
            return " @ epoch %d/%d" % (epoch + 1, epochs)
        return " @ epoch %d" % (epoch + 1)
    if step is not None and step >= 0:
        return " @ step %d" % step
    return ""


def _pct(value):
    return "N/A" if value is None else "%.1f" % value


def format_resource_line(gpus=None, memory=None, cpu_pct=None, rss_bytes=None, torch_mem=None,
                         epoch=None, epochs=None, step=None):
    """Build one resource line.

    gpus: list of dicts with ``index``, ``name``, ``util_pct``, ``mem_used_bytes``,
    ``mem_total_bytes`` (the snapshot file's GPU objects); None or [] leaves the GPU part out.
    memory: a MemoryInfo-like ``(total, available, used)`` in bytes, or None.
    cpu_pct: machine CPU busy %, or None. rss_bytes: this process's RSS, or None.
    torch_mem: dict with ``allocated_bytes``, ``reserved_bytes``, ``peak_bytes``,
    ``num_alloc_retries``, ``num_ooms`` (see _torch.torch_memory), or None without CUDA.
    Returns the line without a trailing newline.
    """
    parts = []
    if gpus:
        cells = []
        for g in gpus:
            used, total = g.get("mem_used_bytes"), g.get("mem_total_bytes")
            mem_pct = 100.0 * used / total if used is not None and total else None
            cells.append("GPU%d(%s): %s%%/%s%%" % (g.get("index", 0), short_gpu_name(g.get("name")),
                                                   _pct(g.get("util_pct")), _pct(mem_pct)))
        parts.append(" ".join(cells))
    if memory is not None:
        total, _available, used = memory[0], memory[1], memory[2]
        pct = 100.0 * used / total if total else 0.0
        parts.append("Mem: %.1f%%(%s/%s)" % (pct, gib(used), gib(total)))
    if cpu_pct is not None:
        parts.append("CPU: %.1f%%" % cpu_pct)
    if rss_bytes is not None:
        parts.append("RSS: %s" % gib(rss_bytes))
    if torch_mem:
        parts.append("torch: alloc %s reserved %s peak %s retries %d ooms %d" % (
            gib(torch_mem.get("allocated_bytes", 0)), gib(torch_mem.get("reserved_bytes", 0)),
            gib(torch_mem.get("peak_bytes", 0)), torch_mem.get("num_alloc_retries", 0),
            torch_mem.get("num_ooms", 0)))
    return "Resource%s: %s" % (format_progress(epoch, epochs, step), " | ".join(parts))
