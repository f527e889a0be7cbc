#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The message catalogues' checks and template (docs/language.md).

  i18n_catalogue.py check PO...   fail (exit 1) on an untranslated or fuzzy entry, a msgstr whose
                                  fmt placeholders ({}, {:.1f}, {0}) differ from its msgid's or
                                  with an ASCII , or ; between CJK characters (，；), a
                                  string marked in the sources (tr, trf, N_, both forms of trfn; say,
                                  advise, word, phrase, both forms of sayn and phrasen in src/diagnose; tr, trf in web/assets/*.js) missing from the .po,
                                  or an entry no source uses any more
                                  (tr, trf in python/), or an entry no source uses any more; and
                                  python/trainmon/_catalogue.py differing from what `py` writes
  i18n_catalogue.py pot [OUT]     writes the template (default po/trainmon.pot) from the sources
  i18n_catalogue.py py            writes python/trainmon/_catalogue.py: the Python package's entries
                                  of every po/*.po (the package's built-in table, for when it is
                                  used without the binary's compiled catalogue; docs/language.md)

The build runs `check` before msgfmt compiles a catalogue (po/CMakeLists.txt), and ctest runs it too
(i18n.catalogue). Strings are extracted by GNU xgettext from src/ and include/; the .po files are
updated from the template with GNU msgmerge (`msgmerge -U po/zh_CN.po po/trainmon.pot`).
"""
import html
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEYWORDS = ["tr:1", "trf:1", "N_:1", "trfn:2"]  # name:argument, everywhere
DIAGNOSE_KEYWORDS = ["say:2", "advise:2", "word:1", "phrase:1", "phrasen:2", "sayn:3"]  # src/diagnose (detail.h)
# The second form of the two-form helpers (i18n::trfn, phrasen, sayn: "1 process" / "2 processes", each
# its own msgid): xgettext keeps one argument per keyword, so these are extracted in a pass of their own.
OTHER_FORM_KEYWORDS = ["trfn:3"]
DIAGNOSE_OTHER_FORM_KEYWORDS = ["trfn:3", "phrasen:3", "sayn:4"]


def sources(tops=("src", "include"), exts=(".cpp", ".h")):
    out = []
    for top in tops:
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            out += [os.path.relpath(os.path.join(d, f), ROOT) for f in files if f.endswith(exts)]
    return sorted(out)


# CJK characters and the full-width punctuation written with them (CJK symbols, full-width forms).
CJK = "\u2e80-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef"
# An ASCII comma or semicolon directly between two of them: Chinese text takes the full-width ，；
# there (ASCII stays inside numbers, units and code, which are not CJK).
MIXED_PUNCT = re.compile(f"[{CJK}][,;] ?[{CJK}]")


def mixed_punctuation(msgstr):
    """The places in `msgstr` where an ASCII ',' or ';' stands between CJK characters (list of str)."""
    return [m.group(0) for m in MIXED_PUNCT.finditer(msgstr)]


DATA_TR = re.compile(r"<[a-z0-9]+\b[^>]*\sdata-tr\b[^>]*>([^<]+)<")
PY_TOPS = ("python/trainmon", "python/boot")
PY_TABLE = os.path.join(ROOT, "python", "trainmon", "_catalogue.py")


def extract_python(out_path, base, more=()):
    """xgettext over the Python package: tr('...'), trf('...', args), N_('...') (python/trainmon/_i18n.py)."""
    args = [a for a in base if not a.startswith("--language")] + ["--language=Python"] + list(more)
    for k in ("tr:1", "trf:1", "N_:1"):
        args += [f"--keyword={k}", f"--flag={k}:no-python-format"]
    subprocess.run(args + sources(PY_TOPS, (".py",)), cwd=ROOT, check=True)


def extract(out_path):
    """Runs xgettext over the sources into out_path (a .pot): tr/trf/N_ everywhere, and the
    detectors' say/advise/word/phrase in src/diagnose only (elsewhere those names mean other things)."""
    xgettext = os.environ.get("XGETTEXT", "xgettext")
    base = [xgettext, "--language=C++", "--from-code=UTF-8", "--keyword=", "--sort-output", "--no-wrap",
            "--package-name=trainmon", "--msgid-bugs-address=https://github.com/trainmon/trainmon/issues",
            "-o", out_path]
    files = sources()
    diag = [f for f in files if f.startswith("src/diagnose/")]
    for keywords, chosen, more in ((KEYWORDS, files, []), (KEYWORDS + DIAGNOSE_KEYWORDS, diag, ["--join-existing"]),
                                   (OTHER_FORM_KEYWORDS, files, ["--join-existing"]),
                                   (DIAGNOSE_OTHER_FORM_KEYWORDS, diag, ["--join-existing"])):
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
    # The pages' fixed text: elements marked data-tr in web/assets/**/*.html (their text is the msgid,
    # translated by the page's script). xgettext reads no HTML: each is handed over as tr("...") on
    # its own line number, in a copy under a temporary directory found with -D (references stay
    # web/assets/...html:LINE).
    pages = sources(("web/assets",), (".html",))
    if pages:
        with tempfile.TemporaryDirectory() as tmp:
            for page in pages:
                lines = []
                with open(os.path.join(ROOT, page), encoding="utf-8") as f:
                    for line in f:
                        texts = [html.unescape(t) for t in DATA_TR.findall(line)]
                        lines.append(" ".join("tr(%s);" % json.dumps(t, ensure_ascii=False) for t in texts))
                os.makedirs(os.path.dirname(os.path.join(tmp, page)), exist_ok=True)
                with open(os.path.join(tmp, page), "w", encoding="utf-8") as f:
                    f.write("\n".join(lines) + "\n")
            args = [a for a in base if not a.startswith("--language")] + ["--language=JavaScript", "--join-existing",
                                                                          "-D", tmp, "--keyword=tr:1",
                                                                          "--flag=tr:1:no-c-format"]
            subprocess.run(args + pages, cwd=ROOT, check=True)
    extract_python(out_path, base, ["--join-existing"])


def xgettext_base(out_path):
    return [os.environ.get("XGETTEXT", "xgettext"), "--from-code=UTF-8", "--keyword=", "--sort-output",
            "--no-wrap", "--package-name=trainmon", "-o", out_path]


def python_table():
    """The text of python/trainmon/_catalogue.py: for each po/<lang>.po, its translations of the
    strings the Python package marks (untranslated and fuzzy entries left out)."""
    with tempfile.TemporaryDirectory() as tmp:
        pot = os.path.join(tmp, "python.pot")
        extract_python(pot, xgettext_base(pot))
        wanted = {e["msgid"] for e in parse_po(pot) if e["msgid"]}
    langs = {}
    for name in sorted(os.listdir(os.path.join(ROOT, "po"))):
        if name.endswith(".po"):
            entries = parse_po(os.path.join(ROOT, "po", name))
            langs[name[:-3]] = {e["msgid"]: e["msgstr"] for e in entries
                                if e["msgid"] in wanted and e.get("msgstr") and not e["fuzzy"]}
    out = ["# SPDX-License-Identifier: Apache-2.0",
           "# Generated by `scripts/i18n_catalogue.py py` from po/*.po: do not edit (the catalogue check",
           "# fails when this differs from the .po). The Python package's own entries, for when the",
           "# binary's compiled catalogue is not found (trainmon/_i18n.py).",
           "MESSAGES = {"]
    for lang, table in langs.items():
        out.append(f"    {lang!r}: {{")
        out += [f"        {k!r}:\n            {v!r}," for k, v in sorted(table.items())]
        out.append("    },")
    out.append("}")
    return "\n".join(out) + "\n"


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
            elif name.isidentifier():
                idx = name  # a named field: fmt::arg, or the alert templates' {target} (alerts/template.h)
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
    return sorted(a, key=str) == sorted(b, key=str) if manual else a == b


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
            for bad in mixed_punctuation(mstr):
                problems.append(f"{where}: ASCII comma or semicolon between Chinese characters ({bad!r}: "
                                f"use ，or ；): {mstr!r}")
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
    try:
        with open(PY_TABLE, encoding="utf-8") as f:
            current = f.read()
    except OSError:
        current = None
    if current != python_table():
        problems.append(f"{PY_TABLE}: differs from po/*.po: run `scripts/i18n_catalogue.py py`")
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
    if len(argv) == 2 and argv[1] == "py":
        with open(PY_TABLE, "w", encoding="utf-8") as f:
            f.write(python_table())
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
