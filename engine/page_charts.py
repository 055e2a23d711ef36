"""Plotly figures of the Preprocessing, RPC and Cost pages (engine.views results in, figures out).

Every figure titles its axes with units and shows a legend, even for one series, so a figure pasted into a
design review explains itself.
"""

from __future__ import annotations

import math
from typing import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.design_charts import PALETTE
from engine.views.cost import DeviceCost, KwhRow, Tariff, UtilRow, YearRow
from engine.views.preprocessing import DEVICE_LABEL, CostPoint, CpuCostEstimate, DecodeRow, ScalingRow
from engine.views.rpc import CATEGORIES, LoadPoint, PresetRow, ServiceRow

CATEGORY_LABEL = {"gpu": "GPU (incl. orchestration)", "client_proc": "client proc", "server_proc": "server proc",
                  "network": "network", "data_movement": "data movement"}
KIND_COLOUR = {"measured": "#54A24B", "published": "#4C78A8", "derived": "#B279A2"}
DEVICE_SYMBOL = {"cpu": "circle", "gpu": "square", "dpu": "diamond"}


def _layout(fig: go.Figure, height: int = 400, bottom_legend: bool = True) -> go.Figure:
    fig.update_layout(height=height, showlegend=True, margin=dict(t=40, l=60, r=60, b=40),
                      legend=dict(orientation="h", yanchor="top", y=-0.22) if bottom_legend else None)
    return fig


def _colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


# --------------------------------------------------------------------------- preprocessing

def throughput_by_partitions(rows: Sequence[ScalingRow]) -> go.Figure:
    """Requests/s per preprocessing device as 1..n partitions serve (PREBA Figures 8, 17)."""
    fig = go.Figure()
    x = [r.active_partitions for r in rows]
    for i, (device, label) in enumerate(DEVICE_LABEL.items()):
        fig.add_trace(go.Scatter(x=x, y=[r.rps[device.value] for r in rows], mode="lines+markers", name=label,
                                 line=dict(color=_colour(i), dash="dash" if i == 0 else "solid"),
                                 hovertemplate="%{x} partitions: %{y:,.0f} req/s<extra>" + label + "</extra>"))
    fig.update_xaxes(title_text="active partitions (inference servers)", dtick=1)
    fig.update_yaxes(title_text="throughput (requests/s)", rangemode="tozero")
    return _layout(fig)


def cores_needed_chart(rows: Sequence[ScalingRow]) -> go.Figure:
    """Host cores preprocessing and the RPC path need to keep k partitions busy, the cores there are, and the
    CPU utilisation of the CPU-preprocessing design (PREBA Figures 8 right axis, 9)."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    x = [r.active_partitions for r in rows]
    fig.add_trace(go.Bar(x=x, y=[r.preprocessing_cores for r in rows], name="preprocessing cores needed",
                         marker_color=_colour(1)), secondary_y=False)
    fig.add_trace(go.Bar(x=x, y=[r.rpc_cores for r in rows], name="RPC-path cores needed", marker_color=_colour(0)),
                  secondary_y=False)
    fig.add_trace(go.Scatter(x=x, y=[r.available_cores for r in rows], mode="lines", name="cores available",
                             line=dict(color="#444", dash="dash")), secondary_y=False)
    fig.add_trace(go.Scatter(x=x, y=[100 * r.cpu_utilization for r in rows], mode="lines+markers",
                             name="CPU utilisation with CPU preprocessing", line=dict(color=_colour(3))),
                  secondary_y=True)
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title_text="active partitions (inference servers)", dtick=1)
    fig.update_yaxes(title_text="host CPU (cores)", rangemode="tozero", secondary_y=False)
    fig.update_yaxes(title_text="CPU utilisation (%)", range=[0, 105], tickmode="linear", dtick=25, showgrid=False,
                     secondary_y=True)
    return _layout(fig)


def dpu_sizing_chart(rows: Sequence[ScalingRow], units: int, pcie_available_gbps: float) -> go.Figure:
    """CUs and PCIe bandwidth the DPU needs to keep k partitions busy, against what is configured (PREBA 4.2)."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    x = [r.active_partitions for r in rows]
    fig.add_trace(go.Bar(x=x, y=[r.dpu_cus_needed for r in rows], name="CUs needed", marker_color=_colour(2)),
                  secondary_y=False)
    fig.add_trace(go.Scatter(x=x, y=[units] * len(x), mode="lines", name=f"CUs configured ({units})",
                             line=dict(color="#444", dash="dash")), secondary_y=False)
    fig.add_trace(go.Scatter(x=x, y=[r.dpu_pcie_gbps for r in rows], mode="lines+markers",
                             name="CPU<->DPU PCIe traffic", line=dict(color=_colour(5))), secondary_y=True)
    fig.add_trace(go.Scatter(x=x, y=[pcie_available_gbps] * len(x), mode="lines",
                             name=f"PCIe x16 link ({pcie_available_gbps:g} GB/s)",
                             line=dict(color=_colour(5), dash="dot")), secondary_y=True)
    fig.update_xaxes(title_text="active partitions (inference servers)", dtick=1)
    fig.update_yaxes(title_text="DPU compute units (CUs)", rangemode="tozero", secondary_y=False)
    fig.update_yaxes(title_text="PCIe traffic (GB/s)", rangemode="tozero", showgrid=False, tickmode="auto",
                     secondary_y=True)
    return _layout(fig)


def decode_chart(rows: Sequence[DecodeRow]) -> go.Figure:
    """Per kind of partition: inference alone, the decoder's rate, and both on one partition (items/s)."""
    names = [r.partition for r in rows]
    fig = go.Figure()
    for i, (label, attr) in enumerate((("inference alone (no preprocessing)", "inference_items_per_s"),
                                       ("GPU decode rate of the partition", "decode_items_per_s"),
                                       ("inference with its own decode", "items_per_s_with_decode"))):
        fig.add_trace(go.Bar(x=names, y=[getattr(r, attr) for r in rows], name=label, marker_color=_colour(i),
                             hovertemplate="%{x}: %{y:,.0f} items/s<extra>" + label + "</extra>"))
    fig.update_layout(barmode="group")
    fig.update_xaxes(title_text="partition")
    fig.update_yaxes(title_text="throughput per partition (items/s)", rangemode="tozero")
    return _layout(fig, height=360)


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
    fig.add_vline(x=size, line=dict(color="#888", dash="dot"), annotation_text=f"design: {size:g} {unit}")
    fig.update_xaxes(title_text=f"input size ({unit})", type="log")
    fig.update_yaxes(title_text="cost per item (ms, one core or one device)", type="log")
    return _layout(fig, height=420)


# --------------------------------------------------------------------------- RPC

def rpc_breakdown_chart(rows: Sequence[PresetRow]) -> go.Figure:
    """E2E split of one request per RPC preset, microseconds (SplitRPC Figure 8 categories)."""
    names = [r.preset + (" (this design)" if r.this_design else "") for r in rows]
    fig = go.Figure()
    for i, cat in enumerate(CATEGORIES):
        fig.add_trace(go.Bar(y=names, x=[r.breakdown_us[cat] for r in rows], name=CATEGORY_LABEL[cat],
                             orientation="h", marker_color=_colour(i),
                             hovertemplate="%{y}: %{x:,.1f} us<extra>" + CATEGORY_LABEL[cat] + "</extra>"))
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title_text="time per request, batch 1 (us)")
    fig.update_yaxes(title_text="RPC path", autorange="reversed")
    return _layout(fig, height=360)


def services_chart(rows: Sequence[ServiceRow]) -> go.Figure:
    """SplitRPC Table 1 services under every preset, each category as a fraction of the service's gRPC-VMA E2E."""
    x = [[r.service for r in rows], [r.preset for r in rows]]
    fig = go.Figure()
    for i, cat in enumerate(CATEGORIES):
        fig.add_trace(go.Bar(x=x, y=[r.normalised[cat] for r in rows], name=CATEGORY_LABEL[cat],
                             marker_color=_colour(i), hovertemplate="%{x}: %{y:.2f}<extra>" + CATEGORY_LABEL[cat]
                             + "</extra>"))
    fig.add_hline(y=1.0, line=dict(color="#444", dash="dash"))
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title_text="service / RPC path", tickangle=-60)
    fig.update_yaxes(title_text="E2E time / gRPC-VMA E2E (fraction)")
    _layout(fig, height=520)
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
                                 legendgroup=preset, line=dict(color=_colour(i))))
        fig.add_trace(go.Scatter(x=x, y=[p.p99_ms for p in ps], mode="lines", name=f"{preset} p99",
                                 legendgroup=preset, line=dict(color=_colour(i), dash="dash")))
    if sla_ms and points:  # a trace, not add_hline: plotly places an hline's annotation wrongly on a log axis
        fig.add_trace(go.Scatter(x=[0, max(p.rate_rps for p in points)], y=[sla_ms, sla_ms], mode="lines",
                                 name=f"SLA {sla_ms:g} ms", line=dict(color="#444", dash="dot")))
    if rate_rps:
        fig.add_vline(x=rate_rps, line=dict(color="#888", dash="dot"), annotation_text="offered load")
    fig.update_xaxes(title_text="offered load (requests/s)", rangemode="tozero")
    fig.update_yaxes(title_text="latency (ms)", type="log")
    return _layout(fig, height=460)


def host_cpu_chart(rows: Sequence[PresetRow]) -> go.Figure:
    """Host CPU-microseconds one request costs per preset (critical path, launches and completion) and ARM time."""
    names = [r.preset for r in rows]
    fig = go.Figure()
    parts = (("host CPU on the critical path (SerDes, stack, copies)", "host_cpu_critical_us"),
             ("host CPU for kernel launches and the completion wait", "host_cpu_other_us"),
             ("SmartNIC ARM cores", "arm_us"))
    for i, (label, attr) in enumerate(parts):
        fig.add_trace(go.Bar(x=names, y=[getattr(r, attr) for r in rows], name=label, marker_color=_colour(i),
                             hovertemplate="%{x}: %{y:,.1f} us<extra>" + label + "</extra>"))
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title_text="RPC path")
    fig.update_yaxes(title_text="CPU time per request, batch 1 (us)")
    return _layout(fig, height=380)


# --------------------------------------------------------------------------- cost

def capex_opex_chart(capex_usd: dict[str, float], opex_usd: float, years: float) -> go.Figure:
    """CAPEX by component beside energy OPEX over the period (USD)."""
    fig = go.Figure()
    for i, (k, v) in enumerate(capex_usd.items()):
        if v > 0:
            fig.add_trace(go.Bar(x=["CAPEX"], y=[v], name=f"CAPEX: {k}", marker_color=_colour(i),
                                 hovertemplate="%{y:$,.0f}<extra>" + k + "</extra>"))
    fig.add_trace(go.Bar(x=[f"OPEX ({years:g} years)"], y=[opex_usd], name="OPEX: energy", marker_color=_colour(4),
                         hovertemplate="%{y:$,.0f}<extra>energy</extra>"))
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title_text="cost component")
    fig.update_yaxes(title_text="cost (USD)", tickprefix="$")
    return _layout(fig, height=380)


def tco_years_chart(rows: Sequence[YearRow]) -> go.Figure:
    """Cumulative spend over the years: purchases up front, energy as it is used (USD)."""
    x = [r.year for r in rows]
    fig = go.Figure()
    for i, k in enumerate(rows[0].capex_usd if rows else ()):
        if rows[0].capex_usd[k] > 0:
            fig.add_trace(go.Scatter(x=x, y=[r.capex_usd[k] for r in rows], name=f"CAPEX: {k}", stackgroup="tco",
                                     mode="lines", line=dict(color=_colour(i))))
    fig.add_trace(go.Scatter(x=x, y=[r.energy_usd for r in rows], name="energy (OPEX)", stackgroup="tco",
                             mode="lines", line=dict(color=_colour(4))))
    fig.update_xaxes(title_text="years in service")
    fig.update_yaxes(title_text="cumulative cost (USD)", tickprefix="$", rangemode="tozero")
    return _layout(fig, height=380)


def kwh_chart(rows: Sequence[KwhRow], tariffs: Sequence[Tariff], usd_per_kwh: float) -> go.Figure:
    """Queries per dollar against the electricity price, with published tariffs marked (PREBA 6.3's OPEX term)."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[r.usd_per_kwh for r in rows], y=[r.queries_per_usd for r in rows], mode="lines",
                             name="queries per dollar", line=dict(color=_colour(0))))
    fig.add_trace(go.Scatter(x=[t.usd_per_kwh for t in tariffs], y=[t.queries_per_usd for t in tariffs],
                             mode="markers", name="published tariffs (prices_power)",
                             marker=dict(color=_colour(1), size=8), text=[f"{t.item}<br>{t.source}" for t in tariffs],
                             hovertemplate="%{text}<br>%{x:.4f} USD/kWh: %{y:,.0f} queries/USD<extra></extra>"))
    fig.add_vline(x=usd_per_kwh, line=dict(color="#444", dash="dash"), annotation_text=f"design {usd_per_kwh:g}")
    fig.update_xaxes(title_text="electricity price (USD/kWh)", rangemode="tozero")
    fig.update_yaxes(title_text="queries per dollar (queries/USD)", rangemode="tozero")
    return _layout(fig, height=380)


def utilization_chart(rows: Sequence[UtilRow], current: float | None = None) -> go.Figure:
    """Queries per dollar and per joule as the design runs at a fraction of its capacity; hollow: misses the SLA."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    x = [100 * r.utilization for r in rows]
    symbols = ["circle" if r.meets_sla else "circle-open" for r in rows]
    fig.add_trace(go.Scatter(x=x, y=[r.queries_per_usd for r in rows], mode="lines+markers", name="queries per dollar",
                             marker=dict(symbol=symbols, size=8), line=dict(color=_colour(0))), secondary_y=False)
    fig.add_trace(go.Scatter(x=x, y=[r.queries_per_joule for r in rows], mode="lines+markers",
                             name="queries per joule", marker=dict(symbol=symbols, size=8),
                             line=dict(color=_colour(2))), secondary_y=True)
    if current is not None and math.isfinite(current):
        fig.add_vline(x=100 * current, line=dict(color="#444", dash="dash"), annotation_text="priced point")
    fig.update_xaxes(title_text="load (% of the design's capacity)", range=[0, 102])
    fig.update_yaxes(title_text="queries per dollar (queries/USD)", rangemode="tozero", secondary_y=False)
    fig.update_yaxes(title_text="queries per joule (queries/J)", rangemode="tozero", showgrid=False, tickmode="auto",
                     secondary_y=True)
    return _layout(fig, height=400)


def device_cost_chart(rows: Sequence[DeviceCost], current: str) -> go.Figure:
    """Queries per dollar of the design with each preprocessing device (PREBA Figure 21)."""
    fig = go.Figure()
    for mine, label, colour in ((True, "this design's device", _colour(1)), (False, "other devices", _colour(0))):
        sel = [r for r in rows if (r.device == current) == mine]
        fig.add_trace(go.Bar(x=[r.device for r in sel], y=[r.queries_per_usd for r in sel], name=label,
                             marker_color=colour, hovertemplate="%{x}: %{y:,.0f} queries/USD<extra></extra>"))
    fig.update_xaxes(categoryorder="array", categoryarray=[r.device for r in rows])
    fig.update_xaxes(title_text="preprocessing device")
    fig.update_yaxes(title_text="queries per dollar (queries/USD)", rangemode="tozero")
    return _layout(fig, height=340)
