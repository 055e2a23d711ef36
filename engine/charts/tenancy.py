"""Figures of the Tenancy page (plotly): MIG tenants, latency vs GPU% with its knee, oversubscription."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.tenancy.gpu_share import GpuShareCurve, KneeGpuPct, OversubscriptionSweep
from engine.tenancy.mig import MigTenancyRow


def mig_tenants(rows: list[MigTenancyRow], batch: int) -> go.Figure:
    """Per MIG profile: one instance's mean latency (bars, left) and the whole GPU's throughput (markers, right)."""
    ok = [r for r in rows if r.mean_ms is not None]
    names = [f"{r.profile} (x{r.tenants_per_gpu})" for r in ok]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Bar(x=names, y=[r.mean_ms for r in ok], name=f"mean latency, batch {batch}",
                         marker_color="#4C78A8", hovertemplate="%{x}: %{y:.2f} ms<extra></extra>"), secondary_y=False)
    fig.add_trace(go.Scatter(x=names, y=[r.throughput_per_gpu for r in ok], name="GPU throughput, all tenants",
                             mode="markers+lines", marker=dict(size=10, color="#F58518"),
                             hovertemplate="%{x}: %{y:,.0f} items/s<extra></extra>"), secondary_y=True)
    fig.update_xaxes(title_text="MIG profile (tenants per GPU)")
    fig.update_yaxes(title_text="latency (ms)", secondary_y=False, rangemode="tozero")
    fig.update_yaxes(title_text="throughput (items/s)", secondary_y=True, rangemode="tozero")
    fig.update_layout(height=380, legend=dict(orientation="h", y=-0.3), margin=dict(t=20, l=60, r=60, b=20))
    return fig


def share_curve(curve: GpuShareCurve, knee: KneeGpuPct, deadline_ms: float | None = None) -> go.Figure:
    """Mean and tail latency of one batch against its GPU% share, the knee GPU% marked."""
    x = [p.gpu_pct for p in curve.points]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x, y=[p.tail_ms for p in curve.points], name=f"p{curve.percentile}", mode="lines",
                             line=dict(color="#E45756")))
    fig.add_trace(go.Scatter(x=x, y=[p.mean_ms for p in curve.points], name="mean", mode="lines+markers",
                             line=dict(color="#4C78A8")))
    fig.add_vline(x=knee.gpu_pct, line=dict(color="#54A24B", dash="dash"),
                  annotation_text=f"knee {knee.gpu_pct}%", annotation_position="top right")
    if deadline_ms:
        fig.add_hline(y=deadline_ms, line=dict(color="#444", dash="dot"), annotation_text=f"deadline {deadline_ms:g} ms",
                      annotation_position="top left")
    fig.update_xaxes(title_text="GPU% (MPS active-thread percentage)", range=[0, 102])
    fig.update_yaxes(title_text=f"latency of a batch of {curve.batch} (ms)", rangemode="tozero")
    fig.update_layout(height=380, legend=dict(orientation="h", y=-0.25), margin=dict(t=30, l=60, r=20, b=20))
    return fig


def oversubscription(sweep: OversubscriptionSweep) -> go.Figure:
    """Instances at one GPU% each, past 100% in total: throughput flattens while latency climbs."""
    x = [r.instances for r in sweep.rows]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Bar(x=x, y=[r.throughput_items_per_s for r in sweep.rows], name="throughput, all instances",
                         marker_color=["#E45756" if r.total_pct > 100 else "#4C78A8" for r in sweep.rows],
                         hovertemplate="%{x} instances: %{y:,.0f} items/s<extra></extra>"), secondary_y=False)
    fig.add_trace(go.Scatter(x=x, y=[r.latency_ms for r in sweep.rows], name="mean latency per instance",
                             mode="lines+markers", line=dict(color="#F58518")), secondary_y=True)
    fig.update_xaxes(title_text=f"instances at {sweep.gpu_pct_each}% each (red: above 100% in total)", dtick=1)
    fig.update_yaxes(title_text="throughput (items/s)", secondary_y=False, rangemode="tozero")
    fig.update_yaxes(title_text="latency (ms)", secondary_y=True, rangemode="tozero")
    fig.update_layout(height=360, legend=dict(orientation="h", y=-0.3), margin=dict(t=20, l=60, r=60, b=20))
    return fig


def fpga_threads(table) -> go.Figure:
    """EIF: tenants per board and the per-request slowdown as hardware threads per accelerator grow."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    x = table["threads_per_accelerator"].tolist()
    fig.add_trace(go.Bar(x=x, y=table["throughput_rps"].tolist(), name="board throughput, all tenants",
                         marker_color="#4C78A8", hovertemplate="%{x} threads: %{y:,.0f} req/s<extra></extra>"),
                  secondary_y=False)
    fig.add_trace(go.Scatter(x=x, y=(table["slowdown"] * 100).tolist(), name="slowdown per request",
                             mode="lines+markers", line=dict(color="#E45756"),
                             hovertemplate="%{x} threads: +%{y:.1f}%<extra></extra>"), secondary_y=True)
    fig.update_xaxes(title_text="hardware threads per accelerator (tenants = boards x accelerators x threads)",
                     dtick=1)
    fig.update_yaxes(title_text="throughput (requests/s)", secondary_y=False, rangemode="tozero")
    fig.update_yaxes(title_text="slowdown (%)", secondary_y=True, rangemode="tozero")
    fig.update_layout(height=360, legend=dict(orientation="h", y=-0.3), margin=dict(t=20, l=60, r=60, b=20))
    return fig


def cold_start(table) -> go.Figure:
    """Cold start and compute time of a request that finds its model unloaded, per backend."""
    fig = go.Figure()
    names = [f"{p} ({l})" for p, l in zip(table["platform"], table["loading"])]
    fig.add_trace(go.Bar(y=names, x=table["cold_start_ms"].tolist(), name="cold start", orientation="h",
                         marker_color="#E45756"))
    fig.add_trace(go.Bar(y=names, x=table["compute_ms"].tolist(), name="compute", orientation="h",
                         marker_color="#4C78A8"))
    fig.update_xaxes(title_text="time of one cold request (ms)")
    fig.update_yaxes(title_text="backend (model loading)")
    fig.update_layout(barmode="stack", height=260, legend=dict(orientation="h", y=-0.4),
                      margin=dict(t=20, l=60, r=20, b=20))
    return fig
