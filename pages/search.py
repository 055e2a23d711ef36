"""Search: sweep a design space around the current design; best designs, Pareto fronts, simulator check."""

import json

import streamlit as st

from engine.errors import KneepointError
from engine.executors import ray_installed
from engine.scenario import BatchingSpec, PreprocessingSpec, RpcSpec, SchedulerSpec, load_scenario
from engine.search import frames
from engine.vocab import DEPLOYABLE_PREPROCESSING
from engine.charts.search import front_scatter
from ui.compute import kept_result
from ui.deploy_state import deployment_download, size_cached, sizing_table
from ui.design_form import RATE_INPUT_RANGE
from ui.fields import field_choices
from ui.scenarios import current_scenario, link_checked, pin
from ui.search_state import search_cached, space_shape
from ui.session import get_book
from ui.text import md
from ui.tables import show as show_table
from ui.gate import guard_page
from ui.figures import cached_figure

guard_page()  # before anything else: the page may run without app.py (ui/gate.py)

book = get_book()
st.title("Search")
st.caption("Every combination of the alternatives below, around the design now on the Design page, evaluated "
           "analytically: the best design under the SLA by SLA-bounded throughput and by queries per dollar, the "
           "Pareto fronts, and the simulator's check of the top designs.")

link_checked(book)
base = current_scenario(book)
if base.gpu is None:
    st.info("The current design runs on FPGA boards; the search varies GPU designs. Pick a GPU on the Design page.")
    st.stop()
gpu = book.catalog.gpu(base.gpu.sku)
st.markdown(f"**Around:** {md(base.name)}: {base.model} on {base.gpu.count} x {base.gpu.sku}, "
            f"{base.workload.arrival.rate_rps:,.0f} req/s")

LAYOUTS = ["the current layout", "every maximal MIG layout"] if gpu.mig_capable else ["the current GPU set-up"]
cols = st.columns(3)
cols[0].radio("GPU partitioning", LAYOUTS, key="srch_layouts")
cols[1].multiselect("Preprocessing devices", field_choices(PreprocessingSpec, "device"),
                    default=[device.value for device in DEPLOYABLE_PREPROCESSING], key="srch_pre",
                    help="the three a server can have, by default: do I need a DPU? 'none' (PREBA's ideal: inputs "
                         "arrive preprocessed) is shown beside the best design as a reference; add it here to rank it "
                         "as a candidate too")
cols[2].multiselect("RPC paths", field_choices(RpcSpec, "preset"), default=[base.rpc.preset.value], key="srch_rpc")
cols = st.columns(3)
cols[0].multiselect("Batching policies", field_choices(BatchingSpec, "policy"), default=[base.batching.policy.value],
                    key="srch_batch")
cols[1].multiselect("Schedulers", field_choices(SchedulerSpec, "policy"), default=[base.scheduler.policy.value],
                    key="srch_sched")
cols[2].number_input("Designs the simulator checks", 0, 5, 3, key="srch_confirm")
if ray_installed():  # found without importing Ray: the page loads as fast without it
    st.radio("Run on", ["local", "ray"], horizontal=True, key="srch_executor",
             format_func={"local": "this server", "ray": "Ray cluster"}.get,
             help="ray: the cluster named by KNEEPOINT_RAY_ADDRESS (or a Ray started on this server); same answer")

w = st.session_state
space = {"name": f"around {base.name}", "base": json.loads(base.to_json()),
         "preprocessing": w["srch_pre"] or [base.preprocessing.device.value],
         "rpc": w["srch_rpc"] or [base.rpc.preset.value], "batching": w["srch_batch"] or [base.batching.policy.value],
         "scheduler": w["srch_sched"] or [base.scheduler.policy.value]}
if w["srch_layouts"] == "every maximal MIG layout":
    space["layouts"] = "all"
space_json = json.dumps(space, sort_keys=True)
try:
    size, per_axis = space_shape(space_json)
except KneepointError as e:
    st.error(f"This search cannot run: {md(e)}")
    st.stop()
st.caption(f"{size:,} designs (" + " x ".join(f"{k} {n}" for k, n in zip(per_axis, ("GPU set-ups", "preprocessing",
           "RPC paths", "batching", "schedulers"))) + ").")

with st.expander("Least hardware for a load (sizing)"):
    st.caption("The fewest GPUs (the current layout or any maximal one per GPU) and host cores that carry the rate "
               "within the SLA, per GPU type, ranked by TCO at that rate; the simulator checks the winner.")
    sizing = st.columns([1, 2, 1])
    sizing[0].number_input("Rate (req/s)", *RATE_INPUT_RANGE, float(base.workload.arrival.rate_rps),
                           key="srch_size_rate")
    sizing[1].multiselect("GPU types", book.catalog.skus, default=[base.gpu.sku], key="srch_size_gpus")
    size_key = (base.to_json(), float(w["srch_size_rate"]), tuple(w["srch_size_gpus"] or [base.gpu.sku]))
    sized = kept_result("srch_size_result", size_key, sizing[2].button("Size", key="srch_size_run"),
                        lambda: size_cached(*size_key), "Sizing failed")
    if sized is not None:
        show_table(sizing_table(sized), key="srch_size_table")
        verdict = sized.confirmation
        if verdict is not None:
            best = sized.answers[0]
            text = (f"Simulator on one {verdict.sku} server at {best.server_rate_rps:,.0f} req/s (its share of "
                    f"{sized.rate_rps:,.0f}; {verdict.n_requests:,} requests): "
                    f"p{verdict.percentile:g} " + (f"{verdict.simulated_ms:.2f} ms" if verdict.simulated_ms else "-")
                    + f" against the {verdict.sla_ms:g} ms SLA (analytic {verdict.analytic_ms:.2f} ms).")
            (st.success if verdict.met else st.warning)(text + (" Met." if verdict.met else " Missed."))

            deployment_download(json.dumps(best.scenario), key="srch_size_deploy", servers=best.servers,
                                name=f"{best.servers} x {best.gpus_per_server} {best.sku} for {sized.rate_rps:,.0f} req/s")
        else:
            st.info("No GPU type carries this rate within the SLA; nothing to simulate.")

key = (space_json, int(w["srch_confirm"]))
first = "srch_opened" not in w  # a session's first look runs the default space: the current design's, a few designs
w["srch_opened"] = True
result = kept_result("srch_result", key, st.button("Run the search", key="srch_run", type="primary") or first,
                     lambda: search_cached(space_json, key[1], executor=w.get("srch_executor", "local")),
                     "The search failed")
if first and result is not None:
    st.info("Opened on the search around the design now on the Design page (its layout, the three deployable "
            "preprocessing devices, its RPC path, batching and scheduler). Change that design on the Design page, "
            "or the alternatives above, and run the search again for your own question.")
if result is None:
    st.info("Choose the alternatives, then run the search (changing an input cancels a running one).")
    st.stop()
tables = frames(result)

m = st.columns(3)
for col, idx, label in ((m[0], result.best_throughput, "Best SLA-bounded throughput"),
                        (m[1], result.best_value, "Best queries per USD")):
    if idx is None:
        col.metric(label, "none meets the SLA")
    else:
        r = result.designs[idx]
        col.metric(label, f"{r.sla_bounded_rps:,.0f} req/s" if "throughput" in label else f"{r.queries_per_usd:,.0f}")
        col.caption(md(r.label))
m[2].metric("Designs evaluated", f"{result.size:,}", help=f"{result.designs_per_s:,.0f} designs/s analytic")
st.subheader("Best designs")
show_table(tables["best"], key="srch_best")
ideal = result.ideal_reference
if ideal is not None:  # a reference line, not a candidate
    best = result.designs[result.best_throughput]
    st.caption(f"Reference, not a candidate: with no preprocessing at all (PREBA's ideal, which no server deploys) "
               f"the best design would carry {ideal.sla_bounded_rps:,.0f} req/s within the SLA; its {md(best.preprocessing)} "
               f"preprocessing reaches {best.sla_bounded_rps / ideal.sla_bounded_rps:.0%} of that."
               if ideal.sla_bounded_rps > 0 else "Reference, not a candidate: even with no preprocessing at all "
               "(PREBA's ideal) the best design's hardware meets the SLA at no load.")
if st.button("Pin the best designs for Compare", key="srch_pin", disabled=result.best_throughput is None):
    for idx in dict.fromkeys(i for i in (result.best_throughput, result.best_value) if i is not None):
        c = result.candidate(idx)
        pin(load_scenario(c.scenario_json, book).model_copy(update={"name": c.row.label[:120]}))
    st.toast("Pinned; open Compare to see them side by side.")
cols = st.columns(2)
for col, name, title in ((cols[0], "cost-p99", "Cost against p99"), (cols[1], "value-throughput",
                                                                       "Queries per USD against SLA-bounded throughput")):
    with col:
        st.subheader(title)
        st.plotly_chart(cached_figure(front_scatter, result, name), key=f"srch_front_{name}")
st.caption("Grey: every design; the line joins the Pareto front (no other design is better on both axes); "
           "stars: the best designs under the SLA.")
if len(tables["confirmations"]):
    st.subheader("Simulator check of the top designs")
    show_table(tables["confirmations"], key="srch_conf")
with st.expander(f"All {result.size:,} designs"):
    show_table(tables["designs"], key="srch_all")
for note in result.notes:
    st.caption(md(note))
