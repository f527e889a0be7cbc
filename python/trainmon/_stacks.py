# SPDX-License-Identifier: Apache-2.0
"""Python stacks on request, for hang diagnosis (docs/python.md, "Stacks").

``ensure(socket_path)`` registers ``faulthandler`` on a real-time signal nobody else handles
(SIGRTMIN+6, else +7, +8), writing every thread's stack to ``stacks-PID.txt`` beside the recorder's
socket (its private 0700 directory). faulthandler writes from the signal handler itself, without
the GIL, so a process blocked in a collective, a lock or a sleep still answers, and carries on
afterwards (chain=False: the signal does nothing else; the default action, termination, is gone).
The file is created with O_CREAT|O_EXCL|O_NOFOLLOW and mode 0600; when a reused pid left one
behind, it is appended to only if it is a regular file of ours (not a link, not another user's).
"""

import os
import signal
import stat

__all__ = ["ensure", "stacks_path", "CANDIDATE_OFFSETS"]

#: Offsets from SIGRTMIN tried in order (glibc keeps the first real-time signals for itself and
#: Python's signal.SIGRTMIN already accounts for them).
CANDIDATE_OFFSETS = (6, 7, 8)

_registered = {}  # pid -> (signal number or None, file object kept open for faulthandler)


def stacks_path(socket_path, pid=None):
    """Where process ``pid`` (this one by default) writes its stacks for the recorder at
    ``socket_path``."""
    return os.path.join(os.path.dirname(socket_path), "stacks-%d.txt" % (os.getpid() if pid is None else pid))


def _open_private(path):
    flags = os.O_WRONLY | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        fd = os.open(path, flags)  # O_NOFOLLOW: a symbolic link fails (ELOOP)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            os.close(fd)
            raise PermissionError("%s is not a regular file of ours" % path)
    return os.fdopen(fd, "a", buffering=1)


def _free_signal():
    lo, hi = getattr(signal, "SIGRTMIN", None), getattr(signal, "SIGRTMAX", None)
    if lo is None or hi is None:
        return None
    for off in CANDIDATE_OFFSETS:
        sig = lo + off
        if sig > hi or sig > 64:
            break
        try:
            if signal.getsignal(sig) == signal.SIG_DFL:
                return sig
        except (ValueError, OSError):
            continue
    return None


def ensure(socket_path):
    """Register the stack dump for this process once (again in a forked child). Returns the
    signal number when registered, else None (no socket, no free signal, no faulthandler, a file
    we cannot own). Never raises."""
    pid = os.getpid()
    done = _registered.get(pid)
    if done is not None:
        return done[0]
    result = (None, None)
    try:
        import faulthandler
        if socket_path and hasattr(faulthandler, "register"):
            sig = _free_signal()
            if sig is not None:
                f = _open_private(stacks_path(socket_path, pid))
                try:
                    faulthandler.register(sig, file=f, all_threads=True, chain=False)
                    result = (sig, f)
                except Exception:
                    f.close()
    except Exception:
        result = (None, None)
    _registered[pid] = result
    return result[0]
