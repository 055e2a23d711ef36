"""Plotly figures of one design: MIG slot diagram, latency vs load, latency breakdown, utilisation, host CPU."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from engine.catalog import Gpu, MigLayout

from engine.charts.style import PALETTE


def slot_diagram(gpu: Gpu, layouts: list[MigLayout | None]) -> go.Figure:
    """Each GPU's memory slots (x) with its placed MIG instances as labelled boxes; compute slices in the label."""
    fig = go.Figure()
    slots = max(gpu.memory_slots, 1)
    for g, layout in enumerate(layouts):
        y0 = len(layouts) - 1 - g
        fig.add_shape(type="rect", x0=0, x1=slots, y0=y0 + 0.1, y1=y0 + 0.9, line=dict(color="#888", dash="dot"))
        if layout is None:
            fig.add_shape(type="rect", x0=0, x1=slots, y0=y0 + 0.15, y1=y0 + 0.85, fillcolor=PALETTE[0],
                          opacity=0.8, line=dict(width=1))
            fig.add_annotation(x=slots / 2, y=y0 + 0.5, text=f"GPU{g}: whole GPU ({gpu.sm_count} SMs)",
                               showarrow=False, font=dict(color="white"))
            continue
        for i, inst in enumerate(layout.instances):
            prof = gpu.profile(inst.profile)
            fig.add_shape(type="rect", x0=inst.start, x1=inst.start + inst.size, y0=y0 + 0.15, y1=y0 + 0.85,
                          fillcolor=PALETTE[i % len(PALETTE)], opacity=0.85, line=dict(width=1, color="#222"))
            fig.add_annotation(x=inst.start + inst.size / 2, y=y0 + 0.5, showarrow=False, font=dict(color="white"),
                               text=f"{inst.profile}<br>{prof.compute_slices}c / {prof.sm_count} SMs")
    fig.add_trace(go.Scatter(x=[0, slots], y=[0, len(layouts)], mode="markers", marker=dict(opacity=0),
                             showlegend=False, hoverinfo="skip"))
    fig.update_xaxes(range=[0, slots], dtick=1, title_text=f"memory slot (0..{slots - 1}; {gpu.memory_gb:g} GB in all)")
    fig.update_yaxes(tickvals=[len(layouts) - 1 - g + 0.5 for g in range(len(layouts))],
                     ticktext=[f"GPU{g}" for g in range(len(layouts))], range=[0, len(layouts)], title_text="GPU")
    fig.update_layout(height=90 + 70 * len(layouts), margin=dict(t=20, b=40, l=60, r=20), showlegend=False)
    return fig


def latency_vs_load(rates: list[float], mean_ms: list[float], tail_ms: list[float], percentile: float,
                    sla_ms: float, rate: float | None = None, sim: list[dict] | None = None) -> go.Figure:
    """Mean and tail latency (ms) against offered load (requests/s), with the SLA bound and the chosen rate."""
    ok = [i for i, t in enumerate(tail_ms) if math.isfinite(t)]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[rates[i] for i in ok], y=[tail_ms[i] for i in ok], mode="lines",
                             name=f"p{percentile:g} (analytic)", line=dict(color="#E45756")))
    fig.add_trace(go.Scatter(x=[rates[i] for i in ok], y=[mean_ms[i] for i in ok], mode="lines",
                             name="mean (analytic)", line=dict(color="#4C78A8")))
    if sim:
        fig.add_trace(go.Scatter(x=[p["rate_rps"] for p in sim], y=[p["tail_ms"] for p in sim], mode="markers",
                                 name=f"p{percentile:g} (simulated)", marker=dict(symbol="diamond", size=9,
                                                                                  color="#E45756"),
                                 error_y=dict(type="data", array=[p.get("tail_ci_ms", 0) for p in sim])))
        fig.add_trace(go.Scatter(x=[p["rate_rps"] for p in sim], y=[p["mean_ms"] for p in sim], mode="markers",
                                 name="mean (simulated)", marker=dict(symbol="diamond", size=9, color="#4C78A8")))
    fig.add_hline(y=sla_ms, line=dict(color="#444", dash="dash"), annotation_text=f"SLA {sla_ms:g} ms",
                  annotation_position="top left")
    if rate:
        fig.add_vline(x=rate, line=dict(color="#888", dash="dot"), annotation_text="offered load",
                      annotation_position="top right")
    fig.update_xaxes(title_text="offered load (requests/s)", rangemode="tozero")
    fig.update_yaxes(title_text="latency (ms)", rangemode="tozero")
    fig.update_layout(height=420, legend=dict(orientation="h", y=-0.2), margin=dict(t=30, l=60, r=20, b=20))
    return fig


def breakdown_bar(breakdown_ms: dict[str, float], title: str = "this design") -> go.Figure:
    """Stacked horizontal bar of mean time per component (ms)."""
    fig = go.Figure()
    for i, (k, v) in enumerate(breakdown_ms.items()):
        if v > 0 and math.isfinite(v):
            fig.add_trace(go.Bar(y=[title], x=[v], name=k.replace("_", " "), orientation="h",
                                 marker_color=PALETTE[i % len(PALETTE)],
                                 hovertemplate=f"{k}: %{{x:.3f}} ms<extra></extra>"))
    fig.update_layout(barmode="stack", height=220, legend=dict(orientation="h", y=-0.5),
                      margin=dict(t=20, l=20, r=20, b=20))
    fig.update_xaxes(title_text="mean time per request (ms)")
    return fig


def utilization_bar(utilization: dict[str, float]) -> go.Figure:
    """Utilisation (0..1) of every stage and partition, 1 marked."""
    names = list(utilization)
    vals = [utilization[n] for n in names]
    fig = go.Figure(go.Bar(x=vals, y=names, orientation="h", name="utilisation",
                           marker_color=["#E45756" if v >= 1 else "#4C78A8" for v in vals],
                           hovertemplate="%{y}: %{x:.2f}<extra></extra>"))
    fig.add_vline(x=1.0, line=dict(color="#444", dash="dash"))
    fig.update_xaxes(title_text="utilisation (busy fraction)", range=[0, max(1.05, max(vals, default=1) * 1.05)])
    fig.update_layout(height=120 + 24 * len(names), margin=dict(t=20, l=20, r=20, b=40), showlegend=False)
    return fig


def host_cpu_bar(cores: dict[str, float], available: float) -> go.Figure:
    """Host CPU cores each consumer (RPC serving, kernel launch threads, preprocessing, ...) uses at the offered
    load, one labelled bar each, against the cores free for serving (dashed)."""
    names = list(cores)[::-1]  # plotly draws the first category at the bottom: keep the engine's order top-down
    vals = [cores[k] for k in names]
    fig = go.Figure(go.Bar(y=names, x=vals, orientation="h", marker_color=[PALETTE[i % len(PALETTE)]
                                                                           for i in range(len(names))][::-1],
                           text=[f"{v:,.2f} cores" for v in vals], textposition="outside", cliponaxis=False,
                           hovertemplate="%{y}: %{x:.2f} cores<extra></extra>", showlegend=False))
    top = max([available, *vals], default=1.0)
    fig.add_vline(x=available, line=dict(color="#444", dash="dash"))
    fig.add_annotation(x=available, y=1, yref="paper", text=f"{available:g} cores free for serving",
                       showarrow=False, xanchor="right", yanchor="bottom")
    fig.update_xaxes(title_text=f"cores used at the offered load (total {sum(vals):,.2f})",
                     range=[0, top * 1.18])
    fig.update_layout(height=120 + 34 * max(len(names), 1), margin=dict(t=30, l=20, r=20, b=40))
    return fig


def batch_histogram(histogram: dict[int, int], rate_rps: float) -> go.Figure:
    """Share of batches of each size (items) in a simulated run."""
    sizes = sorted(histogram)
    total = sum(histogram.values()) or 1
    fig = go.Figure(go.Bar(x=sizes, y=[histogram[s] / total for s in sizes], name=f"at {rate_rps:,.0f} req/s",
                           marker_color="#4C78A8", hovertemplate="batch %{x}: %{y:.1%} of batches<extra></extra>"))
    fig.update_xaxes(title_text="batch size (items)")
    fig.update_yaxes(title_text="share of batches", tickformat=".0%")
    fig.update_layout(height=300, showlegend=True, legend=dict(orientation="h", y=-0.3),
                      margin=dict(t=20, l=60, r=20, b=20))
    return fig
