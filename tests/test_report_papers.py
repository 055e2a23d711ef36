"""The report's optional 'Seed papers' section (issue 14): the reproduction table as run now and its chart, in the
HTML only when asked (build_report(papers=True), python -m engine report --papers, the Report page's checkbox)."""

import json
import re
import subprocess
import sys
from html import escape

import pytest

from engine.presets import DEFAULT_SCENARIO
from engine.report import build_report, render_html
from engine.report.figures import PAPERS_FIGURE_ID, report_figures
from engine.reproduce.registry import entries
from engine.store import seed_hash
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def ctx(store):
    from engine.analytic import Context

    return Context.from_store(store)


def _section(html: str) -> str:
    return html[html.index('<section class="papers"'):]


def test_the_section_holds_every_entry_as_run_now_without_slow_or_simulator_ones(ctx, store):
    report = build_report([DEFAULT_SCENARIO], ctx, seed_hash=seed_hash(store.seed_dir), papers=True)
    rows = report.papers.rows
    assert [r.id for r in rows] == [e.id for e in entries()]
    slow = {e.id for e in entries() if e.slow or e.simulator}
    assert slow and all(r.kneepoint is None for r in rows if r.id in slow)  # not run unless asked
    html = render_html(report)
    section = _section(html)
    assert "<h2>Seed papers</h2>" in section and f'id="fig-{PAPERS_FIGURE_ID}"' in section
    table = section[section.index("<table>"):section.index("</table>")]
    assert table.count("<tr>") == len(rows) + 1  # the header and one row per entry
    for r in rows:
        assert f"<td>{escape(r.id)}</td>" in table
    pcie = next(r for r in rows if r.id == "preba-dpu-pcie")
    assert re.search(rf"<td>preba-dpu-pcie</td>.*?<td class=\"num\">{pcie.kneepoint:.4g}</td>", table)
    assert "Not run for this report: the slow entries and the simulator" in section
    assert 'src="http' not in html  # still self-contained: the chart draws with the inlined plotly.js
    (trace_points,) = [sum(len(t.x) for t in fig.data) for k, fig in report_figures(report).items()
                       if k == PAPERS_FIGURE_ID]
    # a ratio of 0 (the engine's 0 % against a positive paper value) has no place on the log axis: listed, not drawn
    assert trace_points == sum(r.status == "ok" and r.kneepoint / r.paper_value > 0 for r in rows)


def test_without_papers_there_is_no_section(ctx, store):
    report = build_report([DEFAULT_SCENARIO], ctx, seed_hash=seed_hash(store.seed_dir))
    html = render_html(report)
    assert report.papers is None and "Seed papers" not in html and 'class="papers"' not in html
    assert PAPERS_FIGURE_ID not in report_figures(report)


def test_cli_report_papers_flag(tmp_path):
    scenario = tmp_path / "a.json"
    scenario.write_text(json.dumps(DEFAULT_SCENARIO))
    for flags, out in (([], tmp_path / "plain.html"), (["--papers"], tmp_path / "papers.html")):
        r = subprocess.run([sys.executable, "-m", "engine", "report", str(scenario), "-o", str(out), *flags],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
    assert "Seed papers" not in (tmp_path / "plain.html").read_text()
    section = _section((tmp_path / "papers.html").read_text())
    assert "<h2>Seed papers</h2>" in section and "<td>eif-tenants</td>" in section
    assert all(f"<td>{e.id}</td>" in section for e in entries())
