"""Figures of the Partitioning page (plotly): the batch-size PDF and each policy's latency-bounded throughput."""

from __future__ import annotations

import plotly.graph_objects as go

from engine.studies.partitioning import PartitioningStudy, SimRow


def batch_pdf(dist: dict[int, float], knees: dict[str, int] | None = None) -> go.Figure:
    """The batch-size distribution PARIS partitions for, with each partition's knee marked."""
    sizes = sorted(dist)
    fig = go.Figure(go.Bar(x=sizes, y=[dist[s] for s in sizes], name="share of queries", marker_color="#4C78A8",
                           hovertemplate="%{x} items: %{y:.1%}<extra></extra>"))
    top = max(dist.values(), default=0)
    for i, (name, b) in enumerate((knees or {}).items()):  # labels staggered so neighbours do not overlap
        fig.add_vline(x=b, line=dict(color="#888", dash="dot"))
        # rows a fixed number of pixels apart (a share of the y range was less than a line at some heights)
        fig.add_annotation(x=b, y=1, yref="paper", yanchor="top", yshift=-16 * (i % 3), text=f"{name} knee",
                           showarrow=False, font=dict(size=10, color="#555"), xanchor="left")
    fig.update_xaxes(title_text="query size = batch (items)")
    fig.update_yaxes(title_text="share of queries", tickformat=".0%", range=[0, top * 1.35 or 1])  # room for the labels
    fig.update_layout(height=320, showlegend=True, legend=dict(orientation="h", y=-0.3),
                      margin=dict(t=40, l=60, r=20, b=20))
    return fig


def bounded_bars(study: PartitioningStudy, sim: list[SimRow] | None = None) -> go.Figure:
    """Latency-bounded throughput per policy: analytic (FIFS) and, when simulated, FIFS and ELSA."""
    names = [r.policy for r in study.rows]
    fig = go.Figure(go.Bar(x=names, y=[r.bounded_fifs_rps for r in study.rows], name="FIFS (analytic)",
                           marker_color="#BAB0AC"))
    colors = {"fifs": "#4C78A8", "elsa": "#F58518"}
    for sched in sorted({s.scheduler for s in sim or []}):
        got = {s.policy: s.bounded_rps for s in sim if s.scheduler == sched}
        fig.add_trace(go.Bar(x=names, y=[got.get(n) for n in names], name=f"{sched.upper()} (simulated)",
                             marker_color=colors.get(sched, "#54A24B")))
    fig.update_xaxes(title_text="partitioning policy")
    fig.update_yaxes(title_text=f"latency-bounded throughput (req/s, p{study.percentile:g} <= {study.sla_ms:.2f} ms)")
    fig.update_layout(barmode="group", height=380, legend=dict(orientation="h", y=-0.25),
                      margin=dict(t=20, l=60, r=20, b=20))
    return fig
