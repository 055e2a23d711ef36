"""Reading a report back is bounded (issue 17): linear-time search for the embedded scenarios, a size cap checked
before reading (engine, CLI and Report page), and hostile JSON answered with one line."""

import json
import time

import pytest

from engine.cli.main import main as cli_main
from engine.presets import DEFAULT_SCENARIO
from engine.report.html import PAYLOAD_ID
from engine.cli.report import read_report_input
from engine.errors import KneepointError
from engine.report.readback import (REPORT_MAX_BYTES, ReportError, check_report_size,
                                    scenario_dicts)

#: a generous bound for work that takes milliseconds in linear time (the old regex took minutes on these inputs)
GENEROUS_SECONDS = 3.0
HOSTILE_SIZE = 300_000

_HOSTILE = {
    "unclosed script tags": "<" + "<script " * (HOSTILE_SIZE // 8),
    "unclosed payload tags": "<" + f'<script id="{PAYLOAD_ID}"' * (HOSTILE_SIZE // 30),
    "payload tag never closed": f'<script id="{PAYLOAD_ID}">' + "{" * HOSTILE_SIZE,
    "many empty scripts": "<html>" + "<script></script>" * (HOSTILE_SIZE // 17),
}


def _report_html(scenarios: list[dict], before: str = "") -> str:
    payload = json.dumps({"schema": "kneepoint.report/1", "scenarios": scenarios}).replace("<", "\\u003c")
    return (f"<!doctype html><html><head>{before}</head><body><h1>r</h1>"
            f'<script type="application/json" id="{PAYLOAD_ID}">{payload}</script></body></html>')


@pytest.mark.parametrize("shape", list(_HOSTILE))
def test_hostile_html_is_refused_in_linear_time(shape):
    text = _HOSTILE[shape]
    assert len(text) >= HOSTILE_SIZE * 0.9
    started = time.perf_counter()
    with pytest.raises(ReportError) as e:
        scenario_dicts(text, source="hostile.html")
    elapsed = time.perf_counter() - started
    print(f"benchmark: {shape}, {len(text) / 1e3:.0f} kB refused in {elapsed * 1e3:.1f} ms")
    assert "hostile.html" in str(e.value) and "\n" not in str(e.value)
    assert elapsed < GENEROUS_SECONDS


def test_the_payload_is_found_after_scripts_that_mention_it():
    decoy = f'<script>var s = "<script id=\\"{PAYLOAD_ID}\\">[{{\\"model\\": \\"decoy\\"}}]";</script>'
    html = _report_html([{**DEFAULT_SCENARIO, "name": "real"}], before=decoy + "<script>/* plotly */</script>")
    assert [d["name"] for d in scenario_dicts(html)] == ["real"]


def test_a_file_over_the_cap_is_refused_before_parsing():
    with pytest.raises(ReportError) as e:
        scenario_dicts(b" " * (REPORT_MAX_BYTES + 1), source="big.html")
    assert f"{REPORT_MAX_BYTES / 2**20:g} MB" in str(e.value) and "big.html" in str(e.value)
    check_report_size(REPORT_MAX_BYTES)  # exactly the cap is fine


def test_a_file_over_the_cap_is_refused_by_its_size(tmp_path):
    big = tmp_path / "big.html"
    with open(big, "wb") as fh:  # sparse: the size is what counts, and nothing has to be read to know it
        fh.truncate(REPORT_MAX_BYTES + 1)
    with pytest.raises(KneepointError) as e:
        read_report_input(str(big))
    assert "the limit is" in str(e.value)


@pytest.mark.parametrize("command", [["scenarios", "save"], ["report", "-o", "out.html"]])
def test_the_cli_refuses_an_oversized_report_in_one_line(tmp_path, capsys, command, monkeypatch):
    monkeypatch.chdir(tmp_path)
    big = tmp_path / "big.html"
    with open(big, "wb") as fh:
        fh.truncate(REPORT_MAX_BYTES + 1)
    assert cli_main([*command, str(big)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "the limit is" in err and "\n" not in err
    assert not (tmp_path / "out.html").exists()


@pytest.mark.parametrize("text, message", [("[" * 200_000 + "]" * 200_000, "nested too deeply"),
                                           ("[" + "1" * 5000 + "]", "not valid JSON")])
def test_hostile_json_is_one_line(text, message):
    with pytest.raises(ReportError) as e:
        scenario_dicts(text)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_the_report_page_refuses_an_oversized_upload():
    from tests.pagetest import open_page

    at = open_page("report.py")
    big = b"<html>" + b" " * REPORT_MAX_BYTES
    at.file_uploader(key="rep_import").set_value(("huge.html", big, "text/html")).run()
    assert not at.exception
    assert any("larger than" in e.value and "huge.html" in e.value for e in at.error)
