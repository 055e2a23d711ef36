"""Figures of the Preprocessing page (plotly): throughput as partitions activate, host cores, DPU sizing,
GPU decode and preprocessing cost per device."""

from __future__ import annotations

import math

from typing import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.charts.style import colour, log_ticks, page_layout
from engine.studies.preprocessing import DEVICE_LABEL, CostPoint, CpuCostEstimate, DecodeRow, ScalingRow

KIND_COLOUR = {"measured": "#54A24B", "published": "#4C78A8", "derived": "#B279A2"}
DEVICE_SYMBOL = {"cpu": "circle", "gpu": "square", "dpu": "diamond"}


def throughput_by_partitions(rows: Sequence[ScalingRow]) -> go.Figure:
    """Requests/s per preprocessing device as 1..n partitions serve (PREBA Figures 8, 17)."""
    fig = go.Figure()
    x = [r.active_partitions for r in rows]
    for i, (device, label) in enumerate(DEVICE_LABEL.items()):
        fig.add_trace(go.Scatter(x=x, y=[r.rps[device.value] for r in rows], mode="lines+markers", name=label,
                                 line=dict(color=colour(i), dash="dash" if i == 0 else "solid"),
                                 hovertemplate="%{x} partitions: %{y:,.0f} req/s<extra>" + label + "</extra>"))
    fig.update_xaxes(title_text="active partitions (inference servers)", dtick=1)
    fig.update_yaxes(title_text="throughput (requests/s)", rangemode="tozero")
    return page_layout(fig)


def cores_needed_chart(rows: Sequence[ScalingRow]) -> go.Figure:
    """Host cores preprocessing and the RPC path need to keep k partitions busy, the cores there are, and the
    CPU utilisation of the CPU-preprocessing design (PREBA Figures 8 right axis, 9)."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    x = [r.active_partitions for r in rows]
    fig.add_trace(go.Bar(x=x, y=[r.preprocessing_cores for r in rows], name="preprocessing cores needed",
                         marker_color=colour(1)), secondary_y=False)
    fig.add_trace(go.Bar(x=x, y=[r.rpc_cores for r in rows], name="RPC-path cores needed", marker_color=colour(0)),
                  secondary_y=False)
    fig.add_trace(go.Scatter(x=x, y=[r.available_cores for r in rows], mode="lines", name="cores available",
                             line=dict(color="#444", dash="dash")), secondary_y=False)
    fig.add_trace(go.Scatter(x=x, y=[100 * r.cpu_utilization for r in rows], mode="lines+markers",
                             name="CPU utilisation with CPU preprocessing", line=dict(color=colour(3))),
                  secondary_y=True)
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title_text="active partitions (inference servers)", dtick=1)
    fig.update_yaxes(title_text="host CPU (cores)", rangemode="tozero", secondary_y=False)
    fig.update_yaxes(title_text="CPU utilisation (%)", range=[0, 105], tickmode="linear", dtick=25, showgrid=False,
                     secondary_y=True)
    return page_layout(fig)


def dpu_sizing_chart(rows: Sequence[ScalingRow], units: int, pcie_available_gbps: float) -> go.Figure:
    """CUs and PCIe bandwidth the DPU needs to keep k partitions busy, against what is configured (PREBA 4.2)."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    x = [r.active_partitions for r in rows]
    fig.add_trace(go.Bar(x=x, y=[r.dpu_cus_needed for r in rows], name="CUs needed", marker_color=colour(2)),
                  secondary_y=False)
    fig.add_trace(go.Scatter(x=x, y=[units] * len(x), mode="lines", name=f"CUs configured ({units})",
                             line=dict(color="#444", dash="dash")), secondary_y=False)
    fig.add_trace(go.Scatter(x=x, y=[r.dpu_pcie_gbps for r in rows], mode="lines+markers",
                             name="CPU<->DPU PCIe traffic", line=dict(color=colour(5))), secondary_y=True)
    fig.add_trace(go.Scatter(x=x, y=[pcie_available_gbps] * len(x), mode="lines",
                             name=f"PCIe x16 link ({pcie_available_gbps:g} GB/s)",
                             line=dict(color=colour(5), dash="dot")), secondary_y=True)
    fig.update_xaxes(title_text="active partitions (inference servers)", dtick=1)
    fig.update_yaxes(title_text="DPU compute units (CUs)", rangemode="tozero", secondary_y=False)
    fig.update_yaxes(title_text="PCIe traffic (GB/s)", rangemode="tozero", showgrid=False, tickmode="auto",
                     secondary_y=True)
    return page_layout(fig)


def decode_chart(rows: Sequence[DecodeRow]) -> go.Figure:
    """Per kind of partition: inference alone, the decoder's rate, and both on one partition (items/s)."""
    names = [r.partition for r in rows]
    fig = go.Figure()
    for i, (label, attr) in enumerate((("inference alone (no preprocessing)", "inference_items_per_s"),
                                       ("GPU decode rate of the partition", "decode_items_per_s"),
                                       ("inference with its own decode", "items_per_s_with_decode"))):
        fig.add_trace(go.Bar(x=names, y=[getattr(r, attr) for r in rows], name=label, marker_color=colour(i),
                             hovertemplate="%{x}: %{y:,.0f} items/s<extra>" + label + "</extra>"))
    fig.update_layout(barmode="group")
    fig.update_xaxes(title_text="partition")
    fig.update_yaxes(title_text="throughput per partition (items/s)", rangemode="tozero")
    return page_layout(fig, height=360)


def preprocessing_costs_chart(points: Sequence[CostPoint], estimates: Sequence[CpuCostEstimate],
                              size: float, unit: str) -> go.Figure:
    """Cost per item of every preprocessing row of the pipeline by kind and device, and the CPU estimates at the
    design's input size from measured and from published rows."""
    fig = go.Figure()
    groups: dict[tuple[str, str], list[CostPoint]] = {}
    for p in points:
        groups.setdefault((p.kind, p.device), []).append(p)
    for (kind, device), ps in sorted(groups.items()):
        fig.add_trace(go.Scatter(
            x=[p.input_size for p in ps], y=[p.ms_per_item for p in ps], mode="markers", name=f"{kind}, {device}",
            marker=dict(color=KIND_COLOUR.get(kind, "#888"), symbol=DEVICE_SYMBOL.get(device, "x"), size=9),
            text=[f"{p.step}: {p.implementation}<br>{p.source}" for p in ps],
            hovertemplate="%{x:g} " + unit + ": %{y:.3f} ms<br>%{text}<extra></extra>"))
    for e in estimates:
        if e.found:
            fig.add_trace(go.Scatter(x=[size], y=[e.ms_per_item], mode="markers", name=f"CPU pipeline estimate "
                                     f"({e.prefer} rows)", marker=dict(symbol="star", size=16,
                                                                       color=KIND_COLOUR[e.prefer],
                                                                       line=dict(width=1, color="#222")),
                                     hovertemplate="%{y:.3f} ms per item per core<extra>" + e.basis + "</extra>"))
    # the label as an annotation of its own: on a log axis plotly reads an annotation's x as log10 of the value,
    # and add_vline's annotation_text passes the value itself (0.37 MP landed at 10^0.37 = 2.3 MP)
    fig.add_vline(x=size, line=dict(color="#888", dash="dot"))
    fig.add_annotation(x=math.log10(size), y=1, yref="paper", text=f"design: {size:g} {unit}", showarrow=False,
                       xanchor="left", yanchor="bottom")
    # 1-2-5 tick labels: plotly's default labels every minor step of a log axis (2, 3, ... 9) and crowds them
    xs = [p.input_size for p in points if p.input_size > 0] + [size]
    ys = [p.ms_per_item for p in points if p.ms_per_item > 0] + [e.ms_per_item for e in estimates if e.found]
    xt, yt = log_ticks(min(xs), max(xs)), log_ticks(min(ys), max(ys)) if ys else []
    fig.update_xaxes(title_text=f"input size ({unit}, log scale)", type="log", tickvals=xt or None,
                     ticktext=[f"{t:g}" for t in xt] or None)
    fig.update_yaxes(title_text="cost per item (ms, one core or one device; log scale)", type="log",
                     tickvals=yt or None, ticktext=[f"{t:g}" for t in yt] or None)
    return page_layout(fig, height=420)
