"""Look shared by every page's figures: the palette, and a layout with units-titled axes and a legend below."""

from __future__ import annotations

import math

import plotly.graph_objects as go

PALETTE = ["#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2", "#FF9DA6", "#9D755D", "#BAB0AC"]


def colour(i: int) -> str:
    """The i-th series colour, cycling through the palette."""
    return PALETTE[i % len(PALETTE)]


def wrap(text: str, width: int = 16) -> str:
    """`text` broken into lines of at most `width` characters (at spaces) for a plotly title: side-by-side panel
    titles longer than their panel run into each other."""
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "<br>".join(lines)


def log_ticks(lo: float, hi: float) -> list[float]:
    """Tick values 1-2-5 per decade from `lo` to `hi` (both > 0), for a log axis whose default labels every
    2..9 minor step and crams a short range; never fewer than the decades' own 1s."""
    if not (lo > 0 and hi > 0) or not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    ticks = [m * 10.0 ** k for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
             for m in (1, 2, 5)]
    inside = [t for t in ticks if lo <= t <= hi]
    return inside if len(inside) >= 2 else [t for t in ticks if lo / 10 <= t <= hi * 10]


def page_layout(fig: go.Figure, height: int = 400, bottom_legend: bool = True) -> go.Figure:
    """A legend even for one series (a figure pasted into a design review explains itself), below the plot."""
    fig.update_layout(height=height, showlegend=True, margin=dict(t=40, l=60, r=60, b=40),
                      legend=dict(orientation="h", yanchor="top", y=-0.22) if bottom_legend else None)
    return fig
