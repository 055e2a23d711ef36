"""Cost: what a design costs over its life (CAPEX, energy), per query and per joule, and what moves it."""

import streamlit as st

from engine.errors import KneepointError
from engine.charts.cost import capex_opex_chart, device_cost_chart, kwh_chart, tco_years_chart, utilization_chart
from engine.scenario import CostSpec
from engine.studies.cost import PRICE_FIELDS
from ui.design_state import context
from ui.fields import field_range
from ui.page_state import cost_cached, defaults_cached, publish, reset, start, validate
from ui.text import md
from ui.tables import show as show_table
from ui.gate import guard_page
from ui.figures import cached_figure

guard_page()  # before anything else: the page may run without app.py (ui/gate.py)

PRICE_LABEL = {"gpu_price_usd": "GPU price (USD each)", "server_price_usd": "Server price (USD each, no GPUs)",
               "dpu_price_usd": "DPU card price (USD each)", "nic_price_usd": "NIC price (USD each)"}
book = context().book
st.title("Cost")
st.caption("PREBA's cost model for a design: purchase (CAPEX) and energy (OPEX) over its life, queries per dollar "
           "and per joule at the throughput it sustains, and how they move with the electricity price and the load.")


def to_widgets(s) -> dict:
    defaults = defaults_cached(s)
    prices = {f"cost_{f}": float(getattr(s.cost, f) if getattr(s.cost, f) is not None else defaults[f].value)
              for f in PRICE_FIELDS}
    return {"cost_years": s.cost.years, "cost_kwh": s.cost.usd_per_kwh, "cost_pue": s.cost.pue, **prices}


def from_widgets(base, w: dict, defaults: dict) -> dict:
    data = base.model_dump(mode="json", by_alias=True)
    data["cost"].update(years=float(w["cost_years"]), usd_per_kwh=float(w["cost_kwh"]), pue=float(w["cost_pue"]))
    for f in PRICE_FIELDS:  # a default stays a default, so its source keeps applying (and the link stays short)
        v = float(w[f"cost_{f}"])
        data["cost"][f] = None if v == defaults[f].value else v
    return data


base = start("cost", book, to_widgets, marker="cost_years")
if getattr(base, "gpu", None) is None:
    st.info("This page is about GPU inference servers; the current design has no GPUs. Pick a GPU design on the "
            "Design page to see its cost.")
    st.stop()

defaults = defaults_cached(base)
top = st.columns([4, 1])
top[0].caption(f"Starting from '{md(base.name)}': {base.gpu.count} x {base.gpu.sku}, preprocessing on "
               f"{base.preprocessing.device.value}, RPC path {base.rpc.preset.value}.")
top[1].button("Reset", key="cost_reset", on_click=reset, args=("cost", book, to_widgets),
              help="back to the Design page's current design and the default prices")
cols = st.columns(3)
cols[0].number_input("Years in service", *field_range(CostSpec, "years", low=0.0), key="cost_years",
                     help=defaults["years"].label())
cols[1].number_input("Electricity (USD/kWh)", *field_range(CostSpec, "usd_per_kwh"), key="cost_kwh", format="%.4f",
                  help=defaults["usd_per_kwh"].label())
cols[2].number_input("PUE (wall power / IT power)", *field_range(CostSpec, "pue", low=0.0), key="cost_pue",
                  help="1 = no cooling overhead (PREBA states none); 1.5 is a typical data centre")
cols = st.columns(len(PRICE_FIELDS))
for col, field in zip(cols, PRICE_FIELDS):
    col.number_input(PRICE_LABEL[field], *field_range(CostSpec, field), key=f"cost_{field}", step=100.0,
                     help=defaults[field].label())

scenario = validate(from_widgets(base, dict(st.session_state), defaults), book)
if scenario is None:
    st.stop()
publish(scenario)
try:
    view = cost_cached(scenario)
except KneepointError as e:
    st.error(f"This design cannot be answered: {md(e)}")
    st.stop()

r = view.result
m = st.columns(3) + st.columns(3)
m[0].metric(f"TCO ({view.inputs.years:g} years)", f"${r.tco_usd:,.0f}")
m[1].metric("CAPEX", f"${r.capex_usd:,.0f}")
m[2].metric("OPEX (energy)", f"${r.opex_usd:,.0f}", help=f"{r.energy_kwh:,.0f} kWh at the wall")
none = f"; none: {view.no_value_reason}" if view.no_value_reason else ""
m[3].metric("Queries per dollar", "—" if view.queries_per_usd is None else f"{view.queries_per_usd:,.0f}",
            help="PREBA's cost-efficiency: throughput x time / TCO" + none)
m[4].metric("Queries per joule", "—" if view.queries_per_joule is None else f"{view.queries_per_joule:,.2f}",
            help="throughput / wall power" + none)
m[5].metric("Wall power", f"{r.wall_power_w:,.0f} W", help=f"IT power {r.it_power_w:,.0f} W x PUE")
st.caption(f"Priced at {view.basis}: {view.throughput_rps:,.0f} requests/s of a {view.capacity_rps:,.0f} requests/s "
           f"capacity" + (f" ({view.no_value_reason}: no queries per dollar)." if view.no_value_reason else "."))

cols = st.columns(2)
with cols[0]:
    st.subheader("CAPEX and OPEX")
    st.plotly_chart(cached_figure(capex_opex_chart,
                                  r.capex_breakdown_usd, r.opex_usd, view.inputs.years), key="cost_split")
    st.caption("Purchases by component beside the energy bill over the period. Power: "
               + ", ".join(f"{k} {v:,.0f} W" for k, v in r.power_breakdown_w.items() if v > 0) + " (IT).")
with cols[1]:
    st.subheader("TCO over the years")
    st.plotly_chart(cached_figure(tco_years_chart, view.years), key="cost_years_chart")
    st.caption(f"Cumulative spend: purchases at year 0, energy as it is used; ${view.years[-1].total_usd:,.0f} "
               f"after {view.years[-1].year:g} years.")

cols = st.columns(2)
with cols[0]:
    st.subheader("Electricity price")
    st.plotly_chart(cached_figure(kwh_chart, view.kwh, view.tariffs, view.inputs.usd_per_kwh), key="cost_kwh_chart")
    st.caption(f"Queries per dollar from free power to {view.kwh[-1].usd_per_kwh:.3f} USD/kWh; dots are the "
               f"{len(view.tariffs)} published tariffs in the profile store (hover for the source).")
with cols[1]:
    st.subheader("Utilisation")
    st.plotly_chart(cached_figure(utilization_chart, view.utilization, view.priced_utilization), key="cost_util_chart")
    ok = [u for u in view.utilization if u.meets_sla]
    st.caption("The design run at a fraction of its capacity: idle power and purchases are paid regardless, so "
               "cost per query falls as load rises. Hollow markers miss the SLA"
               + (f"; up to {100 * ok[-1].utilization:.0f}% meets it." if ok else "; no load here meets it."))

if view.devices:
    st.subheader("The same design with each preprocessing device")
    st.plotly_chart(cached_figure(device_cost_chart,
                                  view.devices, scenario.preprocessing.device.value), key="cost_devices")
    st.caption("PREBA Figure 21: queries per dollar with CPU, DPU, GPU-decode and no preprocessing, each priced at "
               "its own SLA-bounded throughput (else the offered load).")
    show_table([{"device": d.device, "throughput (req/s)": d.throughput_rps, "TCO (USD)": d.tco_usd,
                   "wall power (W)": d.wall_power_w, "queries per dollar": d.queries_per_usd,
                   "queries per joule": d.queries_per_joule} for d in view.devices], key="cost_device_table")

with st.expander("Every default and its source"):
    show_table([{"input": k, "default": d.value, "unit": d.unit, "assumption": d.assumed, "source": d.source}
                  for k, d in view.defaults.items()], key="cost_defaults")
    for note in view.notes:
        st.markdown(f"- {md(note)}")
