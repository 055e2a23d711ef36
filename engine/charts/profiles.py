"""Figures of the Profiles page (plotly): latency and throughput against batch size, partitions side by side."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

#: marker symbol per provenance, so measured, published and derived points are told apart
PROVENANCE_SYMBOL = {"measured": "circle", "published": "square", "derived": "diamond-open"}
TAIL_COLUMNS = (("p50_ms", "p50"), ("p90_ms", "p90"), ("p95_ms", "p95"), ("p99_ms", "p99"))
SERIES_KEYS = ["model", "sku", "partition", "precision", "framework", "input_len"]


def series_label(key: dict) -> str:
    parts = [key["model"], key["sku"], key["partition"], f"{key['framework']} {key['precision']}"]
    if pd.notna(key.get("input_len")):
        parts.append(f"len {key['input_len']:g}")
    return " / ".join(str(p) for p in parts)


KNEE_SYMBOL = {"utilization": "star", "curve": "star-triangle-up"}

#: a curve drawn on the log batch axis keeps every batch up to DENSE_UP_TO, then one batch per STEP ratio
DENSE_UP_TO, STEP = 64, 1.01


def drawn_batches(batches) -> np.ndarray:
    """Which of a curve's batch sizes (ascending integers) are drawn: every one up to DENSE_UP_TO, then the first of
    each 1 % step, and the last. The engine answers every integer batch up to the memory limit (17,654 on a
    7g.80gb slice): drawn at 1 % steps on a log axis the line is the same to the pixel, with a few hundred points a
    curve instead of thousands (1.4 MB of figure for one GPU's partitions before)."""
    b = np.asarray(batches, dtype=float)
    step = np.floor(np.log(np.maximum(b, 1.0)) / np.log(STEP))
    keep = (b <= DENSE_UP_TO) | np.r_[True, step[1:] != step[:-1]]
    keep[-1:] = True
    return keep


def latency_throughput_vs_batch(points: pd.DataFrame, tails: bool = True, log_latency: bool = False,
                                knees: pd.DataFrame | None = None) -> go.Figure:
    """Two panels: latency (mean and published tails, ms) and throughput (items/s) vs batch size.

    One colour per series (model, GPU, partition, precision, framework, input length),
    marker symbol per provenance, dotted lines for tail percentiles; log batch axis.
    """
    fig = make_subplots(rows=1, cols=2, subplot_titles=("Latency vs batch size", "Throughput vs batch size"),
                        horizontal_spacing=0.1)
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
               "#bcbd22", "#17becf"]
    grouped = points.groupby(SERIES_KEYS, dropna=False, sort=True)
    for i, (key, g) in enumerate(grouped):
        g = g.sort_values("batch")
        label = series_label(dict(zip(SERIES_KEYS, key)))
        colour = palette[i % len(palette)]
        symbols = [PROVENANCE_SYMBOL.get(k, "x") for k in g["kind"]]
        hover = g["kind"] + " | " + g["source"].str.slice(0, 80)
        fig.add_trace(go.Scatter(
            x=g["batch"], y=g["mean_ms"], mode="lines+markers", name=label, legendgroup=label,
            line=dict(color=colour), marker=dict(symbol=symbols, size=8), text=hover,
            hovertemplate="batch %{x}<br>mean %{y:.3f} ms<br>%{text}<extra>" + label + "</extra>"),
            row=1, col=1)
        if tails:
            for col, name in TAIL_COLUMNS:
                if col in g and g[col].notna().any():
                    fig.add_trace(go.Scatter(
                        x=g["batch"], y=g[col], mode="lines", name=f"{label} {name}", legendgroup=label,
                        showlegend=False, line=dict(color=colour, dash="dot", width=1),
                        hovertemplate=f"batch %{{x}}<br>{name} %{{y:.3f}} ms<extra>{label}</extra>"),
                        row=1, col=1)
        fig.add_trace(go.Scatter(
            x=g["batch"], y=g["throughput"], mode="lines+markers", name=label, legendgroup=label,
            showlegend=False, line=dict(color=colour), marker=dict(symbol=symbols, size=8),
            hovertemplate="batch %{x}<br>%{y:,.0f} items/s<extra>" + label + "</extra>"),
            row=1, col=2)
    if knees is not None and len(knees):
        for rule, g in knees.groupby("rule"):
            labels = [series_label(r) for r in g.to_dict("records")]
            fig.add_trace(go.Scatter(
                x=g["batch_knee"], y=g["time_knee_ms"], mode="markers", name=f"knee ({rule} rule)",
                marker=dict(symbol=KNEE_SYMBOL.get(rule, "star"), size=14, color="#2ca02c",
                            line=dict(width=1, color="#000")), text=labels,
                hovertemplate="Batch_knee %{x}<br>Time_knee %{y:.3f} ms<br>%{text}<extra>" + rule + " rule</extra>"),
                row=1, col=1)
    for kind, symbol in PROVENANCE_SYMBOL.items():  # legend entries for the marker symbols
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=f"marker: {kind}",
                                 marker=dict(symbol=symbol, size=8, color="#444")))
    fig.update_xaxes(type="log", title_text="batch size (items, log scale)")
    fig.update_yaxes(title_text="latency (ms" + (", log scale)" if log_latency else ")"),
                     type="log" if log_latency else "linear", row=1, col=1)
    fig.update_yaxes(title_text="throughput (items/s)", row=1, col=2)
    fig.update_layout(height=480, legend=dict(orientation="h", yanchor="top", y=-0.2, font=dict(size=10)),
                      margin=dict(t=40, l=60, r=20, b=20))
    return fig


def partition_comparison(curves: pd.DataFrame, summary: pd.DataFrame, percentile: int) -> go.Figure:
    """Every partition of one GPU: tail latency (ms) and throughput (items/s) vs batch, knees starred.

    Measured or published curves are solid with square markers; derived (slice law) and estimated curves are
    dashed, and an estimated curve carries a shaded band of its expected relative error.
    """
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1,
                        subplot_titles=(f"p{percentile} latency vs batch size", "Throughput vs batch size"))
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
               "#bcbd22", "#17becf"]
    for i, (part, g) in enumerate(curves.groupby("partition", sort=False)):
        g = g[drawn_batches(g["batch"])]
        colour = palette[i % len(palette)]
        derived = g["provenance"].iloc[0] in ("derived", "estimated")
        line = dict(color=colour, dash="dash" if derived else "solid")
        err = g["expected_rel_error"].iloc[0] if "expected_rel_error" in g else None
        if err is not None and pd.notna(err):
            for y, col, title in ((g["tail_ms"], 1, "ms"), (g["throughput"], 2, "items/s")):
                lo, hi = y * (1 - err), y * (1 + err)
                fig.add_trace(go.Scatter(x=list(g["batch"]) + list(g["batch"])[::-1], y=list(hi) + list(lo)[::-1],
                                         fill="toself", fillcolor=colour, opacity=0.15, line=dict(width=0),
                                         legendgroup=part, showlegend=False, hoverinfo="skip",
                                         name=f"{part} ±{err:.0%}"), row=1, col=col)
        name = f"{part} ({g['provenance'].iloc[0]})"
        mode = "lines" if derived else "lines+markers"
        fig.add_trace(go.Scatter(x=g["batch"], y=g["tail_ms"], mode=mode, name=name, legendgroup=part, line=line,
                                 marker=dict(symbol="square"),
                                 hovertemplate="batch %{x}<br>%{y:.3f} ms<extra>" + name + "</extra>"),
                      row=1, col=1)
        fig.add_trace(go.Scatter(x=g["batch"], y=g["throughput"], mode=mode, name=name, legendgroup=part,
                                 showlegend=False, line=line, marker=dict(symbol="square"),
                                 hovertemplate="batch %{x}<br>%{y:,.0f} items/s<extra>" + name + "</extra>"),
                      row=1, col=2)
        k = summary[summary["partition"] == part]
        if len(k):
            fig.add_trace(go.Scatter(x=k["knee_util_batch"], y=k["knee_util_ms"], mode="markers", legendgroup=part,
                                     showlegend=False, marker=dict(symbol="star", size=14, color=colour,
                                                                   line=dict(width=1, color="#000")),
                                     hovertemplate="Batch_knee %{x} (utilization rule)<br>Time_knee %{y:.3f} ms"
                                                   "<extra>" + part + "</extra>"), row=1, col=1)
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name="knee (utilization rule)",
                             marker=dict(symbol="star", size=12, color="#444")))
    fig.update_xaxes(type="log", title_text="batch size (items, log scale)")
    fig.update_yaxes(title_text=f"p{percentile} latency (ms)", row=1, col=1)
    fig.update_yaxes(title_text="throughput (items/s)", row=1, col=2)
    fig.update_layout(height=460, legend=dict(orientation="h", yanchor="top", y=-0.2, font=dict(size=10)),
                      margin=dict(t=40, l=60, r=20, b=20))
    return fig
