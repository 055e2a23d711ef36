"""The Design page's charts of each design in a report (engine.charts.design), keyed for files and HTML ids."""

from __future__ import annotations

import re

import plotly.graph_objects as go

from engine.charts.design import breakdown_bar, latency_vs_load, utilization_bar
from engine.charts.papers import reproduction_chart
from engine.report.build import DesignResult, PapersSection, Report

FIGURE_KINDS = ("latency_vs_load", "breakdown", "utilization")
FIGURE_TITLES = {"latency_vs_load": "Tail latency against load", "breakdown": "Where the time goes",
                 "utilization": "Utilisation"}
PAPERS_FIGURE_ID = "seed-papers"  # the Seed papers section's chart, when the report has one
PAPERS_FIGURE_TITLE = "Seed papers: Kneepoint / paper per result"


def design_figure(d: DesignResult, kind: str) -> go.Figure:
    """One figure of one design, by kind (a key of FIGURE_TITLES)."""
    ev, c = d.evaluation, d.curve
    if kind == "latency_vs_load":
        return latency_vs_load(list(c.rates_rps), list(c.mean_ms), list(c.tail_ms), c.percentile,
                               ev.sla.latency_ms, ev.rate_rps)
    if kind == "breakdown":
        return breakdown_bar(ev.breakdown_ms, title=d.scenario.name)
    if kind == "utilization":
        return utilization_bar(ev.utilization)
    raise ValueError(f"no design figure {kind!r}; kinds: {', '.join(FIGURE_TITLES)}")


def design_figures(d: DesignResult) -> dict[str, go.Figure]:
    """The latency-vs-load curve, latency breakdown and utilisation of one design, by kind."""
    return {kind: design_figure(d, kind) for kind in FIGURE_TITLES}


def papers_figure(section: PapersSection) -> go.Figure:
    """The Papers page's chart of every computed result in the section (engine.charts.papers)."""
    return reproduction_chart(section.rows)


def slug(text: str) -> str:
    """A file- and id-safe form of a design name."""
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()[:40] or "design"


def figure_id(index: int, d: DesignResult, kind: str) -> str:
    """'01-resnet-50-on-7-x-1g-a100-latency_vs_load': unique within a report (the index), readable (the name)."""
    return f"{index + 1:02d}-{slug(d.scenario.name)}-{kind}"


def report_figures(report: Report) -> dict[str, go.Figure]:
    """Every figure of the report by figure_id, in design order, then the Seed papers chart when there is one."""
    out = {}
    for i, d in enumerate(report.designs):
        for kind, fig in design_figures(d).items():
            out[figure_id(i, d, kind)] = fig
    if report.papers is not None:
        out[PAPERS_FIGURE_ID] = papers_figure(report.papers)
    return out
