"""render_html(report) -> one self-contained HTML file that opens offline.

plotly.js is inlined once in the head and every figure draws with it; there is no external script,
stylesheet, font or image. The scenarios ride along as JSON in
`<script type="application/json" id="kneepoint-report">` (engine.report.readback reads them back), so
a report can be re-opened in the app. Every number shown comes from the Report (engine-computed);
this module only formats it.
"""

from __future__ import annotations

import json
import math
from html import escape

import pandas as pd
from plotly.offline import get_plotlyjs

from engine.report.build import REPORT_SCHEMA, Report
from engine.report.figures import (FIGURE_TITLES, PAPERS_FIGURE_ID, PAPERS_FIGURE_TITLE, design_figures, figure_id,
                                   papers_figure)
from engine.report.tables import hardware, papers_frame, report_tables
from engine.reproduce.runner import WITHIN, summarise

PAYLOAD_ID = "kneepoint-report"

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:2rem auto;
max-width:1100px;padding:0 1rem;color:#222;line-height:1.4}
h1{margin-bottom:.2rem}h2{border-bottom:1px solid #ccc;padding-bottom:.2rem;margin-top:2rem}
.meta{color:#555;font-size:.9rem}table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.85rem}
th,td{border:1px solid #ddd;padding:.2rem .5rem;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{background:#f3f4f6}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.diff td{background:#fff7e0}.note{background:#f3f4f6;border-left:4px solid #888;padding:.4rem .8rem}
.bad{color:#b00020;font-weight:600}.ok{color:#1b7f3b;font-weight:600}
figure{margin:0 0 1rem}figcaption{font-weight:600;margin-bottom:.2rem}
@media print{section.design{break-before:page}figure,table{break-inside:avoid}}
"""

# Headline rows of the summary (designs table column -> label); the values are the engine's.
_HEADLINE = {"hardware": "Accelerators", "rate_rps": "Offered load (requests/s)", "stable": "Stable at that load",
             "capacity_rps": "Capacity (requests/s)", "bottleneck": "Bottleneck",
             "sla_latency_ms": "SLA bound (ms)", "sla_percentile": "SLA percentile",
             "latency_at_rate_ms": "Tail latency at offered load (ms)", "sla_met": "SLA met",
             "sla_bounded_rps": "SLA-bounded throughput (requests/s)", "mean_ms": "Mean latency (ms)",
             "p99_ms": "p99 latency (ms)", "tco_usd": "TCO (USD)", "queries_per_usd": "Queries per USD",
             "queries_per_joule": "Queries per joule"}


def fmt(v) -> str:
    """A value as text: thousands separators for large numbers, 4 significant digits for small ones."""
    v = v.item() if hasattr(v, "item") and not isinstance(v, (str, bytes)) else v  # numpy scalar -> Python
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)):
        if math.isinf(v):
            return "unbounded" if v > 0 else "-unbounded"
        if float(v).is_integer() and abs(v) < 1e15:
            return f"{v:,.0f}"
        return f"{v:,.1f}" if abs(v) >= 100 else f"{v:.4g}"
    return str(v)


def _cell(v) -> str:
    v = v.item() if hasattr(v, "item") and not isinstance(v, (str, bytes)) else v
    cls = ' class="num"' if isinstance(v, (int, float)) and not isinstance(v, bool) else ""
    return f"<td{cls}>{escape(fmt(v))}</td>"


def table_html(frame: pd.DataFrame, diff_rows: bool = False) -> str:
    """A DataFrame as an HTML table (escaped); with diff_rows, rows whose values differ are marked."""
    head = "".join(f"<th>{escape(str(c))}</th>" for c in frame.columns)
    body = []
    for rec in frame.itertuples(index=False):
        vals = list(rec)
        differs = diff_rows and len({fmt(v) for v in vals[1:]}) > 1
        attr = ' class="diff"' if differs else ""
        body.append(f"<tr{attr}>" + "".join(_cell(v) for v in vals) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _pivot(frame: pd.DataFrame, key: str, value: str, names: list[str], label: str) -> pd.DataFrame:
    """Long rows (scenario, key, value) as one row per key and one column per design, in first-seen order."""
    keys = list(dict.fromkeys(frame[key]))
    cells = {(r.scenario, getattr(r, key)): getattr(r, value) for r in frame.itertuples(index=False)}
    return pd.DataFrame([[k] + [cells.get((n, k)) for n in names] for k in keys], columns=[label] + names)


def payload(report: Report) -> dict:
    """What the HTML embeds for readback: the scenarios and how the report was made."""
    return {"schema": REPORT_SCHEMA, "title": report.title, "created": report.created,
            "engine_version": report.engine_version, "seed_hash": report.seed_hash,
            "scenarios": [json.loads(s.to_json()) for s in report.scenarios]}


def _embedded_json(data: dict) -> str:
    # no '<' at all, so no '</script>' or '<!--' can end or confuse the element; JSON reads \u003c back as '<'
    return json.dumps(data, indent=1).replace("<", "\\u003c")


def _summary(report: Report, tables: dict[str, pd.DataFrame], names: list[str]) -> str:
    d = tables["designs"].set_index("scenario")
    rows = [[label] + [d.at[n, col] for n in names] for col, label in _HEADLINE.items()]
    return table_html(pd.DataFrame(rows, columns=["metric"] + names), diff_rows=len(names) > 1)


def _design_section(i: int, report: Report, tables: dict[str, pd.DataFrame]) -> str:
    d = report.designs[i]
    sc, ev = d.scenario, d.evaluation
    name = sc.name

    def rows(table: str) -> pd.DataFrame:
        t = tables[table]
        return t[t["scenario"] == name].drop(columns="scenario")

    # the Design page's headline: the verdict at the offered load, then a latency floor or saturation
    verdict = f'<span class="{"ok" if ev.stable and ev.sla.met else "bad"}">{escape(ev.headline())}</span>'

    figs = "".join(
        f'<figure><figcaption>{escape(FIGURE_TITLES[kind])}</figcaption>'
        + fig.to_html(full_html=False, include_plotlyjs=False, div_id=f"fig-{figure_id(i, d, kind)}",
                      config={"displaylogo": False}) + "</figure>"
        for kind, fig in design_figures(d).items())
    profiles = pd.DataFrame([{"partition": u.partition, "instances": u.instances, "kind": u.provenance,
                              "series": u.series, "derived from": u.reference or "", "SM ratio": u.sm_ratio,
                              "fit RMS rel. error": u.fit_rms_rel_error, "points": len(u.points),
                              "sources": "; ".join(u.sources)} for u in d.profiles])
    notes = "".join(f"<li>{escape(n)}</li>" for n in ev.notes)
    return (f'<section class="design" id="design-{i + 1}"><h2>{i + 1}. {escape(name)}</h2>'
            f'<p>{escape(sc.model)} on {escape(hardware(sc))}. {verdict} Bottleneck: {escape(ev.bottleneck)}.</p>'
            + figs
            + "<h3>Cost</h3>" + table_html(rows("cost"))
            + "<h3>Partitions and batching</h3>"
            + f"<p>Batching policy {escape(str(ev.batching.policy))}, Time_queue "
              f"{fmt(ev.batching.time_queue_ms)} ms, Batch_max from the {escape(str(ev.batching.knee_rule))}"
              " knee unless set.</p>" + table_html(rows("partitions"))
            + "<h3>Host CPU (cores)</h3>" + table_html(rows("host_cpu"))
            + "<h3>Profiles used</h3>"
            + (table_html(profiles) if len(profiles) else "<p>No GPU latency profiles (no GPU in this design).</p>")
            + "<details open><summary>Every point behind these profiles</summary>"
            + table_html(rows("provenance")[["partition", "batch", "input_len", "point_kind", "mean_ms", "source",
                                             "measured_on"]])
            + "</details>"
            + (f"<h3>Notes</h3><ul>{notes}</ul>" if notes else "")
            + "</section>")


def _papers_section(report: Report) -> str:
    """The seed papers' reproduction table as run for this report, with its chart and what was left out."""
    section = report.papers
    rows = list(section.rows)
    left_out = [what for what, ran in (("the slow entries", section.include_slow),
                                       ("the simulator's entries", section.simulate)) if not ran]
    fig = papers_figure(section)
    return ('<section class="papers" id="seed-papers"><h2>Seed papers</h2>'
            "<p>Each seed paper's headline results beside the engine's own answer, computed when this report was "
            f"made (never typed in). Within {WITHIN:.0%} of the paper counts as reproduced; in-sample means the "
            "parameters used were fitted on that figure. " + escape(summarise(rows).line()) + ".</p>"
            + (f"<p>Not run for this report: {escape(' and '.join(left_out))} (their rows say so); "
               "<code>python -m engine reproduce --simulate</code> runs every entry.</p>" if left_out else "")
            + f"<figure><figcaption>{escape(PAPERS_FIGURE_TITLE)}</figcaption>"
            + fig.to_html(full_html=False, include_plotlyjs=False, div_id=f"fig-{PAPERS_FIGURE_ID}",
                          config={"displaylogo": False}) + "</figure>"
            + table_html(papers_frame(rows)) + "</section>")


def render_html(report: Report) -> str:
    """The report as one HTML document (str)."""
    tables = report_tables(report)
    names = [s.name for s in report.scenarios]
    user = ", ".join(f"{n} {t}" for t, n in report.user_rows.items() if n)
    meta = (f"Created {escape(report.created)} · engine {escape(report.engine_version)} · seed data hash "
            f"{escape(report.seed_hash)}" + (f" · plus the user's own rows: {escape(user)}" if user else ""))
    fields = tables["inputs"]
    inputs = _pivot(fields[~fields["field"].isin(["schema", "name"])], "field", "value", names, "input")
    parts = [
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
        f"<meta name=\"generator\" content=\"Kneepoint {escape(report.engine_version)}\">",
        f"<title>{escape(report.title)}</title><style>{_CSS}</style>",
        f"<script type=\"text/javascript\">{get_plotlyjs()}</script>",
        f"<script type=\"application/json\" id=\"{PAYLOAD_ID}\">{_embedded_json(payload(report))}</script>",
        "</head><body>",
        f"<h1>{escape(report.title)}</h1><p class=\"meta\">{meta}</p>",
        "<h2>Headline metrics</h2>", _summary(report, tables, names),
        "<h2>Inputs</h2><p>Every field of each scenario (JSON values)"
        + ("; rows that differ between designs are shaded" if len(names) > 1 else "") + ".</p>",
        table_html(inputs, diff_rows=len(names) > 1),
    ]
    parts += [_design_section(i, report, tables) for i in range(len(report.designs))]
    if report.papers is not None:
        parts.append(_papers_section(report))
    parts.append("<h2>Reproduce</h2><p>The scenarios are embedded in this file: open Kneepoint's Report page and "
                 "import this file, or run <code>python -m engine report THIS.html -o NEW.html</code>. Results "
                 f"depend on the engine version ({escape(report.engine_version)}) and the seed data "
                 f"({escape(report.seed_hash)}).</p></body></html>")
    return "\n".join(parts)
