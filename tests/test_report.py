"""Reports: HTML self-contained with every figure and the scenarios, round trip, tables and their docs, CLI."""

import io
import json
import re
import subprocess
import sys
from datetime import datetime, timezone
from types import SimpleNamespace

import pandas as pd
import pytest

from engine.presets import DEFAULT_SCENARIO
from engine.report import (ReportError, TABLE_NAMES, build_report, read_scenarios, render_html, report_tables,
                           scenario_dicts, scenarios_json, table_files)
from engine.report import tables as tables_mod
from engine.report.figures import FIGURE_KINDS, figure_id
from engine.report.tables import hardware
from engine.scenario import ScenarioError, load_scenario
from engine.store import seed_hash
from tests.conftest import ROOT

DEFAULT_NAME = load_scenario(DEFAULT_SCENARIO).name  # derived from the design (it has no name)

WHOLE = {**DEFAULT_SCENARIO, "name": "Whole A100, DPU", "gpu": {"sku": "A100-SXM4-80GB"},
         "preprocessing": {"device": "dpu"}}
WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def ctx(store):
    from engine.analytic import Context

    return Context.from_store(store)


@pytest.fixture(scope="module")
def report(ctx, store):
    return build_report([DEFAULT_SCENARIO, WHOLE], ctx, seed_hash=seed_hash(store.seed_dir), title="Review <A&B>",
                        created=WHEN)


@pytest.fixture(scope="module")
def html(report):
    return render_html(report)


def test_html_is_self_contained(html):
    assert 'src="http' not in html and "src='http" not in html
    assert not re.search(r"<link[^>]+href=", html)  # no external stylesheet or font
    assert "@import" not in html and "url(http" not in html
    assert html.count("Plotly.newPlot") == 6  # 3 figures x 2 designs
    assert html.count("* plotly.js v") == 1  # the library's header: inlined once


def test_html_has_each_figure_metadata_and_escaped_title(report, html):
    for i, d in enumerate(report.designs):
        for kind in FIGURE_KINDS:
            assert f'id="fig-{figure_id(i, d, kind)}"' in html
    assert "Review &lt;A&amp;B&gt;" in html and "<A&B>" not in html.split("<body>")[1]
    assert report.seed_hash in html and report.engine_version in html and "2026-01-02T03:04:05+00:00" in html
    for name in ("Headline metrics", "Inputs", "Cost", "Profiles used", "Every point behind these profiles"):
        assert name in html
    assert "derived" in html and "published" in html  # the 1g slices are derived from the full GPU's points


def test_html_embeds_the_scenarios(report, html):
    got = scenario_dicts(html)
    assert got == [json.loads(s.to_json()) for s in report.scenarios]
    assert [s.name for s in read_scenarios(html)] == [DEFAULT_NAME, "Whole A100, DPU"]


def test_round_trip_report_to_scenarios_gives_identical_results(ctx, store, report, html):
    again = build_report(read_scenarios(html.encode(), ctx.book), ctx, seed_hash=seed_hash(store.seed_dir),
                         title=report.title, created=WHEN)
    assert again.scenarios == report.scenarios
    assert [d.evaluation for d in again.designs] == [d.evaluation for d in report.designs]
    a, b = report_tables(report), report_tables(again)
    for name in TABLE_NAMES:
        pd.testing.assert_frame_equal(a[name], b[name])
    via_json = read_scenarios(scenarios_json(report))  # the JSON export reads back the same
    assert via_json == report.scenarios


def test_repeated_names_are_numbered(ctx, store):
    r = build_report([DEFAULT_SCENARIO, DEFAULT_SCENARIO], ctx, seed_hash="x")
    assert [s.name for s in r.scenarios] == [DEFAULT_NAME, f"{DEFAULT_NAME} (2)"]
    assert r.designs[0].evaluation.capacity_rps == r.designs[1].evaluation.capacity_rps


def _documented_columns() -> dict[str, list[str]]:
    """Table -> columns as the tables module's docstring lists them ('- name: a, b,' lines, wrapped)."""
    out, current = {}, None
    for line in tables_mod.__doc__.splitlines():
        m = re.match(r"- (\w+): (.*)", line)
        if m:
            current = m.group(1)
            out[current] = m.group(2)
        elif current and line.startswith("  ") and not line.strip().startswith("("):
            out[current] += " " + line.strip()
        else:
            current = None
    return {t: [c.strip() for c in text.split(",") if c.strip()] for t, text in out.items()}


def test_every_table_and_column_is_documented(report):
    docs = _documented_columns()
    tables = report_tables(report)
    assert list(docs) == list(TABLE_NAMES) == list(tables)
    for name, frame in tables.items():
        assert list(frame.columns) == docs[name], name
        assert len(frame) > 0, name


def test_csv_and_parquet_hold_the_same_rows(report):
    csvs, parquets = table_files(report, "csv"), table_files(report, "parquet")
    assert set(csvs) == {f"{t}.csv" for t in TABLE_NAMES} and set(parquets) == {f"{t}.parquet" for t in TABLE_NAMES}
    frames = report_tables(report)
    for name in TABLE_NAMES:
        from_csv = pd.read_csv(io.BytesIO(csvs[f"{name}.csv"]))
        from_pq = pd.read_parquet(io.BytesIO(parquets[f"{name}.parquet"]))
        assert list(from_csv.columns) == list(from_pq.columns) == list(frames[name].columns)
        assert len(from_csv) == len(from_pq) == len(frames[name])
    designs = pd.read_parquet(io.BytesIO(parquets["designs.parquet"]))
    assert designs["capacity_rps"].tolist() == [d.evaluation.capacity_rps for d in report.designs]


def test_provenance_lists_the_points_and_their_sources(report, store):
    prov = report_tables(report)["provenance"]
    slices = prov[prov["scenario"] == DEFAULT_NAME]
    # issue 12: a saturated reference lets the slice law extrapolate past its support: the curve says so
    assert set(slices["profile_kind"]) <= {"derived", "derived-extrapolated"}
    assert slices["reference"].str.contains(" full ").all()
    assert slices["sm_ratio"].between(0, 1).all() and slices["source"].str.len().min() > 10
    pts = store.latency_points(model=["resnet50"], sku=["A100-SXM4-80GB"], partition=["full"])
    assert set(slices["source"]) <= set(pts["source"]) and set(slices["point_kind"]) <= {"measured", "published"}


@pytest.mark.parametrize("content, message", [
    (b"<html><body>no data</body></html>", "no embedded Kneepoint scenarios"),
    (b"{not json", "not valid JSON"),
    (b"\xff\xfe\x00", "not UTF-8"),
    (b'{"schema": "other/1", "scenarios": []}', "is not 'kneepoint.report/1'"),
    (b"[]", "expected a report"),
])
def test_unreadable_files_are_explained(content, message):
    with pytest.raises(ReportError, match=re.escape(message)):
        scenario_dicts(content, source="x.html")


def test_a_bad_scenario_is_named_with_its_field(ctx, store):
    bad = {**DEFAULT_SCENARIO, "name": "broken", "gpu": {"sku": "A100-SXM4-80GB", "layout": ["9g.99gb"]}}
    with pytest.raises(ScenarioError, match=r"scenario 2 \('broken'\): gpu.layout\[0\]: '9g.99gb'"):
        build_report([DEFAULT_SCENARIO, bad], ctx, seed_hash="x")
    with pytest.raises(ReportError, match=r"f.json: scenario 1 \('broken'\): gpu.layout\[0\]"):
        read_scenarios(json.dumps([bad]), ctx.book, source="f.json")


def test_hardware_tolerates_a_design_without_gpu():
    assert hardware(SimpleNamespace(gpu=None)) == "no accelerator"
    fpga = SimpleNamespace(model_dump=lambda mode: {"boards": 2, "threads": 6, "extra": {}})
    assert hardware(SimpleNamespace(gpu=None, fpga=fpga)) == "FPGA boards=2, threads=6"


def test_cli_report_writes_html_tables_and_notes_missing_chromium(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(DEFAULT_SCENARIO))
    b.write_text(json.dumps(WHOLE))
    out, tables = tmp_path / "r.html", tmp_path / "tables"
    r = subprocess.run([sys.executable, "-m", "engine", "report", str(a), str(b), "-o", str(out), "--csv", str(tables),
                        "--pdf", str(tmp_path / "r.pdf"), "--chromium", str(tmp_path / "no-chromium")],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "2 design(s)" in r.stdout
    assert "PNG figures were not made: no Chromium at" in r.stderr and "the PDF was not made" in r.stderr
    assert [s["name"] for s in scenario_dicts(out.read_bytes())] == [DEFAULT_NAME, "Whole A100, DPU"]
    assert {p.name for p in tables.iterdir()} == ({f"{t}.csv" for t in TABLE_NAMES} | {f"{t}.parquet" for t in TABLE_NAMES}
                                                 | {"scenarios.json", "README.txt"})
    assert "PNG figures were not made" in (tables / "README.txt").read_text()
    assert not (tmp_path / "r.pdf").exists() and not list(tmp_path.glob(".*.tmp"))
    # an earlier report is itself an input: its scenarios are re-evaluated
    again = subprocess.run([sys.executable, "-m", "engine", "report", str(out), "-o", str(tmp_path / "r2.html")],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and scenario_dicts((tmp_path / "r2.html").read_text()) == scenario_dicts(out.read_text())


def test_cli_report_errors_are_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**DEFAULT_SCENARIO, "batching": {"policy": "sometimes"}}))
    r = subprocess.run([sys.executable, "-m", "engine", "report", str(bad), "-o", str(tmp_path / "r.html")],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and r.stderr.startswith("error: ") and "batching.policy" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "r.html").exists()


def test_an_unstable_design_is_reported_as_such(ctx):
    import math

    from engine.report.tables import csv_bytes

    r = build_report([{**DEFAULT_SCENARIO, "name": "overloaded", "workload": {"arrival": {"rate_rps": 1e6}}}], ctx,
                     seed_hash="x")
    d = report_tables(r)["designs"]
    assert not d["stable"][0] and math.isinf(d["p99_ms"][0]) and d["unstable_reason"][0]
    back = pd.read_csv(io.BytesIO(csv_bytes(d)))  # inf survives CSV; floats read back exactly
    assert math.isinf(back["p99_ms"][0]) and back["capacity_rps"][0] == d["capacity_rps"][0]
    assert "Unstable at the offered load" in render_html(r)
