"""Look shared by every page's figures: the palette, and a layout with units-titled axes and a legend below."""

from __future__ import annotations

import plotly.graph_objects as go

PALETTE = ["#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2", "#FF9DA6", "#9D755D", "#BAB0AC"]


def colour(i: int) -> str:
    """The i-th series colour, cycling through the palette."""
    return PALETTE[i % len(PALETTE)]


def page_layout(fig: go.Figure, height: int = 400, bottom_legend: bool = True) -> go.Figure:
    """A legend even for one series (a figure pasted into a design review explains itself), below the plot."""
    fig.update_layout(height=height, showlegend=True, margin=dict(t=40, l=60, r=60, b=40),
                      legend=dict(orientation="h", yanchor="top", y=-0.22) if bottom_legend else None)
    return fig
