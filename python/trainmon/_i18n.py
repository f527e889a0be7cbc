# SPDX-License-Identifier: Apache-2.0
"""The language of the package's text for people (docs/language.md): the resource line's labels
and the one-line notices. English is the source language (the msgids); Simplified Chinese comes
from the same catalogue as the binary's (po/zh_CN.po).

The language is chosen as the binary chooses it: the first set of $TRAINMON_LANG, then as gettext
orders them $LANGUAGE (its first entry; ignored when the locale is C or POSIX), $LC_ALL,
$LC_MESSAGES, $LANG. "zh_CN.UTF-8", "zh_CN" and "zh" select zh_CN; "C", "POSIX", "en*" or a
language without a catalogue select English. `trainmon run` passes its own choice (--lang
included) to the job as $TRAINMON_LANG.

The translations are read with the standard library's gettext from the compiled catalogue
(trainmon.mo) when one is found ($TRAINMON_LOCALEDIR, else next to the `trainmon` binary:
<bin>/locale, <bin>/../share/locale, else <sys.prefix>/share/locale); an entry the .mo lacks, or no
.mo at all (the package installed without the binary), comes from _catalogue.py, the package's
own entries of po/*.po written by `scripts/i18n_catalogue.py py` (the catalogue check fails when it
differs from the .po). A translation whose {} fields do not fit its arguments falls back to the
English. Nothing here raises.
"""

import gettext
import os
import shutil
import sys

from . import _catalogue

__all__ = ["language", "tr", "trf", "N_", "reset"]

_VARIABLES = ("TRAINMON_LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")
_state = {}


def _requested(env):
    for var in _VARIABLES:
        value = env.get(var) or ""
        if var == "LANGUAGE":
            value = value.split(":")[0]
            # gettext ignores LANGUAGE when the locale is C; so does the binary (then LC_ALL/LANG decide).
            loc = env.get("LC_ALL") or env.get("LC_MESSAGES") or env.get("LANG") or ""
            if loc in ("", "C", "POSIX"):
                continue
        if value:
            return value
    return ""


def choose(env=None):
    """The language the variables in ``env`` (default os.environ) select: "zh_CN", or "" for
    English (also for a language without a catalogue)."""
    try:
        value = _requested(os.environ if env is None else env)
        lang = value.split(".")[0].split("@")[0]
        if lang in ("", "C", "POSIX", "en") or lang.startswith("en_"):
            return ""
        for cand in (lang, lang.split("_")[0]):
            cand = "zh_CN" if cand == "zh" else cand
            if cand in _catalogue.MESSAGES:
                return cand
    except Exception:
        pass
    return ""


def _locale_dirs(env):
    dirs = []
    if env.get("TRAINMON_LOCALEDIR"):
        dirs.append(env["TRAINMON_LOCALEDIR"])
    binary = env.get("TRAINMON_BIN") or shutil.which("trainmon")
    if binary:
        here = os.path.dirname(os.path.realpath(binary))
        dirs += [os.path.join(here, "locale"), os.path.join(here, os.pardir, "share", "locale")]
    dirs.append(os.path.join(sys.prefix, "share", "locale"))
    return dirs


def _load(env):
    lang = choose(env)
    mo = {}
    if lang:
        for d in _locale_dirs(env):
            try:
                t = gettext.translation("trainmon", localedir=d, languages=[lang])
                mo = dict(getattr(t, "_catalog", {}))
                break
            except Exception:
                continue
    return {"lang": lang, "mo": mo, "table": _catalogue.MESSAGES.get(lang, {})}


def _get():
    if not _state:
        try:
            _state.update(_load(os.environ))
        except Exception:
            _state.update(lang="", mo={}, table={})
    return _state


def reset():
    """Forget the language chosen (the next call reads the environment again). For tests."""
    _state.clear()


def language():
    """The selected language: "zh_CN", or "" for English."""
    return _get()["lang"]


def N_(msgid):
    """Marks a string for the catalogue without translating it here (translated where shown)."""
    return msgid


def tr(msgid):
    """The translation of ``msgid`` in the selected language, or ``msgid`` itself."""
    try:
        s = _get()
        if not s["lang"]:
            return msgid
        text = s["mo"].get(msgid) or s["table"].get(msgid)
        return text if isinstance(text, str) and text else msgid
    except Exception:
        return msgid


def trf(msgid, *args):
    """str.format of the translation of ``msgid`` ({}, {:.1f}, {0}: the catalogue's syntax, shared
    with the binary's fmt) with ``args``; the English when the translation's fields do not fit."""
    text = tr(msgid)
    if text is not msgid:
        try:
            return text.format(*args)
        except Exception:
            pass
    return msgid.format(*args)
