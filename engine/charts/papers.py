"""Figure of the Papers page (plotly): each reproduced result as Kneepoint / paper on a log axis, the +-25 % band.

Every number comes from engine.reproduce.runner's rows: a computed row (status "ok") with a positive ratio is a
point, in-sample and out-of-sample drawn differently; a row without a value (not modelled, slow or simulator
entries not run) or whose ratio a log axis cannot show keeps its line on the chart with the reason written in it,
but no point.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

import plotly.graph_objects as go

from engine.charts.style import colour, log_ticks, page_layout
from engine.reproduce.entry import IN_SAMPLE, OUT_OF_SAMPLE
from engine.reproduce.runner import WITHIN, ReproductionRow

X_TITLE = "Kneepoint / paper (ratio, log scale)"
Y_TITLE = "result (registry id)"
BAND_NAME = f"within ±{WITHIN:.0%} of the paper"
#: how each computed row is drawn, by its sample: (legend name, marker)
MARKS = {OUT_OF_SAMPLE: ("out of sample (predicted)", dict(symbol="diamond", size=11, color=colour(0))),
         IN_SAMPLE: ("in sample (fitted on that figure)",
                     dict(symbol="circle-open", size=11, color=colour(1), line=dict(width=2)))}
ROW_PX = 26  # height per result


def ratio(row: ReproductionRow) -> Optional[float]:
    """Kneepoint / paper of a computed row, or None when there is none a log axis can show (no value, a paper
    value of 0, opposite signs)."""
    if row.status != "ok" or row.kneepoint is None or not row.paper_value:
        return None
    r = row.kneepoint / row.paper_value
    return r if r > 0 and math.isfinite(r) else None


def _num(v: float) -> str:
    return f"{v:,.4g}"


def not_plotted(rows: Sequence[ReproductionRow]) -> list[tuple[str, str]]:
    """(id, why) of every row without a point: its status, or why its ratio is off a log axis."""
    out = []
    for r in rows:
        if ratio(r) is None:
            out.append((r.id, r.status if r.status != "ok" else "ratio not positive: off the log axis"))
    return out


def reproduction_chart(rows: Sequence[ReproductionRow], title: Optional[str] = None) -> go.Figure:
    """One line per result of `rows` (in their order, top down): Kneepoint / paper as a point for each computed
    row, in-sample and out-of-sample marked differently, the +-WITHIN band shaded around 1; rows without a value
    are listed on the axis with the reason in place of a point."""
    ids = [r.id for r in rows]
    fig = go.Figure()
    plotted = [(r, ratio(r)) for r in rows if ratio(r) is not None]
    for sample, (name, marker) in MARKS.items():
        mine = [(r, x) for r, x in plotted if r.sample == sample]
        if not mine:
            continue
        fig.add_trace(go.Scatter(
            x=[x for _, x in mine], y=[r.id for r, _ in mine], mode="markers", name=name, marker=marker,
            customdata=[[r.quantity, _num(r.paper_value), _num(r.kneepoint), r.unit, r.where] for r, _ in mine],
            hovertemplate="%{customdata[0]}<br>paper %{customdata[1]} %{customdata[3]}, Kneepoint "
                          "%{customdata[2]} %{customdata[3]}<br>%{customdata[4]}<br>Kneepoint / paper "
                          "%{x:.3g}<extra>" + sample + "</extra>"))
    lo_band, hi_band = 1 - WITHIN, 1 + WITHIN
    # shapes take a log axis's data values as they are (annotations would want their log10)
    fig.add_shape(type="rect", xref="x", yref="paper", x0=lo_band, x1=hi_band, y0=0, y1=1, layer="below",
                  fillcolor="rgba(84,162,75,0.18)", line=dict(width=0), name=BAND_NAME, showlegend=True)
    fig.add_shape(type="line", xref="x", yref="paper", x0=1, x1=1, y0=0, y1=1, layer="below",
                  line=dict(color="#54A24B", width=1))
    for rid, why in not_plotted(rows):
        fig.add_annotation(x=0, xref="paper", y=rid, yref="y", text=why, showarrow=False, xanchor="left",
                           xshift=4, font=dict(color="#666", size=11))
    xs = [x for _, x in plotted] + [lo_band, hi_band]
    # the axis runs from the 1-2-5 tick below the lowest ratio to the one above the highest, so that even a
    # short range shows a labelled tick on each side of 1
    near = log_ticks(min(xs) / 10, max(xs) * 10)
    lo = max(t for t in near if t <= min(xs) / 1.1)
    hi = min(t for t in near if t >= max(xs) * 1.1)
    ticks = [t for t in near if lo <= t <= hi]
    lo, hi = lo / 1.08, hi * 1.08  # room for a point or a tick label at either end
    # 1-2-5 labels: plotly's default labels every minor step of a short log range and crams them
    fig.update_xaxes(title_text=X_TITLE, type="log", range=[math.log10(lo), math.log10(hi)], tickvals=ticks or None,
                     ticktext=[f"{t:g}" for t in ticks] or None)
    fig.update_yaxes(title_text=Y_TITLE, type="category", categoryorder="array", categoryarray=ids,
                     range=[len(ids) - 0.5, -0.5], automargin=True)
    if title:
        fig.update_layout(title=dict(text=title, x=0, xanchor="left"))
    page_layout(fig, height=170 + ROW_PX * max(len(ids), 3))
    # the legend in pixels below the axis title, whatever the plot's height (page_layout's is a share of it)
    fig.update_layout(legend=dict(orientation="h", yref="container", y=0, yanchor="bottom"),
                      margin=dict(t=40 if title else 20, l=60, r=30, b=100))
    return fig
