"""Simplified Chinese under a real zh_CN.UTF-8 locale (docs/language.md), end to end: one D4 run
recorded in Chinese, then `diagnose` prints Chinese evidence and advice while `--json` is
byte-identical to the English run; `--lang` and TRAINMON_LANG choose without the locale; what scripts
read (nvidia-smi query CSV, dmon, pmon, gpustat-compatible status, JSON) is byte-identical whatever the
language; the Markdown report speaks Chinese, its JSON does not; the HTML report in Chromium shows its
Chinese with a glyph for every character; `top`'s help box aligns at 80x24 with CJK text.

The catalogue itself (translated, placeholders) is the ctest entry i18n.catalogue.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import unicodedata

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_run_helpers import SOURCE_DIR, env, trainmon_bin, wait_for  # noqa: E402
from test_top import Tmux, top_env  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SANITIZED = os.environ.get("TRAINMON_SANITIZED") == "1"
ZH = "zh_CN.UTF-8"
SCALED = ["window_s=8", "clear_s=8", "starved_for_s=8", "main_pinned_pct=0"]


def have_zh_locale():
    out = subprocess.run(["locale", "-a"], capture_output=True, text=True).stdout.lower()
    return "zh_cn.utf8" in out.split()


pytestmark = pytest.mark.skipif(not have_zh_locale(), reason="the zh_CN.UTF-8 locale is not generated "
                                "(scripts/setup.sh)")


def lang_env(base, lang=None, **extra):
    """`base` with the language variables of a user whose locale is `lang` (None: C, English)."""
    e = dict(base)
    for k in ("TRAINMON_LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        e.pop(k, None)
    e["LANG"] = lang or "C.UTF-8"
    e.update(extra)
    return e


def tm(args, e, timeout=60):
    p = subprocess.run([trainmon_bin()] + args, env=e, capture_output=True, timeout=timeout)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    return p.stdout


def thresholds():
    return [a for t in SCALED for a in ("--threshold", t)]


@pytest.fixture(scope="module")
def d4(tmp_path_factory):
    if SANITIZED:
        pytest.skip("a 20-s recording: runs in the release pass only")
    d = tmp_path_factory.mktemp("d4")
    db = str(d / "runs.db")
    e = lang_env(env("d4-dataloader-starved.json", CUDA_VISIBLE_DEVICES="0", CUDA_DEVICE_ORDER="PCI_BUS_ID"), ZH)
    for k in ("TRAINMON_EVENTS_SOCKET", "TRAINMON_SNAPSHOT_FILE", "TRAINMON_RUN_ID"):
        e.pop(k, None)
    # sh starts the scenario's job process and becomes trainmon: the process is its child
    script = 'sleep 30 & export TRAINMON_TEST_PID=$!\nexec "$@"\n'
    args = ["/bin/sh", "-c", script, "sh", trainmon_bin(), "run"] + thresholds() + \
        ["--interval", "0.5", "--no-report", "--db", db, "--", "sleep", "20"]
    p = subprocess.run(args, env=e, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    # the run's own summary already speaks Chinese: its findings and its own lines
    assert "[警告] D4" in p.stderr and "GPU 在等数据" in p.stderr, p.stderr
    assert "trainmon: 命令退出状态 0，历时 " in p.stderr and re.search(r"\n  诊断结果：[1-9]\n", p.stderr), p.stderr
    assert "utilisation mean" not in p.stderr and "findings:" not in p.stderr, p.stderr
    return db, e


def test_diagnose_speaks_chinese_and_its_json_is_the_english_one(d4):
    db, e = d4
    args = ["diagnose", "last", "--db", db] + thresholds()
    zh = tm(args, e).decode()
    en = tm(args, lang_env(e)).decode()
    # evidence with its numbers in the sentence, the advice in the seeds' terms
    assert "D4 dataloader-starved" in zh and "[警告]" in zh, zh
    assert "GPU0 平均利用率" in zh and "利用率忽高忽低" in zh, zh
    assert "GPU 在等数据" in zh and "DataLoader workers" in zh and "pin_memory=True" in zh, zh
    assert "mean utilisation" not in zh and "The GPU waits for input" not in zh, zh
    assert "[warning] D4" in en and "GPU0 mean utilisation" in en and "The GPU waits for input" in en, en
    # the same numbers in both
    import re
    assert re.findall(r"(\d+) %", en)[:2] == re.findall(r"(\d+) %", zh)[:2], (en, zh)
    # what scripts read is the same bytes
    assert tm(args + ["--json"], e) == tm(args + ["--json"], lang_env(e))
    # the language chosen without the locale: --lang, TRAINMON_LANG (both over LANG)
    assert tm(["--lang", "zh_CN"] + args, lang_env(e)).decode() == zh
    assert tm(args, lang_env(e, TRAINMON_LANG="zh_CN")).decode() == zh
    assert tm(["--lang", "en"] + args, e).decode() == en
    # LANGUAGE first (gettext's order), LC_ALL over LANG
    assert tm(args, lang_env(e, "en_US.UTF-8", LANGUAGE="zh_CN:en")).decode() == zh
    assert tm(args, lang_env(e, ZH, LC_ALL="C")).decode() == en
    # what it says on stderr about the thresholds the run was recorded with: used, replaced, not found again
    same = subprocess.run([trainmon_bin()] + args, env=e, capture_output=True, text=True, timeout=60)
    assert same.returncode == 0 and "--threshold starved_for_s=8" in same.stderr, same.stderr
    assert "这里也按它们判断" in same.stderr and "judged with" not in same.stderr, same.stderr
    other = subprocess.run([trainmon_bin(), "diagnose", "last", "--db", db, "--threshold", "starved_for_s=600"],
                           env=e, capture_output=True, text=True, timeout=60)
    assert other.returncode == 0 and " D4 " not in other.stdout, other.stdout + other.stderr
    assert "这次按 starved_for_s=600（记录时为 8）" in other.stderr, other.stderr
    assert "没有再次发现" in other.stderr and "instead of" not in other.stderr, other.stderr


def test_reports_speak_chinese_where_people_read_and_english_where_scripts_do(d4, tmp_path):
    db, e = d4
    md = tm(["report", "last", "--db", db, "--format", "md"], e).decode()
    assert "## 诊断结果（1）" in md and "GPU0 平均利用率" in md and "GPU 在等数据" in md, md
    assert "## Findings" not in md
    assert tm(["report", "last", "--db", db, "--format", "json"], e) == \
        tm(["report", "last", "--db", db, "--format", "json"], lang_env(e))


def test_html_report_in_chromium_has_a_glyph_for_every_chinese_character(d4, tmp_path):
    if not os.path.exists("/usr/bin/chromium"):
        pytest.skip("/usr/bin/chromium is not installed")
    if not os.path.isdir(os.path.join(SOURCE_DIR, "web", "node_modules", "playwright-core")):
        pytest.skip("web/node_modules/playwright-core is missing (scripts/setup.sh)")
    db, e = d4
    html = tmp_path / "zh.html"
    tm(["report", "last", "--db", db, "-o", str(html)], e)
    node = shutil.which("node") or "/usr/bin/node"
    p = subprocess.run([node, os.path.join(HERE, "browser", "glyph_check.mjs"), str(html), str(tmp_path / "zh.png")],
                       capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    print(f"report screenshot: {r['screenshot']} (font {r['font']})")
    assert r["errors"] == [], r["errors"]
    assert r["lang"] == "zh-CN", r
    assert "诊断结果（1）" in r["h2"] and "图表" in r["h2"], r["h2"]
    assert "GPU0 平均利用率" in r["evidence"] and "GPU 在等数据" in r["advice"], r
    assert r["cjk"] >= 50, r  # the page really holds Chinese text
    assert r["missing"] == [], f"characters drawn as the missing-glyph box: {''.join(r['missing'])}"
    assert os.path.getsize(r["screenshot"]) > 10_000


def test_script_outputs_are_byte_identical_whatever_the_language(tmp_path):
    # An idle scenario's readings do not move between the two runs; every output without a clock.
    base = env("h100-idle.json")
    zh, en = lang_env(base, ZH), lang_env(base)
    cases = [
        ["query", "--query-gpu=index,name,utilization.gpu,memory.used,memory.total,temperature.gpu,pstate",
         "--format=csv"],
        ["query", "--query-gpu=utilization.gpu,memory.used", "--format=csv,noheader,nounits"],
        ["query", "--query-compute-apps=pid,used_memory,gpu_name,process_name", "--format=csv"],
        ["dmon", "-c", "1"],
        ["pmon", "-c", "1"],
        ["status", "--no-header"],
    ]
    for args in cases:
        a, b = tm(args, zh), tm(args, en)
        assert a == b, (args, a, b)
        assert a.strip(), args
        assert not any(ord(c) > 0x2e80 for c in a.decode()), (args, a)  # no CJK crept in
    # gpustat's --json: the same keys and values (its clock and the host's live load aside)
    a, b = json.loads(tm(["status", "--json"], zh)), json.loads(tm(["status", "--json"], en))
    assert a["gpus"] == b["gpus"] and a.keys() == b.keys() and a["driver_version"] == b["driver_version"]


def columns(s):
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 0 if unicodedata.combining(c) else 1 for c in s)


def test_top_help_box_aligns_at_80x24_in_chinese(tmp_path):
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    t = Tmux(tmp_path)
    try:
        e = top_env("h100-idle.json", XDG_STATE_HOME=tmp_path)
        e["LANG"] = ZH
        t.start(e, [trainmon_bin(), "top"], 80, 24)
        t.wait(lambda s: "? 帮助" in s and "q 退出" in s)
        t.keys("?")
        screen = t.wait(lambda s: "trainmon top：按键" in s and "按任意键关闭帮助" in s)
        lines = screen.splitlines()
        box = [l for l in lines if "│" in l]
        assert len(box) >= 10, screen
        # both borders of every row of the box in the same column, counted in terminal columns
        lefts = {columns(l[:l.index("│")]) for l in box}
        rights = {columns(l[:l.rindex("│")]) for l in box}
        assert len(lefts) == 1 and len(rights) == 1, screen
        top = next(l for l in lines if "┌" in l)
        assert columns(top[:top.index("┐")]) == rights.pop(), screen
        assert all(columns(l) <= 80 for l in lines), screen
        # the key column of the help lines lines up too (13 columns, as in English)
        for key in ("退出", "选择进程", "树状视图"):
            row = next(l for l in box if key in l)
            assert columns(row[:row.index(key)]) - columns(row[:row.index("│")]) in (15, 31), (key, row)
        t.keys("x")
        t.wait(lambda s: "按任意键关闭帮助" not in s)
    finally:
        t.kill()


def test_top_on_a_terminal_without_utf8_reads_english(tmp_path):
    # TRAINMON_LANG asks for Chinese, the locale cannot draw it: English, not rows of '?'
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    t = Tmux(tmp_path)
    try:
        e = top_env("h100-idle.json", XDG_STATE_HOME=tmp_path, TRAINMON_LANG="zh_CN")
        e["LANG"] = "C"
        t.start(e, [trainmon_bin(), "top"], 80, 24)
        screen = t.wait(lambda s: "q quit" in s)
        assert "?? " not in screen.splitlines()[-1], screen
    finally:
        t.kill()


def test_show_speaks_chinese_aligned_and_its_json_is_the_english_one(d4):
    db, e = d4
    zh = tm(["show", "last", "--db", db], e).decode()
    en = tm(["show", "last", "--db", db], lang_env(e)).decode()
    assert zh.startswith("运行 ") and "  命令：" in zh and "  状态：" in zh and "  诊断结果：" in zh, zh
    assert en.startswith("run ") and "  command:  " in en and "  findings: " in en, en
    # each row's value starts at the same terminal column in both languages (CJK characters are two)
    def value_columns(text):
        cols = []
        for line in text.splitlines()[1:]:
            if not line.startswith("  ") or line.startswith("   "):
                continue  # the training summary's own lines
            label, _, _ = line[2:].partition(" ")
            cols.append(2 + columns(label) + (len(line[2 + len(label):]) - len(line[2 + len(label):].lstrip(" "))))
        return cols
    zc, ec = value_columns(zh), value_columns(en)
    assert zc and len(set(zc)) == 1 and len(zc) == len(ec), (zc, zh)
    assert tm(["show", "last", "--db", db, "--json"], e) == tm(["show", "last", "--db", db, "--json"], lang_env(e))


def run_tm(args, e):
    return subprocess.run([trainmon_bin()] + args, env=e, capture_output=True, text=True, timeout=60)


def option_names(help_text):
    """Every option spelling a --help lists (-q, --quiet, ...)."""
    import re
    return set(re.findall(r"(?<![\w-])(--?[a-zA-Z][a-zA-Z0-9-]*)", help_text))


def test_help_speaks_chinese_with_the_option_names_of_the_english_one():
    base = env("h100-idle.json")
    en_env = lang_env(base, "C")
    for cmd, said in (("run", "运行名称（默认：脚本或程序名）"), ("diagnose", "含 [diagnose] 阈值表的 TOML 文件")):
        en = run_tm([cmd, "--help"], en_env)
        zh = run_tm(["--lang", "zh_CN", cmd, "--help"], en_env)
        assert en.returncode == zh.returncode == 0, zh.stderr
        assert said in zh.stdout and "显示此帮助信息并退出" in zh.stdout, zh.stdout
        assert "用法:" in zh.stdout and "选项:" in zh.stdout and "Usage:" not in zh.stdout, zh.stdout
        assert option_names(en.stdout) <= option_names(zh.stdout), option_names(en.stdout) - option_names(zh.stdout)
        assert "Print this help message" in en.stdout and not any(ord(c) > 0x2e80 for c in en.stdout), en.stdout
        # English is English however it is chosen
        assert run_tm(["--lang", "en", cmd, "--help"], lang_env(base, ZH)).stdout == en.stdout
        assert run_tm([cmd, "--help"], lang_env(base, "en_US.UTF-8")).stdout == en.stdout
    top = run_tm(["--help"], lang_env(base, ZH)).stdout
    assert "子命令:" in top and "监控、记录并诊断深度学习训练任务" in top, top
    assert "  diagnose " in top and "指出已记录运行中出了什么问题" in top, top


def test_parse_and_command_errors_speak_chinese_with_the_same_exit_status(tmp_path):
    base = env("h100-idle.json")
    missing = str(tmp_path / "none.db")
    cases = [
        # CLI11's: a value that is no number, an unknown option; trainmon's own: no store, a bad URL
        (["report", "last", "--max-points", "abc"], ["--max-points: 无法解析的取值 abc", "运行 --help 查看更多信息。"]),
        (["top", "--timeout", "abc"], ["--timeout: 取值 abc 不在 0.100000 到 600.000000 的范围内"]),
        (["runs", "--bogus"], ["无法识别的参数：--bogus"]),
        (["show", "last", "--db", missing], [f"trainmon show: {missing} 处没有运行存储"]),
        (["top", "--prometheus", "ftp://x"], ["trainmon top: --prometheus 'ftp://x': URL 必须以 http:// 或 https:// 开头"]),
        (["stauts"], ["trainmon: 'stauts' 不是 trainmon 命令。你是想输入 'status' 吗？"]),
    ]
    for args, want in cases:
        en = run_tm(args, lang_env(base))
        zh = run_tm(args, lang_env(base, ZH))
        assert en.returncode == zh.returncode and en.returncode in (1, 2), (args, en.returncode, zh.returncode)
        for w in want:
            assert w in zh.stderr, (args, zh.stderr)
        assert not any(ord(c) > 0x2e80 for c in en.stderr), (args, en.stderr)
def test_runs_table_speaks_chinese_aligned_and_its_json_is_the_english_one(d4):
    db, e = d4
    zh = tm(["runs", "--db", db], e).decode().splitlines()
    en = tm(["runs", "--db", db], lang_env(e)).decode().splitlines()
    assert zh[0].split()[:3] == ["ID", "名称", "状态"] and en[0].split()[:3] == ["ID", "NAME", "STATUS"], (zh, en)
    assert "已退出(0)" in zh[1] and "exited(0)" in en[1], (zh, en)
    # COMMAND (the last column) starts at the same terminal column in the header and the row
    for lines, head in ((zh, "命令"), (en, "COMMAND")):
        assert columns(lines[0][:lines[0].index(head)]) == columns(lines[1][:lines[1].index("sleep 20")]), lines
    # the findings count right-aligned under its header (D4 among them)
    count = str(json.loads(tm(["runs", "--db", db, "--json"], e))[0]["finding_count"])
    assert count != "0"
    for lines, head in ((zh, "诊断结果"), (en, "FINDINGS")):
        end = columns(lines[0][:lines[0].index(head) + len(head)])
        row, cut = lines[1], 0
        while columns(row[:cut]) < end:
            cut += 1
        assert row[:cut].split()[-1] == count, lines
    assert tm(["runs", "--db", db, "--json"], e) == tm(["runs", "--db", db, "--json"], lang_env(e))
