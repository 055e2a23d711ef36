"""Figures of the Cost page (plotly): CAPEX/OPEX, TCO over the years, energy, utilisation, device cost."""

from __future__ import annotations

import math
from typing import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.charts.style import colour, page_layout
from engine.studies.cost import DeviceCost, KwhRow, Tariff, UtilRow, YearRow


def capex_opex_chart(capex_usd: dict[str, float], opex_usd: float, years: float) -> go.Figure:
    """CAPEX by component beside energy OPEX over the period (USD)."""
    fig = go.Figure()
    for i, (k, v) in enumerate(capex_usd.items()):
        if v > 0:
            fig.add_trace(go.Bar(x=["CAPEX"], y=[v], name=f"CAPEX: {k}", marker_color=colour(i),
                                 hovertemplate="%{y:$,.0f}<extra>" + k + "</extra>"))
    fig.add_trace(go.Bar(x=[f"OPEX ({years:g} years)"], y=[opex_usd], name="OPEX: energy", marker_color=colour(4),
                         hovertemplate="%{y:$,.0f}<extra>energy</extra>"))
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title_text="cost component")
    fig.update_yaxes(title_text="cost (USD)", tickprefix="$")
    return page_layout(fig, height=380)


def tco_years_chart(rows: Sequence[YearRow]) -> go.Figure:
    """Cumulative spend over the years: purchases up front, energy as it is used (USD)."""
    x = [r.year for r in rows]
    fig = go.Figure()
    for i, k in enumerate(rows[0].capex_usd if rows else ()):
        if rows[0].capex_usd[k] > 0:
            fig.add_trace(go.Scatter(x=x, y=[r.capex_usd[k] for r in rows], name=f"CAPEX: {k}", stackgroup="tco",
                                     mode="lines", line=dict(color=colour(i))))
    fig.add_trace(go.Scatter(x=x, y=[r.energy_usd for r in rows], name="energy (OPEX)", stackgroup="tco",
                             mode="lines", line=dict(color=colour(4))))
    fig.update_xaxes(title_text="years in service")
    fig.update_yaxes(title_text="cumulative cost (USD)", tickprefix="$", rangemode="tozero")
    return page_layout(fig, height=380)


def kwh_chart(rows: Sequence[KwhRow], tariffs: Sequence[Tariff], usd_per_kwh: float) -> go.Figure:
    """Queries per dollar against the electricity price, with published tariffs marked (PREBA 6.3's OPEX term)."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[r.usd_per_kwh for r in rows], y=[r.queries_per_usd for r in rows], mode="lines",
                             name="queries per dollar", line=dict(color=colour(0))))
    fig.add_trace(go.Scatter(x=[t.usd_per_kwh for t in tariffs], y=[t.queries_per_usd for t in tariffs],
                             mode="markers", name="published tariffs (prices_power)",
                             marker=dict(color=colour(1), size=8), text=[f"{t.item}<br>{t.source}" for t in tariffs],
                             hovertemplate="%{text}<br>%{x:.4f} USD/kWh: %{y:,.0f} queries/USD<extra></extra>"))
    fig.add_vline(x=usd_per_kwh, line=dict(color="#444", dash="dash"), annotation_text=f"design {usd_per_kwh:g}")
    fig.update_xaxes(title_text="electricity price (USD/kWh)", rangemode="tozero")
    fig.update_yaxes(title_text="queries per dollar (queries/USD)", rangemode="tozero")
    return page_layout(fig, height=380)


def utilization_chart(rows: Sequence[UtilRow], current: float | None = None) -> go.Figure:
    """Queries per dollar and per joule as the design runs at a fraction of its capacity; hollow: misses the SLA."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    x = [100 * r.utilization for r in rows]
    symbols = ["circle" if r.meets_sla else "circle-open" for r in rows]
    fig.add_trace(go.Scatter(x=x, y=[r.queries_per_usd for r in rows], mode="lines+markers", name="queries per dollar",
                             marker=dict(symbol=symbols, size=8), line=dict(color=colour(0))), secondary_y=False)
    fig.add_trace(go.Scatter(x=x, y=[r.queries_per_joule for r in rows], mode="lines+markers",
                             name="queries per joule", marker=dict(symbol=symbols, size=8),
                             line=dict(color=colour(2))), secondary_y=True)
    if current is not None and math.isfinite(current):
        fig.add_vline(x=100 * current, line=dict(color="#444", dash="dash"), annotation_text="priced point")
    fig.update_xaxes(title_text="load (% of the design's capacity)", range=[0, 102])
    fig.update_yaxes(title_text="queries per dollar (queries/USD)", rangemode="tozero", secondary_y=False)
    fig.update_yaxes(title_text="queries per joule (queries/J)", rangemode="tozero", showgrid=False, tickmode="auto",
                     secondary_y=True)
    return page_layout(fig, height=400)


def device_cost_chart(rows: Sequence[DeviceCost], current: str) -> go.Figure:
    """Queries per dollar of the design with each preprocessing device (PREBA Figure 21)."""
    fig = go.Figure()
    for mine, label, bar_colour in ((True, "this design's device", colour(1)), (False, "other devices", colour(0))):
        sel = [r for r in rows if (r.device == current) == mine]
        fig.add_trace(go.Bar(x=[r.device for r in sel], y=[r.queries_per_usd for r in sel], name=label,
                             marker_color=bar_colour, hovertemplate="%{x}: %{y:,.0f} queries/USD<extra></extra>"))
    fig.update_xaxes(categoryorder="array", categoryarray=[r.device for r in rows])
    fig.update_xaxes(title_text="preprocessing device")
    fig.update_yaxes(title_text="queries per dollar (queries/USD)", rangemode="tozero")
    return page_layout(fig, height=340)
