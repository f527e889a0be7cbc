#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The message catalogues' checks and template (docs/language.md).

  i18n_catalogue.py check PO...   fail (exit 1) on an untranslated or fuzzy entry, a msgstr whose
                                  fmt placeholders ({}, {:.1f}, {0}) differ from its msgid's, a
                                  string marked in the sources (tr, trf, N_; say, advise, word, phrase
                                  in src/diagnose; tr, trf in web/assets/*.js) missing from the .po,
                                  or an entry no source uses any more
  i18n_catalogue.py pot [OUT]     writes the template (default po/trainmon.pot) from the sources

The build runs `check` before msgfmt compiles a catalogue (po/CMakeLists.txt), and ctest runs it too
(i18n.catalogue). Strings are extracted by GNU xgettext from src/ and include/; the .po files are
updated from the template with GNU msgmerge (`msgmerge -U po/zh_CN.po po/trainmon.pot`).
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEYWORDS = ["tr:1", "trf:1", "N_:1"]  # name:argument, everywhere
DIAGNOSE_KEYWORDS = ["say:2", "advise:2", "word:1", "phrase:1"]  # src/diagnose's helpers (detail.h)


def sources(tops=("src", "include"), exts=(".cpp", ".h")):
    out = []
    for top in tops:
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            out += [os.path.relpath(os.path.join(d, f), ROOT) for f in files if f.endswith(exts)]
    return sorted(out)


def extract(out_path):
    """Runs xgettext over the sources into out_path (a .pot): tr/trf/N_ everywhere, and the
    detectors' say/advise/word/phrase in src/diagnose only (elsewhere those names mean other things)."""
    xgettext = os.environ.get("XGETTEXT", "xgettext")
    base = [xgettext, "--language=C++", "--from-code=UTF-8", "--keyword=", "--sort-output", "--no-wrap",
            "--package-name=trainmon", "--msgid-bugs-address=https://github.com/trainmon/trainmon/issues",
            "-o", out_path]
    files = sources()
    diag = [f for f in files if f.startswith("src/diagnose/")]
    for keywords, chosen, more in ((KEYWORDS, files, []), (KEYWORDS + DIAGNOSE_KEYWORDS, diag, ["--join-existing"])):
        args = list(base) + more
        for k in keywords:
            args += [f"--keyword={k}", f"--flag={k}:no-c-format"]
        subprocess.run(args + chosen, cwd=ROOT, check=True)
    # The pages' scripts (web/assets): tr('...') and trf('...', args) in report.js and app.js.
    js = sources(("web/assets",), (".js",))
    if js:
        args = [a for a in base if not a.startswith("--language")] + ["--language=JavaScript", "--join-existing"]
        for k in ("tr:1", "trf:1"):
            args += [f"--keyword={k}", f"--flag={k}:no-c-format"]
        subprocess.run(args + js, cwd=ROOT, check=True)


def unquote(s):
    s = s.strip()
    assert s.startswith('"') and s.endswith('"'), s
    body = s[1:-1]
    return re.sub(r'\\(.)', lambda m: {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}.get(m.group(1), m.group(1)), body)


def parse_po(path):
    """Entries as dicts: msgid, msgstr, fuzzy, line. Obsolete (#~) entries are skipped."""
    entries, cur, field = [], None, None

    def flush():
        if cur is not None and "msgid" in cur:
            entries.append(cur)

    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.startswith("#~"):
                continue
            if line.startswith("#,"):
                flush()
                cur, field = {"fuzzy": "fuzzy" in line, "line": n}, None
            elif line.startswith("#") or not line.strip():
                continue
            elif line.startswith("msgid "):
                if cur is None or "msgid" in cur:
                    flush()
                    cur = {"fuzzy": False, "line": n}
                cur["msgid"], field = unquote(line[6:]), "msgid"
            elif line.startswith("msgstr "):
                cur["msgstr"], field = unquote(line[7:]), "msgstr"
            elif line.startswith("msgid_plural") or line.startswith("msgstr["):
                raise SystemExit(f"{path}:{n}: plural forms are not used by trainmon")
            elif line.startswith('"') and field:
                cur[field] += unquote(line)
        flush()
    return entries


def placeholders(s):
    """fmt replacement fields of s: (manual, [(arg index, spec)] in order of appearance); None when s
    is not a valid fmt string ('{{' and '}}' are literal braces; automatic {} and manual {0} fields
    cannot be mixed)."""
    fields, auto, i, kinds = [], 0, 0, set()
    while i < len(s):
        c = s[i]
        if c in "{}" and s[i:i + 2] in ("{{", "}}"):
            i += 2
            continue
        if c == "}":
            return None
        if c == "{":
            j = s.find("}", i)
            if j < 0:
                return None
            inner = s[i + 1:j]
            name, _, spec = inner.partition(":")
            if name == "":
                idx, auto = auto, auto + 1
                kinds.add("auto")
            elif name.isdigit():
                idx = int(name)
                kinds.add("manual")
            else:
                return None
            fields.append((idx, spec))
            i = j + 1
            continue
        i += 1
    if len(kinds) > 1:
        return None
    return ("manual" in kinds, fields)


def same_arguments(mid, mstr):
    """A translation may reorder its arguments only by number ({1} ... {0}); with automatic fields
    both must take the same specs in the same order. Either way each argument once per use."""
    (_, a), (manual, b) = mid, mstr
    return sorted(a) == sorted(b) if manual else a == b


def check(po_paths):
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        pot = os.path.join(tmp, "trainmon.pot")
        extract(pot)
        marked = {e["msgid"] for e in parse_po(pot) if e["msgid"]}
    for po in po_paths:
        seen = set()
        for e in parse_po(po):
            mid, mstr = e["msgid"], e.get("msgstr", "")
            if not mid:
                continue  # the header
            where = f"{po}:{e['line']}"
            seen.add(mid)
            if e["fuzzy"]:
                problems.append(f"{where}: fuzzy entry (review it, then remove the fuzzy flag): {mid!r}")
            if not mstr:
                problems.append(f"{where}: untranslated: {mid!r}")
                continue
            pid, pstr = placeholders(mid), placeholders(mstr)
            if pid is None:
                problems.append(f"{where}: msgid is not a valid fmt string: {mid!r}")
            elif pstr is None:
                problems.append(f"{where}: msgstr is not a valid fmt string (or mixes {{}} and {{0}}): {mstr!r}")
            elif not same_arguments(pid, pstr):
                problems.append(f"{where}: placeholders differ: msgid {mid!r} has {pid[1]}, msgstr {mstr!r} has {pstr[1]}")
        for mid in sorted(marked - seen):
            problems.append(f"{po}: not in the catalogue (marked in the sources): {mid!r}")
        for mid in sorted(seen - marked):
            problems.append(f"{po}: no source uses this entry any more: {mid!r}")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"i18n_catalogue: {len(problems)} problem(s); update with `scripts/i18n_catalogue.py pot` "
              "and `msgmerge -U po/LANG.po po/trainmon.pot`", file=sys.stderr)
        return 1
    return 0


def main(argv):
    if len(argv) >= 2 and argv[1] == "check":
        return check(argv[2:] or [os.path.join(ROOT, "po", "zh_CN.po")])
    if len(argv) >= 2 and argv[1] == "pot":
        extract(argv[2] if len(argv) > 2 else os.path.join(ROOT, "po", "trainmon.pot"))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
