"""Figures of the RPC page (plotly): E2E breakdown per preset, services, latency against load, host CPU."""

from __future__ import annotations

import math
from typing import Sequence

import plotly.graph_objects as go

from engine.charts.style import colour, log_ticks, page_layout
from engine.studies.rpc import CATEGORIES, LoadPoint, PresetRow, ServiceRow

CATEGORY_LABEL = {"gpu": "GPU (incl. orchestration)", "client_proc": "client proc", "server_proc": "server proc",
                  "network": "network", "data_movement": "data movement"}


def rpc_breakdown_chart(rows: Sequence[PresetRow]) -> go.Figure:
    """E2E split of one request per RPC preset, microseconds (SplitRPC Figure 8 categories)."""
    names = [r.preset + (" (this design)" if r.this_design else "") for r in rows]
    fig = go.Figure()
    for i, cat in enumerate(CATEGORIES):
        fig.add_trace(go.Bar(y=names, x=[r.breakdown_us[cat] for r in rows], name=CATEGORY_LABEL[cat],
                             orientation="h", marker_color=colour(i),
                             hovertemplate="%{y}: %{x:,.1f} us<extra>" + CATEGORY_LABEL[cat] + "</extra>"))
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title_text="time per request, batch 1 (us)")
    fig.update_yaxes(title_text="RPC path", autorange="reversed")
    return page_layout(fig, height=360)


def services_chart(rows: Sequence[ServiceRow]) -> go.Figure:
    """SplitRPC Table 1 services under every preset, each category as a fraction of the service's gRPC-VMA E2E."""
    x = [[r.service for r in rows], [r.preset for r in rows]]
    fig = go.Figure()
    for i, cat in enumerate(CATEGORIES):
        fig.add_trace(go.Bar(x=x, y=[r.normalised[cat] for r in rows], name=CATEGORY_LABEL[cat],
                             marker_color=colour(i), hovertemplate="%{x}: %{y:.2f}<extra>" + CATEGORY_LABEL[cat]
                             + "</extra>"))
    fig.add_hline(y=1.0, line=dict(color="#444", dash="dash"))
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title_text="service / RPC path", tickangle=-60)
    fig.update_yaxes(title_text="E2E time / gRPC-VMA E2E (fraction)")
    page_layout(fig, height=520)
    fig.update_layout(legend=dict(orientation="h", yanchor="bottom", y=1.02), margin=dict(t=60, b=40))
    return fig  # the two-level service/path axis needs the room below, so the legend goes on top


def load_curves_chart(points: Sequence[LoadPoint], sla_ms: float | None = None,
                      rate_rps: float | None = None) -> go.Figure:
    """Mean (solid) and p99 (dashed) latency against offered load, one colour per preset (SplitRPC Figure 9)."""
    fig = go.Figure()
    presets = list(dict.fromkeys(p.preset for p in points))
    for i, preset in enumerate(presets):
        ps = [p for p in points if p.preset == preset]
        x = [p.rate_rps for p in ps]
        fig.add_trace(go.Scatter(x=x, y=[p.mean_ms for p in ps], mode="lines", name=f"{preset} mean",
                                 legendgroup=preset, line=dict(color=colour(i))))
        fig.add_trace(go.Scatter(x=x, y=[p.p99_ms for p in ps], mode="lines", name=f"{preset} p99",
                                 legendgroup=preset, line=dict(color=colour(i), dash="dash")))
    if sla_ms and points:  # a trace, not add_hline: plotly places an hline's annotation wrongly on a log axis
        fig.add_trace(go.Scatter(x=[0, max(p.rate_rps for p in points)], y=[sla_ms, sla_ms], mode="lines",
                                 name=f"SLA {sla_ms:g} ms", line=dict(color="#444", dash="dot")))
    if rate_rps:
        fig.add_vline(x=rate_rps, line=dict(color="#888", dash="dot"), annotation_text="offered load")
    fig.update_xaxes(title_text="offered load (requests/s)", rangemode="tozero")
    ys = [y for p in points for y in (p.mean_ms, p.p99_ms) if y > 0 and math.isfinite(y)] + (
        [sla_ms] if sla_ms else [])
    ticks = log_ticks(min(ys), max(ys)) if ys else []
    # 1-2-5 labels: plotly's default labels every minor step of a short log range and crams them
    fig.update_yaxes(title_text="latency (ms, log scale)", type="log", tickvals=ticks or None,
                     ticktext=[f"{t:g}" for t in ticks] or None)
    return page_layout(fig, height=460)


def host_cpu_chart(rows: Sequence[PresetRow]) -> go.Figure:
    """Host CPU-microseconds one request costs per preset (critical path, launches and completion) and ARM time."""
    names = [r.preset for r in rows]
    fig = go.Figure()
    parts = (("host CPU on the critical path (SerDes, stack, copies)", "host_cpu_critical_us"),
             ("host CPU for kernel launches and the completion wait", "host_cpu_other_us"),
             ("SmartNIC ARM cores", "arm_us"))
    for i, (label, attr) in enumerate(parts):
        fig.add_trace(go.Bar(x=names, y=[getattr(r, attr) for r in rows], name=label, marker_color=colour(i),
                             hovertemplate="%{x}: %{y:,.1f} us<extra>" + label + "</extra>"))
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title_text="RPC path")
    fig.update_yaxes(title_text="CPU time per request, batch 1 (us)")
    return page_layout(fig, height=380)
