"""Figures of the Compare page: overlaid latency-vs-load curves and grouped result bars (plotly)."""

from __future__ import annotations

import math

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.studies.compare import CompareStudy, DesignOutcome

from engine.charts.style import PALETTE, wrap
#: the results drawn as bars (DesignOutcome fields), each with its axis unit
BARS = {"sla_bounded_rps": "requests/s", "tail_at_rate_ms": "ms", "tco_usd": "USD",
        "queries_per_usd": "queries/USD", "queries_per_joule": "queries/J"}


def overlaid_curves(c: CompareStudy) -> go.Figure:
    """Every design's tail (solid) and mean (dotted) latency against load, with each distinct SLA bound."""
    fig = go.Figure()
    for i, cur in enumerate(c.curves):
        color = PALETTE[i % len(PALETTE)]
        ok = [k for k, t in enumerate(cur.tail_ms) if math.isfinite(t)]
        fig.add_trace(go.Scatter(x=[cur.rates_rps[k] for k in ok], y=[cur.tail_ms[k] for k in ok], mode="lines",
                                 name=f"{cur.name}: p{c.percentile[i]:g}", line=dict(color=color)))
        fig.add_trace(go.Scatter(x=[cur.rates_rps[k] for k in ok], y=[cur.mean_ms[k] for k in ok], mode="lines",
                                 name=f"{cur.name}: mean", line=dict(color=color, dash="dot")))
    for sla in sorted(set(c.sla_ms)):
        fig.add_hline(y=sla, line=dict(color="#444", dash="dash"), annotation_text=f"SLA {sla:g} ms",
                      annotation_position="top left")
    fig.update_xaxes(title_text="offered load (requests/s)", rangemode="tozero")
    fig.update_yaxes(title_text="latency (ms)", rangemode="tozero")
    fig.update_layout(height=460, legend=dict(orientation="h", y=-0.2), margin=dict(t=30, l=60, r=20, b=20))
    return fig


def result_bars(c: CompareStudy) -> go.Figure:
    """One panel per result (units in the panel titles), one bar per design."""
    labels = [DesignOutcome.LABELS[field] for field in BARS]
    # each title wrapped to its panel's width, units on it (so no y-axis title sits between two panels)
    fig = make_subplots(rows=1, cols=len(BARS), horizontal_spacing=0.06,
                        subplot_titles=[wrap(label, 16) for label in labels])
    for i, name in enumerate(c.names):
        for j, (field, label) in enumerate(zip(BARS, labels)):
            value = getattr(c.results[i], field)
            shown = value if value is not None and math.isfinite(value) else None
            fig.add_trace(go.Bar(x=[name], y=[shown], name=name, legendgroup=name,
                                 showlegend=j == 0, marker_color=PALETTE[i % len(PALETTE)],
                                 hovertemplate=f"{name}<br>{label}: %{{y:,.4g}}<extra></extra>"),
                          row=1, col=j + 1)
    fig.update_xaxes(showticklabels=False)  # the legend names the designs
    fig.update_yaxes(tickformat="~s")
    fig.update_layout(height=400, barmode="group", legend=dict(orientation="h", y=-0.08),
                      margin=dict(t=80, l=40, r=20, b=20))
    return fig
