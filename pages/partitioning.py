"""Partitioning: PARIS against homogeneous and random MIG partitions, packed into valid layouts."""

import pandas as pd
import streamlit as st

from engine.catalog import validate_layout
from engine.charts.design import slot_diagram
from engine.errors import KneepointError
from engine.studies.partitioning import (SEED_GPCS, SEED_GPUS, SEED_PERCENTILE, SEED_QUERY_SIZE, seed_like_scenario,
                                         verdict)
from engine.charts.partitioning import batch_pdf, bounded_bars
from engine.scenario import load_scenario
from ui.compute import kept_result
from ui.design_form import pairs
from ui.partition_state import sim_cached, study_cached
from ui.scenarios import current_scenario
from ui.session import get_book
from ui.text import md
from ui.viewlink import PageView
from ui.tables import show as show_table
from ui.gate import guard_page
from ui.figures import cached_figure

guard_page()  # before anything else: the page may run without app.py (ui/gate.py)

book = get_book()
st.title("Partitioning")
st.caption("PARIS (Algorithm 1) sizes heterogeneous MIG partitions to the batch-size distribution; here it is "
           "packed into valid layouts and rated against every homogeneous size, the best of them (GPU(max)) and "
           "a random heterogeneous partition. Set-up as in the PARIS/ELSA seed: each query runs at its own size. "
           "It opens on the seed's own case: four A100s with the same 24 GPCs for every design, query sizes log-normal "
           "on 1..32 (a wide spread, where heterogeneity pays), p95 within 1.5 x GPU(7) at batch 32.")

MIG_GPUS = [s for s in book.catalog.skus if book.catalog.gpu(s).mig_capable]
KEYS = ("par_model", "par_gpu", "par_count", "par_gpcs", "par_dist", "par_mu", "par_sigma", "par_max", "par_table",
        "par_sla", "par_pct", "par_seed", "par_alpha", "par_n")


def _defaults() -> dict:
    """The seed's case (engine.studies.partitioning.SEED_*) for the current design's model and MIG GPU."""
    s = current_scenario(book)
    sku = s.gpu.sku if s.gpu is not None and s.gpu.sku in MIG_GPUS else MIG_GPUS[0]
    return {"par_model": s.model, "par_gpu": sku, "par_count": SEED_GPUS, "par_gpcs": SEED_GPCS,
            "par_dist": "log-normal", "par_mu": SEED_QUERY_SIZE["mu"], "par_sigma": SEED_QUERY_SIZE["sigma"],
            "par_max": SEED_QUERY_SIZE["max_size"], "par_table": "1:0.2, 2:0.2, 3:0.4, 4:0.2",
            "par_sla": 0.0, "par_pct": SEED_PERCENTILE, "par_seed": 0, "par_alpha": 1.5, "par_n": 4_000}


# The number boxes' ranges, declared once: the widgets use them and a link's values are checked against them.
LIMITS = {"par_count": (1, 16), "par_gpcs": (0, 16 * 7), "par_mu": (-2.0, 6.0), "par_sigma": (0.05, 4.0),
          "par_max": (1, 256), "par_sla": (0.0, 1e5), "par_pct": (50.0, 99.99), "par_seed": (0, 2**31 - 1),
          "par_alpha": (1.0, 5.0), "par_n": (2_000, 200_000)}
DISTRIBUTIONS = ["log-normal", "table"]


def _rules() -> dict:
    return {**LIMITS, "par_model": sorted(book.model_names), "par_gpu": MIG_GPUS, "par_dist": DISTRIBUTIONS}


view = PageView("p", KEYS, _defaults, _rules)
view.start()

c = st.columns([2, 2, 1, 1, 1])
c[0].selectbox("Model", sorted(book.model_names), key="par_model")
c[1].selectbox("GPU", MIG_GPUS, key="par_gpu")
c[2].number_input("GPUs", *LIMITS["par_count"], key="par_count")
c[3].number_input("GPC budget (0 = all)", *LIMITS["par_gpcs"], key="par_gpcs", help="compute slices PARIS may use")
c[4].button("Reset", key="par_reset", on_click=view.reset)
c = st.columns([1.3, 1, 1, 1, 2, 1.6])
c[0].radio("Batch sizes", DISTRIBUTIONS, key="par_dist")
lognormal = st.session_state["par_dist"] == "log-normal"  # both kinds stay drawn so neither loses its values
c[1].number_input("mu", *LIMITS["par_mu"], key="par_mu", disabled=not lognormal,
                  help="log-normal location of the query size (PARIS Sec V)")
c[2].number_input("sigma", *LIMITS["par_sigma"], key="par_sigma", disabled=not lognormal)
c[3].number_input("largest batch", *LIMITS["par_max"], key="par_max", disabled=not lognormal)
c[4].text_input("Table: size:probability, comma-separated", key="par_table", disabled=lognormal)
c[5].number_input("SLA ms (0 = 1.5 x GPU(7) at the largest batch)", *LIMITS["par_sla"], key="par_sla")
with st.expander("Tail percentile, random seed, simulation"):
    c = st.columns(4)
    c[0].number_input("SLA percentile", *LIMITS["par_pct"], key="par_pct")
    c[1].number_input("Seed (random partition, simulation)", *LIMITS["par_seed"], key="par_seed")
    c[2].number_input("ELSA alpha (slack margin)", *LIMITS["par_alpha"], key="par_alpha")
    c[3].number_input("Requests per simulated probe", *LIMITS["par_n"], step=2_000, key="par_n")
view.publish()

w = st.session_state
query = ({"kind": "lognormal", "mu": float(w["par_mu"]), "sigma": float(w["par_sigma"]), "max_size": int(w["par_max"])}
         if w["par_dist"] == "log-normal" else {"kind": "table", "table": pairs(w["par_table"])})
try:
    base = load_scenario(seed_like_scenario(book, w["par_model"], w["par_gpu"], int(w["par_count"]), query,
                                            float(w["par_sla"]) or None, float(w["par_pct"])), book)
except KneepointError as e:
    st.error(f"These inputs are not valid: {md(e)}")
    st.stop()
have = int(w["par_count"]) * book.catalog.gpu(w["par_gpu"]).compute_slices
max_gpcs = min(int(w["par_gpcs"]), have) or None  # a budget above what the GPUs have is all of them
if int(w["par_gpcs"]) > have:
    st.caption(f"GPC budget {int(w['par_gpcs'])} is more than {int(w['par_count'])} GPUs have: using all {have}.")
try:
    study = study_cached(base.to_json(), max_gpcs, int(w["par_seed"]))
except KneepointError as e:
    st.error(f"No partitioning can be planned: {md(e)}")
    st.stop()

by = {r.policy: r for r in study.rows}
verdict_box = st.empty()  # PARIS against the best baseline, filled once the simulation (if any) is known
m = st.columns([1, 3])
m[0].metric("SLA", f"p{study.percentile:g} <= {study.sla_ms:.2f} ms")
with m[1]:
    if "paris" in by:
        st.markdown(f"**PARIS partition** ({by['paris'].gpcs_used} of {study.max_gpcs} GPCs): "
                    + " + ".join(f"{n} x {p}" for p, n in by["paris"].instances.items()))
    if "gpu-max" in by:
        st.markdown("**GPU(max)**, the best homogeneous size: "
                    + " + ".join(f"{n} x {p}" for p, n in by["gpu-max"].instances.items()))

c = st.columns(2)
with c[0]:
    st.subheader("Batch sizes")
    st.plotly_chart(cached_figure(batch_pdf, study.dist, study.paris.knees if study.paris else None), key="par_pdf")
    st.caption("The share of queries of each size; dotted lines are the partitions' utilisation knees, which split "
               "the sizes into the ranges PARIS serves on each partition (Algorithm 1).")
with c[1]:
    st.subheader("Latency-bounded throughput")
    sim_key = (base.to_json(), max_gpcs, int(w["par_seed"]), int(w["par_n"]), float(w["par_alpha"]))
    chart = st.empty()
    # a session's first look at the default case simulates too (PARIS is built for ELSA, which only the simulator
    # runs), answered once for every visitor; a link's own inputs wait for the button, as a stranger's link is input
    first = "par_opened" not in st.session_state and all(w[k] == v for k, v in _defaults().items())
    st.session_state["par_opened"] = True
    pressed = st.button("Simulate FIFS and ELSA (GPU(max), random, PARIS)", key="par_sim") or first
    sim = kept_result("par_sim_result", sim_key, pressed, lambda: sim_cached(*sim_key), "The simulation could not run")
    chart.plotly_chart(cached_figure(bounded_bars, study, sim), key="par_bars")
    st.caption("Grey: the analytic engine's largest load meeting the SLA with first-idle-first-served (it prices "
               "ELSA's size-aware routing as FIFS). Simulated bars bisect the load with the discrete-event "
               "simulator under each scheduler.")

said = verdict(study, sim)
if said is not None:
    (verdict_box.info if not said.simulated else verdict_box.success if said.paris_wins
     else verdict_box.warning)(md(said.explain()))

st.subheader("Policies")
table = pd.DataFrame([{"policy": r.policy, "instances": " + ".join(f"{n} x {p}" for p, n in r.instances.items()),
                       "GPUs used": r.gpus_used, "GPCs used": r.gpcs_used, "capacity (req/s)": round(r.capacity_rps),
                       "latency-bounded, FIFS analytic (req/s)": round(r.bounded_fifs_rps),
                       **({f"{s.scheduler.upper()} simulated (req/s)": round(s.bounded_rps) for s in sim or []
                           if s.policy == r.policy})} for r in study.rows])
show_table(table, key="par_table_out")
for name, why in study.skipped.items():
    st.caption(f"{md(name)}: {md(why)}")

st.subheader("Packed layouts")
show = st.selectbox("Policy", [r.policy for r in study.rows], index=[r.policy for r in study.rows].index("paris")
                    if "paris" in by else 0, key="par_show")
gpu = book.catalog.gpu(study.sku)
st.plotly_chart(cached_figure(slot_diagram,
                              gpu, [validate_layout(gpu, lay) for lay in by[show].layouts]), key="par_slots")
st.caption("Each GPU's MIG layout as placed: every instance sits at a start slot the MIG placement rules allow.")
for note in by[show].notes:
    st.caption(md(note))
