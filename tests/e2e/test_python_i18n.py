# SPDX-License-Identifier: Apache-2.0
"""The Python package in Simplified Chinese (docs/language.md): the language chosen by the binary's
variables, the resource line's labels and the notices from the same catalogue (the compiled .mo
next to the binary, else the package's built-in table), RESOURCE_LINE_RE for both languages, and
never an exception for a catalogue that is missing, damaged or wrong."""

import os
import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_python_helpers import PYTHON_DIR, SOURCE_DIR, reset_package

import trainmon  # noqa: E402
from trainmon import _catalogue, _format, _i18n, _snapshot  # noqa: E402

GIB = 1 << 30
SCRIPTS = os.path.join(SOURCE_DIR, "scripts")


@pytest.fixture(autouse=True)
def fresh_package():
    reset_package()
    _i18n.reset()
    yield
    reset_package()
    _i18n.reset()


@pytest.fixture
def zh(monkeypatch):
    monkeypatch.setenv("TRAINMON_LANG", "zh_CN")
    _i18n.reset()


def article_line():
    gpus = [{"index": 0, "name": "Tesla V100-SXM2-32GB", "util_pct": 94.2, "mem_used_bytes": 871,
             "mem_total_bytes": 1000},
            {"index": 1, "name": "Tesla V100-SXM2-32GB", "util_pct": 12.3, "mem_used_bytes": 156,
             "mem_total_bytes": 1000}]
    torch_mem = {"allocated_bytes": int(3.1 * GIB), "reserved_bytes": 4 * GIB, "peak_bytes": int(3.6 * GIB),
                 "num_alloc_retries": 2, "num_ooms": 0}
    return _format.format_resource_line(gpus=gpus, memory=(int(61.4 * GIB), 0, int(38.2 * GIB)), cpu_pct=42.1,
                                        rss_bytes=int(5.1 * GIB), torch_mem=torch_mem, epoch=44, epochs=200,
                                        train=(1234.5, 0.412, 12.3))


@pytest.mark.parametrize("variables, expected", [
    ({"TRAINMON_LANG": "zh_CN"}, "zh_CN"),
    ({"TRAINMON_LANG": "zh_CN.UTF-8"}, "zh_CN"),
    ({"TRAINMON_LANG": "zh"}, "zh_CN"),
    ({"TRAINMON_LANG": "en", "LANG": "zh_CN.UTF-8"}, ""),           # TRAINMON_LANG first
    ({"LANGUAGE": "zh_CN:en", "LANG": "en_US.UTF-8"}, "zh_CN"),     # then LANGUAGE's first entry
    ({"LANGUAGE": "zh_CN", "LC_ALL": "C"}, ""),                     # ignored under the C locale
    ({"LC_ALL": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}, "zh_CN"),
    ({"LC_MESSAGES": "zh_CN.UTF-8"}, "zh_CN"),
    ({"LANG": "zh_CN.GB18030"}, "zh_CN"),
    ({"LANG": "fr_FR.UTF-8"}, ""),                                  # no catalogue: English
    ({"LANG": "C"}, ""),
    ({}, ""),
])
def test_the_language_is_chosen_by_the_binarys_variables_in_its_order(variables, expected):
    assert _i18n.choose(variables) == expected


def test_english_line_is_the_articles_and_matches():
    line = article_line()
    assert line == ("Resource @ epoch 45/200: GPU0(V100): 94.2%/87.1% GPU1(V100): 12.3%/15.6% "
                    "| Mem: 62.2%(38.2G/61.4G) | CPU: 42.1% | RSS: 5.1G "
                    "| torch: alloc 3.1G reserved 4.0G peak 3.6G retries 2 ooms 0 "
                    "| train: 1234.5 samples/s step 0.412s data 12.3%")
    assert _format.RESOURCE_LINE_RE.match(line)


def test_chinese_line_translates_the_labels_and_keeps_every_number(zh):
    line = article_line()
    assert line == ("资源 @ epoch 45/200: GPU0(V100): 94.2%/87.1% GPU1(V100): 12.3%/15.6% "
                    "| 内存: 62.2%(38.2G/61.4G) | CPU: 42.1% | RSS: 5.1G "
                    "| torch: 已分配 3.1G 已预留 4.0G 峰值 3.6G 重试 2 OOM 0 "
                    "| 训练: 1234.5 samples/s step 0.412s 等数据 12.3%")
    assert _format.RESOURCE_LINE_RE.match(line)
    host_only = _format.format_resource_line(memory=(8 * GIB, 0, 2 * GIB), step=1200)
    assert host_only == "资源 @ step 1200: 内存: 25.0%(2.0G/8.0G)"
    assert _format.RESOURCE_LINE_RE.match(host_only)
    # The same numbers in both languages: a log parser reads the same values from either.
    assert re.findall(r"\d+\.\d+", line) == re.findall(r"\d+\.\d+", _english(article_line))


def _english(fn):
    saved = os.environ.get("TRAINMON_LANG")
    os.environ["TRAINMON_LANG"] = "en"
    _i18n.reset()
    try:
        return fn()
    finally:
        os.environ["TRAINMON_LANG"] = saved if saved is not None else ""
        _i18n.reset()


def test_the_parser_rejects_lines_that_mix_the_languages_wrongly():
    for bad in ("资源 @ epoch 45/200: Mem 62.3% (38.2G/61.4G)",        # the label without its colon
                "资源: 内存: 25.0%(2.0G/8.0G) | 训练: step 0.412s data",  # a data share with no number
                "Resource: 内存 25.0%(2.0G/8.0G)"):
        assert not _format.RESOURCE_LINE_RE.match(bad), bad


def test_every_msgid_of_the_line_has_its_chinese_in_the_built_in_table():
    table = _catalogue.MESSAGES["zh_CN"]
    for msgid in (_format._HEAD, _format._MEM, _format._TORCH, _format._TRAIN, _format._DATA):
        assert table.get(msgid) and table[msgid] != msgid, msgid


def test_the_built_in_table_is_what_the_po_gives():
    # The catalogue check's own comparison (ctest i18n.catalogue runs all of it): one source of truth.
    sys.path.insert(0, SCRIPTS)
    try:
        import i18n_catalogue
    finally:
        sys.path.remove(SCRIPTS)
    with open(os.path.join(PYTHON_DIR, "trainmon", "_catalogue.py"), encoding="utf-8") as f:
        assert f.read() == i18n_catalogue.python_table()


def test_the_compiled_catalogue_next_to_the_binary_is_read_with_gettext(zh, monkeypatch):
    binary = os.environ.get("TRAINMON_BIN")
    if not binary:
        pytest.skip("TRAINMON_BIN is not set (run under ctest)")
    mo = os.path.join(os.path.dirname(binary), "locale", "zh_CN", "LC_MESSAGES", "trainmon.mo")
    assert os.path.exists(mo), mo
    assert _i18n.tr("train:") == "训练:"
    assert _i18n._state["mo"].get("train:") == "训练:"  # from the .mo, not the table
    # The .mo wins over the table: a catalogue of the installed binary is the one in force.
    monkeypatch.setitem(_i18n._state["mo"], "train:", "训练(mo):")
    assert _i18n.tr("train:") == "训练(mo):"


def test_without_the_binary_the_built_in_table_speaks_chinese(zh, monkeypatch, tmp_path):
    monkeypatch.delenv("TRAINMON_BIN", raising=False)
    monkeypatch.delenv("TRAINMON_LOCALEDIR", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no trainmon on PATH
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    _i18n.reset()
    assert _i18n.language() == "zh_CN" and _i18n._get()["mo"] == {}
    assert article_line().startswith("资源 @ epoch 45/200: ")
    src = _snapshot.SnapshotSource(env={"PATH": str(tmp_path)})
    src.binary = None
    assert src.read() is None
    assert src.notice.startswith("trainmon：资源行里没有 GPU 数据：找不到 `trainmon` 程序")


def test_a_damaged_catalogue_means_the_table_and_no_exception(zh, monkeypatch, tmp_path):
    d = tmp_path / "zh_CN" / "LC_MESSAGES"
    d.mkdir(parents=True)
    (d / "trainmon.mo").write_bytes(b"\xde\x12\x04\x95" + b"\xff" * 40)  # a .mo magic, nonsense after
    monkeypatch.setenv("TRAINMON_LOCALEDIR", str(tmp_path))
    monkeypatch.delenv("TRAINMON_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    _i18n.reset()
    assert _i18n.tr("train:") == "训练:"


def test_a_translation_whose_fields_do_not_fit_falls_back_to_english(zh, monkeypatch):
    monkeypatch.setitem(_catalogue.MESSAGES["zh_CN"], _format._MEM, "内存: {}%({})({})({})({})")
    monkeypatch.setitem(_catalogue.MESSAGES["zh_CN"], _format._DATA, "等数据 {:d}%")  # a float into {:d}
    _i18n.reset()
    monkeypatch.setattr(_i18n, "_locale_dirs", lambda env: [])  # the table only
    line = _format.format_resource_line(memory=(8 * GIB, 0, 2 * GIB), train=(None, 0.5, 10.0))
    assert line == "资源: Mem: 25.0%(2.0G/8.0G) | 训练: step 0.500s data 10.0%"


anything = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
                     st.text(max_size=8), st.lists(st.floats(), max_size=4),
                     st.dictionaries(st.text(max_size=12), st.one_of(st.integers(), st.floats(), st.text(max_size=4)),
                                     max_size=4))


nums = st.one_of(st.none(), st.integers(0, 10 ** 6), st.floats(min_value=0, max_value=1e6), st.just(float("nan")))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(nums, nums, nums, nums, nums, st.one_of(st.none(), st.tuples(nums, nums, nums)), anything, anything)
def test_chinese_lines_take_anything_and_still_parse(cpu, rss, epoch, epochs, step, train, junk1, junk2):
    os.environ["TRAINMON_LANG"] = "zh_CN"
    _i18n.reset()
    try:
        gpus = [{"index": 0, "name": "NVIDIA H200", "util_pct": cpu, "mem_used_bytes": rss, "mem_total_bytes": 2}]
        line = _format.format_resource_line(gpus=gpus, memory=(8 * GIB, 0, 2 * GIB), cpu_pct=cpu, rss_bytes=rss,
                                            epoch=epoch, epochs=epochs, step=step, train=train)
        assert line.startswith("资源") and _format.RESOURCE_LINE_RE.match(line), line
        junk = _format.format_resource_line(gpus=junk1, memory=junk2, cpu_pct=junk1, torch_mem=junk2, train=junk1)
        assert junk.startswith("资源")  # never raises, whatever it is given
    finally:
        os.environ["TRAINMON_LANG"] = "en"
        _i18n.reset()


def test_trainmon_run_passes_its_language_to_the_job(tmp_path):
    from test_run_helpers import env, trainmon_bin
    script = "import trainmon; print(trainmon.resource_line())"
    for lang, head, mem in (("zh_CN", "资源", "内存: "), ("en", "Resource", "Mem: ")):
        p = subprocess.run([trainmon_bin(), "--lang", lang, "run", "--db", str(tmp_path / "t.db"), "--interval",
                            "0.2", "--no-instrument", "--", "/usr/bin/python3", "-c", script],
                           env=env(TRAINMON_LANG="en", PYTHONPATH=PYTHON_DIR, TRAINMON_NO_AGENT="1"),
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        line = p.stdout.strip().splitlines()[-1]
        assert line.startswith(head) and mem in line and _format.RESOURCE_LINE_RE.match(line), line


def test_the_catalogue_check_flags_an_ascii_comma_or_semicolon_between_chinese_characters():
    sys.path.insert(0, SCRIPTS)
    try:
        import i18n_catalogue
    finally:
        sys.path.remove(SCRIPTS)
    assert i18n_catalogue.mixed_punctuation("训练循环没有进展, 它停在 {}") == ["展, 它"]
    assert i18n_catalogue.mixed_punctuation("显存峰值 {}；利用率（平均）;峰值") == ["）;峰"]
    # ASCII stays inside numbers, units, code and names; full-width is what Chinese takes
    assert i18n_catalogue.mixed_punctuation("进程 12, 进程 13，1,234 MiB; GPU0,GPU1：`a; b`") == []
    zh = [e for e in i18n_catalogue.parse_po(os.path.join(SCRIPTS, "..", "po", "zh_CN.po")) if e["msgid"]]
    assert zh and not [e["msgstr"] for e in zh if i18n_catalogue.mixed_punctuation(e.get("msgstr", ""))]
