"""Compare: pinned designs side by side, deltas against a baseline, overlaid curves; seed presets."""

import pandas as pd
import streamlit as st

from engine.studies.compare import RESULTS, DesignOutcome
from engine.charts.compare import overlaid_curves, result_bars
from engine.errors import KneepointError
from engine.scenario import load_scenario
from engine.reproduce.registry import presets
from engine.io.urlstate import decode_many, encode_many
from ui.choices import keep_choice
from ui.compute import kept_result
from ui.compare_state import compare_cached, preset_designs, simulate_cached
from ui.design_state import context
from ui.scenarios import clear_pins, current_scenario, pin, pins, sample, show_sample, unpin
from ui.tables import markdown_table
from ui.text import md
from ui.viewlink import drop_link, read_link, write_link
from ui.gate import guard_page
from ui.figures import cached_figure

guard_page()  # before anything else: the page may run without app.py (ui/gate.py)

book = context().book
st.title("Compare")
st.caption("Designs pinned on the Design page (or loaded from a seed preset), side by side: inputs, results, "
           "the change of each result against a baseline, and their latency-vs-load curves.")

PRESETS = presets()
SAMPLE_PRESET = "preba"  # what a session with nothing pinned opens on: the Design page's default question, answered

if "cmp_started" not in st.session_state:  # first run: a link's designs, else a sample if the session has none
    st.session_state["cmp_started"] = True
    if not pins():
        for design in read_link("c", lambda token: [load_scenario(item, book) for item in decode_many(token)],
                                "designs") or []:
            pin(design)
    if not pins():
        try:
            show_sample([load_scenario(d, book) for d in preset_designs(SAMPLE_PRESET)], SAMPLE_PRESET)
        except KneepointError as e:
            st.error(f"The sample preset cannot be built: {md(e)}")

c = st.columns([3, 1, 1, 1])
c[0].selectbox("Seed preset", list(PRESETS), format_func=lambda k: PRESETS[k].name, key="cmp_preset",
               help="each reproduces one seed paper's headline comparison")
if c[1].button("Load preset", key="cmp_load", help="replaces the pinned designs"):
    try:
        designs = preset_designs(st.session_state["cmp_preset"])
    except KneepointError as e:
        st.error(f"This preset cannot be built: {md(e)}")
    else:
        clear_pins()
        for d in designs:
            pin(load_scenario(d, book))
if c[2].button("Pin current design", key="cmp_pin", help="the design now on the Design page"):
    pin(current_scenario(book))
if c[3].button("Clear", key="cmp_clear"):
    clear_pins()
    drop_link("c")
st.caption(f"Preset question: {PRESETS[st.session_state['cmp_preset']].question}")
if sample() in PRESETS:
    st.info(f"Nothing of yours is pinned yet, so Compare opens on a seed preset, {md(PRESETS[sample()].name)}: "
            f"{md(PRESETS[sample()].question)} Your first pin (the Design page's 'Pin for Compare', or 'Pin current "
            "design' here) replaces these designs with your own.")

designs = pins()
if not designs:
    st.info("No designs pinned yet. Pin designs on the Design page, press 'Pin current design', or load a preset.")
    st.stop()
write_link("c", encode_many([load_scenario(design) for design in designs]))

names = [load_scenario(d).name for d in designs]  # unique: pin() numbers a repeated name
# The options are the names themselves: a browser sends a selectbox's label, and after the pins change (a preset,
# a removal) it may still send a label from the old list, which keep_choice then replaces.
c = st.columns([2, 2])
keep_choice("cmp_baseline", names, names[0])
c[0].selectbox("Baseline", names, key="cmp_baseline")


def _drop() -> None:  # a callback may reset its own widget; the page body may not
    name = st.session_state["cmp_drop"]
    if name in names:
        unpin(names.index(name))
    st.session_state["cmp_drop"] = None
    if st.session_state.get("cmp_baseline") == name:
        st.session_state["cmp_baseline"] = None  # the next run's keep_choice picks the first design


keep_choice("cmp_drop", [None, *names], None)
c[1].selectbox("Remove a design", [None, *names], key="cmp_drop", on_change=_drop,
               format_func=lambda name: "-" if name is None else name)
baseline = names.index(st.session_state["cmp_baseline"])

try:
    cmp = compare_cached(designs, baseline)
except KneepointError as e:
    st.error(f"These designs cannot be compared: {md(e)}")
    st.stop()

st.subheader("Inputs")
inputs = pd.DataFrame(cmp.inputs).set_index("design").T
st.table(markdown_table(inputs))


def _cell(value, delta, base: bool) -> str:
    if value is None:  # e.g. queries per USD of a design that meets the SLA at no load
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    text = f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    if base or delta is None:
        return text + (" (baseline)" if base else "")
    return f"{text} ({delta:+.1%})"


st.subheader("Results")
c = st.columns([1, 1, 2])
c[0].number_input("Requests per simulated probe", 2_000, 200_000, 10_000, step=2_000, key="cmp_sim_n")
c[1].number_input("Seed", 0, 2**31 - 1, 0, key="cmp_sim_seed")
sim_key = (tuple(designs), int(st.session_state["cmp_sim_n"]), int(st.session_state["cmp_sim_seed"]))
pressed = c[2].button("Simulate latency-bounded throughput", key="cmp_sim",
                      help="bisect each design's load with the discrete-event simulator (ELSA's routing, real tails)")
sim = kept_result("cmp_sim_result", sim_key, pressed, lambda: simulate_cached(designs, *sim_key[1:]),
                  "The simulation could not run")
SIM_ROW = "SLA-bounded throughput, simulated (req/s)"
rows = {}
for i, name in enumerate(cmp.names):
    outcome, delta = cmp.results[i], cmp.deltas[i]
    rows[name] = {DesignOutcome.LABELS[field]: _cell(getattr(outcome, field), delta.get(field), i == cmp.baseline)
                  for field in [*RESULTS, "bottleneck", "meets_sla"]}
    if sim:
        base_sim = sim[cmp.baseline].bounded_rps
        rows[name][SIM_ROW] = _cell(sim[i].bounded_rps, (sim[i].bounded_rps - base_sim) / base_sim if base_sim else None,
                                    i == cmp.baseline)
st.table(markdown_table(pd.DataFrame(rows)))
st.caption(f"Percentages are changes against the baseline, '{md(cmp.names[cmp.baseline])}'. Tail latency is at "
           f"each design's SLA percentile and offered load; every design's cost is priced at {md(cmp.cost_basis)}"
           + "".join(f"; {md(name)}: no queries per USD ({md(outcome.no_cost_value)})"
                     for name, outcome in zip(cmp.names, cmp.results) if outcome.no_cost_value) + "."
           + (f" Simulated: {sim[0].requests_per_probe:,} requests per probe, seed {sim[0].seed}." if sim else ""))

st.subheader("Tail latency against load")
st.plotly_chart(cached_figure(overlaid_curves, cmp), key="cmp_curves")
st.caption("Analytic curves up to each design's capacity: solid lines are the SLA percentile, dotted the mean; "
           "the dashed line is the SLA bound.")
st.subheader("Throughput, latency and cost")
st.plotly_chart(cached_figure(result_bars, cmp), key="cmp_bars")
