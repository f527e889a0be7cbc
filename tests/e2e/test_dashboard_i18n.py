# SPDX-License-Identifier: Apache-2.0
"""`trainmon serve`'s dashboard in the reader's language (docs/language.md): /api/v1/messages
answers the catalogue the browser's Accept-Language asks for, unless the server was told a language
(--lang, $TRAINMON_LANG); Chromium with a zh-CN locale shows the dashboard's labels, headings and
empty states in Chinese with a glyph for every character, and with en-US the English ones; a server in
Chinese gives its findings' evidence and advice to the page (/api/v1/findings/l10n) while the JSON API
stays English."""

import json
import os
import re
import shutil
import subprocess

import pytest

from test_run_helpers import SOURCE_DIR, kill_quietly, wait_for  # noqa: E402
from test_serve import CHROMIUM, NODE_MODULES, Served  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ZH = "zh-CN,zh;q=0.9,en;q=0.8"  # what Chromium sends with a zh-CN locale


@pytest.fixture(scope="module")
def follows_browser(tmp_path_factory):
    # No --lang and no $TRAINMON_LANG (ctest sets it to en for every other test): each browser decides.
    saved = os.environ.pop("TRAINMON_LANG", None)
    try:
        s = Served(str(tmp_path_factory.mktemp("dash")), "healthy-1gpu.json")
    finally:
        if saved is not None:
            os.environ["TRAINMON_LANG"] = saved
    wait_for(lambda: s.json("/api/v1/snapshot").get("ticks", 0) >= 2, timeout=60)
    yield s
    out = s.stop()
    assert s.proc.returncode == 0, out


def messages(served, accept=None):
    status, headers, body = served.get("/api/v1/messages", headers={"Accept-Language": accept} if accept else None)
    assert status == 200, body[:300]
    assert "Accept-Language" in headers.get("Vary", ""), headers
    return json.loads(body)


def test_messages_follow_the_browsers_accept_language(follows_browser):
    zh = messages(follows_browser, ZH)
    assert zh["lang"] == "zh_CN" and zh["chosen_by"] == "browser"
    assert zh["messages"]["GPU processes"] == "GPU 进程" and zh["messages"]["nothing to report"] == "没有发现问题"
    assert zh["messages"]["warning"] == "警告"  # the whole catalogue: finding titles and severities too
    for accept in ("en-US,en;q=0.9,zh-CN;q=0.8", "fr-FR", None, "zh-CN;q=0"):
        en = messages(follows_browser, accept)
        assert en == {"lang": "en", "chosen_by": "browser", "messages": {}}, (accept, en)


def test_a_server_told_its_language_answers_it_to_every_browser(tmp_path):
    for told, args, extra in (("zh_CN", ["--lang", "zh_CN"], {}), ("en", [], {"TRAINMON_LANG": "en"})):
        (tmp_path / told).mkdir()
        s = Served(str(tmp_path / told), "healthy-1gpu.json", *args, extra_env=extra)
        try:
            for accept in (ZH, "en-US", None):
                m = messages(s, accept)
                assert m["lang"] == told and m["chosen_by"] == "server", (told, accept, m["lang"])
                assert (m["messages"].get("GPU processes") == "GPU 进程") == (told == "zh_CN")
        finally:
            s.stop()


def dashboard(served, locale, shot):
    node = shutil.which("node")
    if not node:
        pytest.skip("node is not installed")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip("chromium is not installed (/usr/bin/chromium)")
    if not os.path.isdir(os.path.join(NODE_MODULES, "playwright-core")):
        pytest.skip("web/node_modules/playwright-core is missing (scripts/setup.sh installs it)")
    p = subprocess.run([node, os.path.join(HERE, "browser", "dashboard_lang_check.mjs"), served.base, locale,
                        str(shot)], capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_dashboard_in_chromium_with_a_chinese_locale_reads_chinese_with_every_glyph(follows_browser, tmp_path):
    shot_dir = os.environ.get("TRAINMON_SCREENSHOT_DIR", str(tmp_path))
    r = dashboard(follows_browser, "zh-CN", os.path.join(shot_dir, "dashboard-zh.png"))
    print(f"dashboard screenshot: {r['screenshot']} (font {r['font']})")
    assert r["errors"] == [], r["errors"]
    assert r["languages"][0] == "zh-CN" and r["lang"] == "zh-CN", r
    assert r["h2"] == ["GPU", "主机", "诊断结果", "GPU 进程", "运行记录"], r["h2"]
    assert r["th"] == ["GPU", "PID", "用户", "命令", "显存", "SM %", "CPU %", "RSS",
                       "ID", "名称", "类型", "状态", "开始时间", "时长", "GPU", "诊断结果"], r["th"]
    assert r["labels"] == ["利用率", "显存", "功耗", "温度", "进程数"], r["labels"]
    assert r["host_rows"] == ["CPU 占用", "负载", "内存", "交换分区"], r["host_rows"]
    assert r["conn"].startswith("实时 · 运行 "), r["conn"]
    assert "没有发现问题" in r["empty"], r["empty"]  # a healthy scenario's findings list
    assert r["cjk"] >= 25, r
    assert r["missing"] == [], f"characters drawn as the missing-glyph box: {''.join(r['missing'])}"
    assert os.path.getsize(r["screenshot"]) > 10_000


def test_dashboard_with_an_english_locale_stays_english(follows_browser, tmp_path):
    r = dashboard(follows_browser, "en-US", tmp_path / "dashboard-en.png")
    assert r["errors"] == [], r["errors"]
    assert r["lang"] == "en" and r["cjk"] == 0, r
    assert "GPU processes" in r["h2"] and r["labels"][0] == "utilisation" and r["conn"].startswith("live · run ")


CJK = re.compile("[\u2e80-\u9fff\uff00-\uffef]")


def test_a_chinese_server_gives_the_page_its_findings_in_chinese_and_the_api_in_english(tmp_path):
    job = subprocess.Popen(["sleep", "600"])  # the scenario's GPU process
    s = Served(str(tmp_path), "d10-ecc-errors.json", "--lang", "zh_CN", extra_env={"TRAINMON_TEST_PID": job.pid})
    try:
        wait_for(lambda: any(f["code"] == "D10" for f in s.json("/api/v1/findings")), timeout=90)
        english = {f["code"]: f for f in s.json("/api/v1/findings")}
        text = s.json("/api/v1/findings/l10n")
        assert text["lang"] == "zh_CN", text
        local = {f["code"]: f for f in text["findings"]}
        d10, zh = english["D10"], local["D10"]
        assert (zh["gpus"], zh["pids"]) == (d10["gpus"], d10["pids"])
        # the same finding, its numbers in both; only the words differ
        assert CJK.search(zh["evidence"]) and CJK.search(zh["advice"]), zh
        assert not CJK.search(d10["evidence"] + d10["advice"]), d10  # what scripts read stays English
        assert sorted(re.findall(r"\d+", zh["evidence"])) == sorted(re.findall(r"\d+", d10["evidence"])), (zh, d10)
        assert not CJK.search(json.dumps(s.json("/api/v1/snapshot")["findings"], ensure_ascii=False))
        r = dashboard(s, "zh-CN", tmp_path / "dashboard-findings-zh.png")
        assert r["errors"] == [], r["errors"]
        shown = [f for f in r["findings"] if f and f[0] == zh["evidence"]]
        assert shown and shown[0][1] == zh["advice"], (r["findings"], zh)
        assert r["missing"] == [], f"characters drawn as the missing-glyph box: {''.join(r['missing'])}"
    finally:
        s.stop()
        kill_quietly(job)
        job.wait()
