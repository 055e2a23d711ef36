"""Figures of the Search page (plotly): every design of a search, its Pareto front and best designs marked."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from engine.search.result import SearchResult

#: (x field, y field, x title, y title) of each front's chart
AXES = {"cost-p99": ("tco_usd", "p99_ms", "TCO over the cost period (USD)", "p99 at the offered load (ms)"),
        "value-throughput": ("queries_per_usd", "sla_bounded_rps", "queries per USD",
                             "SLA-bounded throughput (requests/s)")}


def _finite(v) -> bool:
    """A plottable value: queries per USD is None for a design meeting no SLA (engine.cost.priced_rate)."""
    return v is not None and math.isfinite(v)


def front_scatter(result: SearchResult, front: str) -> go.Figure:
    """All evaluated designs (grey), the Pareto front (line) and the two best designs (stars)."""
    x, y, xt, yt = AXES[front]
    f = result.front(front)
    ok = [r for r in result.designs if r.error is None and _finite(getattr(r, x)) and _finite(getattr(r, y))]
    fig = go.Figure(go.Scatter(x=[getattr(r, x) for r in ok], y=[getattr(r, y) for r in ok], mode="markers",
                               name="designs", marker=dict(color="#BAB0AC", size=6), text=[r.label for r in ok],
                               hovertemplate="%{text}<br>%{x:,.4g}, %{y:,.4g}<extra></extra>"))
    on = [result.designs[i] for i in f.indices]
    fig.add_trace(go.Scatter(x=[getattr(r, x) for r in on], y=[getattr(r, y) for r in on], mode="lines+markers",
                             name="Pareto front", marker=dict(color="#E45756", size=9), text=[r.label for r in on],
                             hovertemplate="%{text}<br>%{x:,.4g}, %{y:,.4g}<extra></extra>"))
    for i, name, color in ((result.best_throughput, "best SLA-bounded throughput", "#4C78A8"),
                           (result.best_value, "best queries per USD", "#54A24B")):
        if i is not None:
            r = result.designs[i]
            fig.add_trace(go.Scatter(x=[getattr(r, x)], y=[getattr(r, y)], mode="markers", name=name,
                                     marker=dict(symbol="star", size=16, color=color), text=[r.label],
                                     hovertemplate="%{text}<extra></extra>"))
    fig.update_xaxes(title_text=xt)
    fig.update_yaxes(title_text=yt)
    fig.update_layout(height=420, legend=dict(orientation="h", y=-0.2), margin=dict(t=20, l=60, r=20, b=20))
    return fig
