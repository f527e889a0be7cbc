# SPDX-License-Identifier: Apache-2.0
"""The resource line (MISSION.md section 3), built from plain numbers; pure functions.

    Resource @ epoch 45/200: GPU0(V100): 94.2%/87.1% GPU1(V100): 12.3%/15.6% | Mem: 62.3%(38.2G/61.4G)
    | CPU: 42.1% | RSS: 5.1G | torch: alloc 3.1G reserved 4.0G peak 3.6G retries 0 ooms 0
    | train: 1234.5 samples/s step 0.412s data 12.3%

(one line). GPU pairs are utilisation % / memory used %; G means GiB (2**30 bytes), one decimal.
The progress is the epoch (1-based), else the global step, else the run's elapsed time HH:MM:SS
(the form `trainmon run` prints). The training part: samples per second over the interval's
step time, the median step time and the share of step time spent waiting for data.
Parts whose data is missing are left out rather than shown as zero; a value that is not a number
leaves its part out too (these functions never raise).
"""

import math
import re
import string

from . import _catalogue
from ._i18n import N_, tr, trf

__all__ = ["short_gpu_name", "gib", "format_progress", "format_train", "format_resource_line",
           "RESOURCE_LINE_RE"]

_GIB = float(1 << 30)
_VENDOR_WORDS = ("NVIDIA", "Tesla", "GeForce", "Quadro")
_TWO_WORD_FAMILIES = ("RTX", "GTX", "TITAN", "Titan")

# The labels people read, in the selected language (_i18n): the same msgids as the binary's line
# (src/recorder/resource_line.cpp). Numbers, units, GPU names, "epoch", "step", "samples/s" and
# "CPU"/"RSS"/"torch" stay as they are in every language.
_HEAD = N_("Resource{}: ")  # {}: the progress (format_progress), or ""
_MEM = N_("Mem: {:.1f}%({}/{})")
_TORCH = N_("torch: alloc {} reserved {} peak {} retries {} ooms {}")
_TRAIN = N_("train:")
_DATA = N_("data {:.1f}%")


def _pattern(template, fields):
    """A regular expression for ``template`` (str.format syntax) with each replacement field
    replaced by the pattern ``fields[i]`` of its argument."""
    out, auto = [], 0
    for literal, name, _spec, _conv in string.Formatter().parse(template):
        out.append(re.escape(literal))
        if name is not None:
            if name == "":
                index, auto = auto, auto + 1
            else:
                index = int(name)
            out.append(fields[index])
    return "".join(out)


def _either(template, *fields):
    """The pattern of ``template`` in English or in any language of the built-in catalogue."""
    texts = [template] + [table.get(template, template) for table in _catalogue.MESSAGES.values()]
    alternatives = []
    for t in texts:
        try:
            p = _pattern(t, fields)
        except Exception:
            continue  # a translation the catalogue check would reject: lines use the English then
        if p not in alternatives:
            alternatives.append(p)
    return "(?:" + "|".join(alternatives) + ")"


#: A regular expression every resource line matches, in English and in each translation of the
#: labels (used by the tests and usable by log parsers).
_GPU_CELL = r"GPU\d+\([^)]*\): (\d+\.\d|N/A)%/(\d+\.\d|N/A)%"
_G = r"\d+\.\dG"
RESOURCE_LINE_RE = re.compile(
    r"^" + _either(_HEAD, r"( @ (epoch \d+(/\d+)?|step \d+|\d{2,}:\d{2}:\d{2}))?")
    + r"(" + _GPU_CELL + r"( " + _GPU_CELL + r")* \| )?"
    + _either(_MEM, r"\d+\.\d", _G, _G)
    + r"( \| CPU: \d+\.\d%)?"
    + r"( \| RSS: \d+\.\dG)?"
    + r"( \| " + _either(_TORCH, _G, _G, _G, r"\d+", r"\d+") + r")?"
    + r"( \| " + _either(_TRAIN) + r"( \d+\.\d samples/s)? step \d+\.\d{3}s( "
    + _either(_DATA, r"\d+\.\d") + r")?)?$"
)


def short_gpu_name(name):
    """The model part of a GPU name: 'Tesla V100-SXM2-32GB' -> 'V100', 'NVIDIA H200' -> 'H200',
    'NVIDIA GeForce RTX 4090' -> 'RTX 4090', 'NVIDIA A100-SXM4-40GB' -> 'A100'.
    Returns '?' for an empty or missing name."""
    try:
        if not name:
            return "?"
        name = str(name)
        words = [w for w in name.split() if w not in _VENDOR_WORDS]
        if not words:
            return name.strip() or "?"
        if words[0] in _TWO_WORD_FAMILIES and len(words) > 1:
            return "%s %s" % (words[0], words[1].split("-")[0])
        short = words[0].split("-")[0] or words[0]
        return short.replace("(", "[").replace(")", "]")
    except Exception:
        return "?"


def gib(n_bytes):
    """'38.2G': bytes as GiB with one decimal."""
    return "%.1fG" % (n_bytes / _GIB)


def _num(value):
    """A finite float, or None (bools, NaN, inf, strings, objects)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        f = float(value)
    except Exception:
        return None
    return f if math.isfinite(f) else None


def _count(value):
    f = _num(value)
    return int(f) if f is not None and f >= 0 and f == int(f) else None


def format_progress(epoch=None, epochs=None, step=None, elapsed_s=None):
    """' @ epoch 45/200' for a 0-based ``epoch`` (shown 1-based), ' @ step 1200',
    ' @ 00:12:30' for ``elapsed_s`` seconds, or ''."""
    epoch, epochs, step = _count(epoch), _count(epochs), _count(step)
    if epoch is not None:
        if epochs:
            return " @ epoch %d/%d" % (epoch + 1, epochs)
        return " @ epoch %d" % (epoch + 1)
    if step is not None:
        return " @ step %d" % step
    elapsed = _num(elapsed_s)
    if elapsed is not None and 0 <= elapsed < 1e9:
        total = int(elapsed)
        return " @ %02d:%02d:%02d" % (total // 3600, total // 60 % 60, total % 60)
    return ""


def _pct(value):
    value = _num(value)
    return "N/A" if value is None else "%.1f" % value


def format_train(samples_per_s=None, step_s=None, data_pct=None):
    """'train: 1234.5 samples/s step 0.412s data 12.3%' (samples/s and data left out when
    unknown), or None without a step time."""
    step = _num(step_s)
    if step is None or step < 0:
        return None
    text = tr(_TRAIN)
    rate = _num(samples_per_s)
    if rate is not None and rate >= 0:
        text += " %.1f samples/s" % rate
    text += " step %.3fs" % step
    share = _num(data_pct)
    if share is not None and share >= 0:
        text += " " + trf(_DATA, min(share, 100.0))
    return text


def format_resource_line(gpus=None, memory=None, cpu_pct=None, rss_bytes=None, torch_mem=None,
                         epoch=None, epochs=None, step=None, train=None, elapsed_s=None):
    """Build one resource line.

    gpus: list of dicts with ``index``, ``name``, ``util_pct``, ``mem_used_bytes``,
    ``mem_total_bytes`` (the snapshot file's GPU objects); None or [] leaves the GPU part out.
    memory: a MemoryInfo-like ``(total, available, used)`` in bytes, or None.
    cpu_pct: machine CPU busy %, or None. rss_bytes: this process's RSS, or None.
    torch_mem: dict with ``allocated_bytes``, ``reserved_bytes``, ``peak_bytes``,
    ``num_alloc_retries``, ``num_ooms`` (see _torch.torch_memory), or None without CUDA.
    train: ``(samples_per_s, median_step_s, data_pct)`` (see format_train), or None.
    elapsed_s: the progress shown when neither epoch nor step is known.
    Returns the line without a trailing newline; a part whose values are not numbers is left
    out. Never raises.
    """
    parts = []
    try:
        cells = []
        for g in gpus or ():
            if not isinstance(g, dict):
                continue
            used, total = _num(g.get("mem_used_bytes")), _num(g.get("mem_total_bytes"))
            mem_pct = 100.0 * used / total if used is not None and total else None
            index = _count(g.get("index"))
            cells.append("GPU%d(%s): %s%%/%s%%" % (0 if index is None else index, short_gpu_name(g.get("name")),
                                                   _pct(g.get("util_pct")), _pct(mem_pct)))
        if cells:
            parts.append(" ".join(cells))
    except Exception:
        pass
    try:
        if memory is not None:
            total, used = _num(memory[0]), _num(memory[2])
            if total is not None and used is not None and total >= 0 and used >= 0:
                pct = 100.0 * used / total if total else 0.0
                parts.append(trf(_MEM, pct, gib(used), gib(total)))
    except Exception:
        pass
    cpu = _num(cpu_pct)
    if cpu is not None:
        parts.append("CPU: %.1f%%" % cpu)
    rss = _num(rss_bytes)
    if rss is not None and rss >= 0:
        parts.append("RSS: %s" % gib(rss))
    try:
        if torch_mem:
            values = [_num(torch_mem.get(k, 0)) for k in ("allocated_bytes", "reserved_bytes", "peak_bytes")]
            counts = [_count(torch_mem.get(k, 0)) for k in ("num_alloc_retries", "num_ooms")]
            if all(v is not None and v >= 0 for v in values) and all(c is not None for c in counts):
                parts.append(trf(_TORCH, gib(values[0]), gib(values[1]), gib(values[2]), counts[0], counts[1]))
    except Exception:
        pass
    try:
        if train:
            part = format_train(*train)
            if part:
                parts.append(part)
    except Exception:
        pass
    return trf(_HEAD, format_progress(epoch, epochs, step, elapsed_s)) + " | ".join(parts)
