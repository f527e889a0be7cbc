# SPDX-License-Identifier: Apache-2.0
"""The Debian package the build makes (`cpack -G DEB`, cmake/packaging.cmake): installed with dpkg
into a scratch root (its own dpkg database, so the machine's is never touched), run there on the fake
driver, its man pages found by man(1), its bash completion used, then removed: nothing of it stays.
Also the man pages and completions against --help (one source: the option definitions), and
"did you mean" for a mistyped command."""
import glob
import os
import re
import shutil
import subprocess

import pytest

BIN = os.environ.get("TRAINMON_BIN", "")
FAKE = os.environ.get("TRAINMON_FAKE_NVML_PATH", "")
SCEN = os.environ.get("TRAINMON_SCENARIOS_DIR", "")
BUILD = os.path.dirname(BIN) if BIN else ""

need_tools = pytest.mark.skipif(not all(shutil.which(t) for t in ("cpack", "dpkg", "dpkg-deb", "man")),
                                reason="cpack / dpkg / man not installed")


def tm(*args, **kw):
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=60, **kw)


def options_in_help(command):
    """Every --long option `trainmon COMMAND --help` lists."""
    out = tm(*([command] if command else []), "--help").stdout
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", out)) - {"--help"}


def commands():
    out = tm("--help").stdout
    return re.findall(r"^  ([a-z]+)\s{2,}\S", out.split("Subcommands:")[1], re.M)


def test_man_pages_and_completions_come_from_the_option_definitions(tmp_path):
    cmds = commands()
    assert {"status", "query", "dmon", "pmon", "serve", "run"} <= set(cmds)
    r = tm("--print-man", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(tmp_path)) == sorted(["trainmon.1"] + [f"trainmon-{c}.1" for c in cmds])
    bash = tm("--print-completion", "bash").stdout
    zsh = tm("--print-completion", "zsh").stdout
    fish = tm("--print-completion", "fish").stdout
    for c in [""] + cmds:
        page = open(tmp_path / (f"trainmon-{c}.1" if c else "trainmon.1")).read()
        roff = page.replace("\\-", "-")
        # the program's name, never the path it was started by (argv[0])
        assert BUILD not in page and re.search(r"^\.TH TRAINMON", page, re.M), page[:200]
        for opt in options_in_help(c):
            assert opt in roff, f"{opt} of `trainmon {c}` missing from its man page"
            assert opt in bash and opt in zsh, f"{opt} of `trainmon {c}` missing from a completion"
            assert f"-l {opt[2:]}" in fish, f"{opt} of `trainmon {c}` missing from the fish completion"
        if shutil.which("groff"):
            g = subprocess.run(["groff", "-man", "-Tutf8", "-z"], input=page, capture_output=True, text=True)
            assert g.returncode == 0 and not g.stderr, (c, g.stderr)
    assert tm("--print-completion", "tcsh").returncode == 2
    # generated files: English, the same bytes whatever language the user's messages are in
    zh = dict(os.environ, TRAINMON_LANG="zh_CN")
    zh_dir = tmp_path / "zh"
    r = tm("--lang", "zh_CN", "--print-man", str(zh_dir), env=zh)
    assert r.returncode == 0, r.stderr
    assert "显示此帮助信息" in tm("--help", env=zh).stdout  # the help itself does speak Chinese
    for name in os.listdir(zh_dir):
        assert (zh_dir / name).read_bytes() == (tmp_path / name).read_bytes(), name
    assert tm("--print-completion", "bash", env=zh).stdout == bash
    assert tm("--lang", "zh_CN", "--print-completion", "zsh").stdout == zsh
    assert tm("status", "--print-completion", "fish", env=zh).stdout == fish


def man_section(page, title):
    """The roff lines of one .SH section of a page."""
    lines = page.split("\n")
    start = lines.index(f".SH {title}") + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith(".SH "))
    return lines[start:end]


def plain(roff):
    return roff.replace("\\fB", "").replace("\\fR", "").replace("\\-", "-").replace("\\e", "\\")


def test_man_pages_exit_status_environment_name_and_choices(tmp_path):
    """--print-man creates its directory; EXIT STATUS is docs/cli.md's table (one table in the code,
    src/cli/exit_codes.h, checked against the docs here); ENVIRONMENT names every variable the sources
    read; NAME does not repeat the program's name; a choice list whose choices hold commas reads
    clearly (choices separated by '|', in --help and the pages alike)."""
    out = tmp_path / "new" / "nested"
    r = tm("--print-man", str(out))
    assert r.returncode == 0 and not r.stderr, r.stderr
    docs = open(os.path.join(os.environ.get("TRAINMON_SOURCE_DIR", ""), "docs", "cli.md")).read()
    table = docs[docs.index("## Exit status"):].split("\n\n")[1]
    want = [tuple(c.strip().replace("`", "") for c in row.strip("|").split("|", 1))
            for row in table.split("\n")[2:] if row.startswith("|")]
    assert len(want) >= 6, table
    sources = []
    for d, _, files in os.walk(os.path.join(os.environ.get("TRAINMON_SOURCE_DIR", ""), "src")):
        sources += [open(os.path.join(d, f)).read() for f in files if f.endswith((".cpp", ".h"))]
    read = set(re.findall(r'(?:getenv|\benv|env_or|envname)\("([A-Z][A-Z0-9_]+)"', "\n".join(sources)))
    assert {"TRAINMON_DB", "TRAINMON_NVML_LIBRARY", "NO_COLOR", "XDG_STATE_HOME"} <= read, read
    for page_file in sorted(os.listdir(out)):
        page = open(out / page_file).read()
        name = man_section(page, "NAME")[0]
        assert not re.search(r"\\- trainmon\b", name), name
        exit_rows = man_section(page, "EXIT STATUS")
        got = [(exit_rows[i + 1].removeprefix(".B "), plain(exit_rows[i + 2]))
               for i in range(0, len(exit_rows), 3)]
        assert got == want, (page_file, got)
        env_names = {plain(l.removeprefix(".B ")) for l in man_section(page, "ENVIRONMENT") if l.startswith(".B ")}
        assert read <= env_names, (page_file, read - env_names)
    for c in [""] + commands():
        help_text = tm(*([c] if c else []), "--help").stdout
        for choices in re.findall(r":\{([^}]*)\}", help_text):
            assert "|" in choices or "," not in choices, (c, choices)
    status_help = tm("status", "--help").stdout
    assert "{draw|limit|draw,limit|limit,draw}" in status_help
    assert "{draw|limit|draw,limit|limit,draw}" in open(out / "trainmon-status.1").read()


def test_print_man_reports_a_failure_once(tmp_path):
    (tmp_path / "file").write_text("x")
    r = tm("--print-man", str(tmp_path / "file" / "sub"))
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1 and f"cannot create {tmp_path}/file/sub" in r.stderr, r.stderr
    (tmp_path / "out" / "trainmon-status.1").mkdir(parents=True)  # a page that cannot be written
    r = tm("--print-man", str(tmp_path / "out"))
    assert r.returncode == 1
    assert r.stderr == f"trainmon: cannot write {tmp_path}/out/trainmon-status.1: Is a directory\n", r.stderr


def complete(script, words):
    """COMPREPLY of the bash completion for the command line `words` (the last one being completed)."""
    prog = script + "\nCOMP_WORDS=(%s); COMP_CWORD=%d; _trainmon; printf '%%s\\n' \"${COMPREPLY[@]}\"\n" % (
        " ".join("'%s'" % w for w in words), len(words) - 1)
    return subprocess.run(["bash", "-c", prog], capture_output=True, text=True, timeout=30).stdout.split()


def test_bash_completion_completes_commands_and_their_options():
    script = tm("--print-completion", "bash").stdout
    assert complete(script, ["trainmon", "sta"]) == ["status"]
    assert "--json" in complete(script, ["trainmon", "status", "--js"])
    assert "--query-gpu" in complete(script, ["trainmon", "--nvml-library", "x", "query", "--query-g"])
    assert "--nvml-library" in complete(script, ["trainmon", "--nvml"])
    # after a global option and its value, and after its --opt=value spelling
    assert "--json" in complete(script, ["trainmon", "--proc-root", "/proc", "status", "--js"])
    assert "--json" in complete(script, ["trainmon", "--proc-root=/proc", "status", "--js"])
    assert complete(script, ["trainmon", "--nvml-library", "x", "sta"]) == ["status"]
    assert BIN not in script


def test_a_mistyped_command_gets_did_you_mean():
    r = tm("stauts")
    assert r.returncode == 2
    assert "'stauts' is not a trainmon command. Did you mean 'status'?" in r.stderr
    r = tm("xyzzy")
    assert r.returncode == 2 and "Did you mean" not in r.stderr and "not a trainmon command" in r.stderr
    # global options before the command still work
    env = dict(os.environ, TRAINMON_FAKE_NVML_SCENARIO=os.path.join(SCEN, "h200-idle.json"))
    r = tm("--nvml-library", FAKE, "status", "--no-header", env=env)
    assert r.returncode == 0 and "NVIDIA H200" in r.stdout, r.stderr


def test_command_options_work_before_the_command(tmp_path):
    """A command's options before the command mean what they mean after it (flags, valued options,
    --opt=VALUE, several at once, mixed with global ones); an option neither trainmon nor the command
    knows is still refused (status 2)."""
    env = dict(os.environ, TRAINMON_NVML_LIBRARY=FAKE,
               TRAINMON_FAKE_NVML_SCENARIO=os.path.join(SCEN, "h200-idle.json"), TRAINMON_FAKE_NVML_TIME_S="0")
    env.pop("TRAINMON_DB", None)
    db = str(tmp_path / "runs.db")
    r = tm("record", "--db", db, "--duration", "1", "--interval", "0.5", "--name", "before-test", env=env)
    assert r.returncode == 0, r.stderr
    pairs = [
        (["--db", db, "runs"], ["runs", "--db", db]),
        (["--db=" + db, "--json", "runs"], ["runs", "--db=" + db, "--json"]),
        (["--no-color", "status", "--no-header"], ["status", "--no-header", "--no-color"]),
        (["--json", "--nvml-library", FAKE, "status"], ["--nvml-library", FAKE, "status", "--json"]),
        (["--format", "csv,noheader", "query", "--query-gpu=name,uuid"],
         ["query", "--query-gpu=name,uuid", "--format", "csv,noheader"]),
        (["-i", "0", "-L", "query"], ["query", "-L", "-i", "0"]),
    ]
    for before, after in pairs:
        a, b = tm(*before, env=env), tm(*after, env=env)
        assert a.returncode == b.returncode == 0, (before, a.stderr, b.stderr)
        if "--json" not in before or "status" not in before:  # status --json carries the time
            assert a.stdout == b.stdout, (before, a.stdout, b.stdout)
        assert a.stdout.strip(), before
    assert "before-test" in tm("--db", db, "runs", env=env).stdout
    r = tm("--no-such-option", "status", env=env)
    assert r.returncode == 2 and "--no-such-option" in r.stderr, r.stderr
    r = tm("--query-gpu=name", "status", env=env)  # query's option, not status's
    assert r.returncode == 2, r.stderr
    # Only the command named is set up before parsing (src/cli/lazy_setup.h): a value that is
    # another command's name, or a command named twice, is parsed again with every command.
    top_db = tmp_path / "top"
    os.symlink(db, top_db)
    a = tm("--db", str(top_db), "runs", cwd=str(tmp_path), env=env)
    b = tm("--db", "top", "runs", cwd=str(tmp_path), env=env)
    assert a.returncode == b.returncode == 0 and "before-test" in b.stdout and a.stdout == b.stdout, b.stderr
    r = tm("runs", "--db", db, "status", env=env)
    assert r.returncode == 2 and "status" in r.stderr, r.stderr
    # ... and asks for the help of the command it runs, not of the value's namesake
    r = tm("--db", "top", "runs", "--help", env=env)
    assert r.returncode == 0 and "List recorded runs" in r.stdout and "--db" in r.stdout, r.stdout
    # a value that names a command without that option is the value (`status` has no --db)
    os.symlink(db, tmp_path / "status")
    r = tm("--db", "status", "runs", cwd=str(tmp_path), env=env)
    assert r.returncode == 0 and "before-test" in r.stdout, r.stderr
    # an option whose value may be left out does not take the command as its value (gpustat's -P)
    a, b = tm("-P", "status", "--no-header", env=env), tm("status", "-P", "--no-header", env=env)
    assert a.returncode == b.returncode == 0 and a.stdout == b.stdout and " W " in a.stdout, a.stderr
    # a bad --downsample-after is refused without --retention too
    r = tm("record", "--db", db, "--duration", "1", "--downsample-after", "xyz", env=env)
    assert r.returncode == 2 and "--downsample-after" in r.stderr, r.stderr


@need_tools
@pytest.mark.skipif(os.environ.get("TRAINMON_SANITIZED") == "1", reason="packaging: one pass is enough")
def test_deb_installs_runs_and_removes_cleanly(tmp_path):
    out = tmp_path / "pkg"
    r = subprocess.run(["cpack", "-G", "DEB", "-B", str(out)], cwd=BUILD, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    debs = glob.glob(str(out / "*.deb"))
    assert len(debs) == 1, os.listdir(out)
    info = subprocess.run(["dpkg-deb", "-f", debs[0], "Package", "Version", "Depends"], capture_output=True,
                          text=True).stdout
    # Depends comes from the binary's shared libraries (dpkg-shlibdeps); SQLite and ncurses are linked
    # statically when their archives exist (CMakeLists.txt), so the C++ runtime is the sure one.
    assert "Package: trainmon" in info and "libstdc++6" in info and "libc6" in info, info
    root = tmp_path / "root"
    for d in ("var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers"):
        (root / d).mkdir(parents=True)
    (root / "var/lib/dpkg/status").write_text("")
    dpkg = ["dpkg", f"--root={root}", "--force-not-root", "--force-depends", "--force-script-chrootless",
            "--log=/dev/null"]
    r = subprocess.run(dpkg + ["-i", debs[0]], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    binary = root / "usr/bin/trainmon"
    env = dict(os.environ, TRAINMON_NVML_LIBRARY=FAKE, TRAINMON_FAKE_NVML_SCENARIO=os.path.join(SCEN, "h200-idle.json"))
    s = subprocess.run([str(binary), "status", "--no-color"], capture_output=True, text=True, env=env, timeout=60)
    assert s.returncode == 0 and "NVIDIA H200" in s.stdout, s.stderr
    # serve's HTTP plugin, installed in /usr/lib/trainmon and found from the binary
    assert (root / "usr/lib/trainmon/trainmon-http.so").is_file()
    assert "libcpp-httplib" in info, info  # the plugin's libraries are the package's dependencies too
    s = subprocess.run([str(binary), "serve", "--listen", "127.0.0.1:0", "--duration", "1", "--db",
                        str(tmp_path / "serve.db")], capture_output=True, text=True, env=env, timeout=120)
    assert s.returncode == 0 and "listening on http://127.0.0.1:" in s.stderr, s.stderr
    m = subprocess.run(["man", "-M", str(root / "usr/share/man"), "-w", "trainmon"], capture_output=True, text=True)
    assert m.returncode == 0 and m.stdout.strip().endswith("man1/trainmon.1"), m.stdout + m.stderr
    m = subprocess.run(["man", "-M", str(root / "usr/share/man"), "-w", "trainmon-query"], capture_output=True,
                       text=True)
    assert m.returncode == 0, m.stderr
    for f in ("usr/share/bash-completion/completions/trainmon", "usr/share/zsh/vendor-completions/_trainmon",
              "usr/share/fish/vendor_completions.d/trainmon.fish", "usr/lib/systemd/system/trainmon-serve.service",
              "usr/lib/systemd/system/trainmon-record.service", "usr/share/doc/trainmon/cli.md"):
        assert (root / f).is_file(), f
    unit = (root / "usr/lib/systemd/system/trainmon-serve.service").read_text()
    assert "ExecStart=/usr/bin/trainmon serve" in unit
    assert complete((root / "usr/share/bash-completion/completions/trainmon").read_text(),
                    ["trainmon", "pm"]) == ["pmon"]
    listed = subprocess.run(dpkg + ["-L", "trainmon"], capture_output=True, text=True).stdout.split()
    r = subprocess.run(dpkg + ["--purge", "trainmon"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    left = [p for p in listed if (root / p.lstrip("/")).is_file()]
    assert not left, left
    assert not binary.exists()
