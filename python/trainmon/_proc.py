# SPDX-License-Identifier: Apache-2.0
"""Cheap host readers: /proc/meminfo, /proc/stat and /proc/self/statm, read directly.

Nothing here sleeps: CPU % is the busy share of the /proc/stat tick deltas between two calls
(psutil.cpu_percent(interval=1), used by the article's callback, sleeps one second per call).
Parsers take text and are pure; ``ProcReader`` does the file access under an injectable root.
"""

import os

__all__ = ["parse_meminfo", "parse_stat_cpu", "parse_statm_rss", "ProcReader", "MemoryInfo"]

_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class MemoryInfo(tuple):
    """Host memory in bytes: ``(total, available, used)``; ``used = total - available``."""

    __slots__ = ()

    def __new__(cls, total, available):
        return tuple.__new__(cls, (total, available, max(0, total - available)))

    total = property(lambda self: self[0])
    available = property(lambda self: self[1])
    used = property(lambda self: self[2])

    @property
    def used_pct(self):
        """Used share of total, percent (0.0 when total is 0)."""
        return 100.0 * self[2] / self[0] if self[0] else 0.0


def parse_meminfo(text):
    """Parse /proc/meminfo text.

    Returns a MemoryInfo in bytes, or None when MemTotal is missing or malformed. Without a
    MemAvailable line (kernels before 3.14) available is estimated as MemFree + Buffers + Cached.
    """
    values = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        if not sep:
            continue
        parts = rest.split()
        if not parts:
            continue
        try:
            number = int(parts[0])
        except ValueError:
            continue
        unit = parts[1] if len(parts) > 1 else ""
        values[key.strip()] = number * 1024 if unit == "kB" else number
    total = values.get("MemTotal")
    if not total:
        return None
    available = values.get("MemAvailable")
    if available is None:
        available = values.get("MemFree", 0) + values.get("Buffers", 0) + values.get("Cached", 0)
    return MemoryInfo(total, min(available, total))


def parse_stat_cpu(text):
    """Parse the aggregate ``cpu`` line of /proc/stat.

    Returns ``(busy_ticks, total_ticks)`` (USER_HZ ticks since boot; busy excludes idle and
    iowait, total counts user..steal, guest time being already inside user), or None when the
    line is missing or malformed.
    """
    for line in text.splitlines():
        if line.startswith("cpu "):
            fields = line.split()[1:9]
            try:
                ticks = [int(x) for x in fields]
            except ValueError:
                return None
            if len(ticks) < 4:
                return None
            total = sum(ticks)
            idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
            return total - idle, total
    return None


def parse_statm_rss(text, page_size=_PAGE_SIZE):
    """Parse /proc/PID/statm: the resident set size in bytes, or None when malformed."""
    parts = text.split()
    if len(parts) < 2:
        return None
    try:
        return int(parts[1]) * page_size
    except ValueError:
        return None


def _read(path):
    # os.open/os.read: no buffering objects, about 10 us for these small files.
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        return os.read(fd, 65536).decode("ascii", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


class ProcReader:
    """Reads the host numbers of the resource line from ``root`` (``/proc`` by default).

    ``cpu_percent()`` is the whole-machine busy share since the previous call (the first call
    measures since construction). Every method returns None when its file is unreadable or
    malformed (a container without /proc, an unusual kernel); nothing raises.
    """

    def __init__(self, root="/proc"):
        self.root = root
        self._last_cpu = self._cpu_ticks()

    def _cpu_ticks(self):
        text = _read(self.root + "/stat")
        return parse_stat_cpu(text) if text is not None else None

    def memory(self):
        """Host memory as a MemoryInfo (bytes), or None."""
        text = _read(self.root + "/meminfo")
        return parse_meminfo(text) if text is not None else None

    def cpu_percent(self):
        """Machine CPU busy %, 0..100, since the previous call; None when unknown or no ticks passed."""
        now = self._cpu_ticks()
        last, self._last_cpu = self._last_cpu, now
        if now is None or last is None:
            return None
        d_busy, d_total = now[0] - last[0], now[1] - last[1]
        if d_total <= 0:
            return None
        return max(0.0, min(100.0, 100.0 * d_busy / d_total))

    def rss_bytes(self, pid="self"):
        """Resident set size of ``pid`` (this process by default), bytes, or None."""
        text = _read("%s/%s/statm" % (self.root, pid))
        return parse_statm_rss(text) if text is not None else None
