"""Tenancy: how many tenants a device holds and at what latency: MIG, GPU% sharing, FPGA threads."""

import pandas as pd
import streamlit as st

from engine.catalog import MPS_SOURCE
from engine.errors import KneepointError
from engine.charts.tenancy import cold_start, fpga_threads, mig_tenants, oversubscription, share_curve
from ui.scenarios import current_scenario
from ui.session import get_book
from ui.tenancy_state import backends_cached, mig_cached, overview_cached
from ui.text import md
from ui.viewlink import PageView
from ui.tables import show as show_table
from ui.gate import guard_page
from ui.figures import cached_figure

guard_page()  # before anything else: the page may run without app.py (ui/gate.py)

book = get_book()
st.title("Tenancy")
st.caption("Tenants per device and what each one sees: MIG instances, GPU% (MPS) shares with the knee GPU%, "
           "Multi-Model and Param-Share, oversubscription, and what changing a share costs.")

KEYS = ("ten_model", "ten_mig_gpu", "ten_share_gpu", "ten_within", "ten_batch", "ten_deadline", "ten_rate",
        "ten_buffer", "ten_weights", "ten_fpga_ms", "ten_cpu_ms", "ten_sparsity")
WHOLE_GPU = "the whole GPU"
MIG_GPUS = [s for s in book.catalog.skus if book.catalog.gpu(s).mig_capable]


def _defaults() -> dict:
    s = current_scenario(book)
    sku = s.gpu.sku if s.gpu is not None else MIG_GPUS[0]
    return {"ten_model": s.model, "ten_mig_gpu": sku if sku in MIG_GPUS else MIG_GPUS[0], "ten_share_gpu": sku,
            "ten_within": WHOLE_GPU,
            "ten_batch": 8, "ten_deadline": float(s.workload.sla.latency_ms or 30.0),
            "ten_rate": float(s.workload.arrival.rate_rps), "ten_buffer": 0.0, "ten_weights": True,
            "ten_fpga_ms": 0.0, "ten_cpu_ms": 0.0, "ten_sparsity": 0.6}


# The number boxes' and slider's ranges, declared once: the widgets use them and a link's values are checked too.
LIMITS = {"ten_batch": (1, 1024), "ten_deadline": (0.0, 1e5), "ten_rate": (0.0, 1e7), "ten_buffer": (0.0, 1e6),
          "ten_fpga_ms": (0.0, 1e5), "ten_cpu_ms": (0.0, 1e5), "ten_sparsity": (0.0, 0.95)}


def _rules() -> dict:
    return {**LIMITS, "ten_model": sorted(book.model_names), "ten_mig_gpu": MIG_GPUS,
            "ten_share_gpu": book.catalog.skus}


view = PageView("t", KEYS, _defaults, _rules)  # first run: the link's view, else from the current design
view.start()

c = st.columns([2, 2, 2, 1])
c[0].selectbox("Model", sorted(book.model_names), key="ten_model")
c[1].selectbox("GPU for MIG", MIG_GPUS, key="ten_mig_gpu")
c[2].selectbox("GPU for GPU% sharing", book.catalog.skus, key="ten_share_gpu")
c[3].button("Reset", key="ten_reset", on_click=view.reset)
share_gpu = book.catalog.gpu(st.session_state["ten_share_gpu"])
within = [WHOLE_GPU] + ([p.name for p in share_gpu.profiles] if share_gpu.mig_capable else [])
if st.session_state.get("ten_within") not in within:
    st.session_state["ten_within"] = WHOLE_GPU
st.selectbox("GPU% shares of", within, key="ten_within",
             help="MPS shares of the whole GPU, or of one MIG slice (MPS inside a MIG instance)")
c = st.columns(5)
c[0].number_input("Batch (items)", *LIMITS["ten_batch"], key="ten_batch")
c[1].number_input("Deadline (ms)", *LIMITS["ten_deadline"], key="ten_deadline", help="latency bound for Multi-Model")
c[2].number_input("Request rate (req/s)", *LIMITS["ten_rate"], key="ten_rate", help="to price a GPU% change")
c[3].number_input("Buffer per instance (MB, 0 = estimate)", *LIMITS["ten_buffer"], key="ten_buffer",
                  help="CUDA context + workspace + activations of one instance; measure it (the GPU-primitives seed's "
                       "Table II measured figures are rows of data/seed/rpc_figures.csv)")
c[4].toggle("Share weights (Param-Share)", key="ten_weights")
view.publish()

model, batch = st.session_state["ten_model"], int(st.session_state["ten_batch"])
if st.session_state["ten_deadline"] <= 0:
    st.error("Deadline (ms): must be above 0.")
    st.stop()

st.subheader(f"MIG: isolated instances on {st.session_state['ten_mig_gpu']}")
try:
    rows = mig_cached(model, st.session_state["ten_mig_gpu"], batch)
except KneepointError as e:
    st.error(f"MIG tenancy: {md(e)}")
else:
    st.plotly_chart(cached_figure(mig_tenants, rows, batch), key="ten_mig_chart")
    st.caption(f"Each profile's instance limit per GPU (MIG User Guide) and one instance's mean latency for a batch "
               f"of {batch}; the line is what all tenants of that profile serve together, batches back to back.")
    show_table(pd.DataFrame([r.model_dump() for r in rows]), key="ten_mig_table")

st.subheader(f"GPU% sharing on {st.session_state['ten_share_gpu']}"
             + ("" if st.session_state["ten_within"] == WHOLE_GPU else f", inside one {st.session_state['ten_within']}"))
try:
    ov = overview_cached(model, st.session_state["ten_share_gpu"], float(st.session_state["ten_deadline"]), batch,
                         float(st.session_state["ten_rate"]) or None, st.session_state["ten_buffer"] or None,
                         bool(st.session_state["ten_weights"]),
                         None if st.session_state["ten_within"] == WHOLE_GPU else st.session_state["ten_within"])
except KneepointError as e:
    st.error(f"GPU% sharing: {md(e)}")
    st.stop()
k = ov.share.knee
m = st.columns(4)
m[0].metric("Knee GPU%", f"{k.gpu_pct}%", help=k.rule)
best = ov.plan.best
m[1].metric("Multi-Model", f"{best.instances} x {best.gpu_pct_each}%" if best else "none fits",
            help="instances and GPU% each with the most throughput within the deadline")
m[2].metric("Multi-Model throughput", f"{best.throughput_items_per_s:,.0f} items/s" if best else "-",
            delta=f"x{ov.plan.speedup:.2f} vs one instance" if ov.plan.speedup else None)
limit = ov.memory.limit
m[3].metric("Instances per GPU (MPS)", f"{limit.without} -> {limit.with_sharing}",
            help=f"without -> with shared weights (Param-Share): what GPU memory holds, at most {limit.mps_clients} MPS "
                 "clients per GPU")
st.plotly_chart(cached_figure(share_curve,
                              ov.share.curve, k, float(st.session_state["ten_deadline"])), key="ten_share_chart")
st.caption(f"Latency of one batch of {batch} against its GPU% ({ov.share.curve.points[0].provenance} points"
           + (f", slice law from {ov.share.curve.reference}" if ov.share.curve.reference else "")
           + f"). Past the knee at {k.gpu_pct}%, more GPU% lowers latency by at most {k.threshold:.0%}.")
c = st.columns(2)
with c[0]:
    st.markdown("**Multi-Model options** (most instances per GPU% within the deadline)")
    show_table(pd.DataFrame(ov.plan.table()), key="ten_mm_table")
with c[1]:
    st.markdown("**Param-Share memory fit**")
    show_table(pd.DataFrame(ov.memory.fit.table()), key="ten_ps_table")
    st.caption(f"Weights {ov.memory.fit.weights_mb:,.0f} MB ({ov.memory.weights_from}); buffer "
               f"{ov.memory.fit.buffer_mb:,.0f} MB ({ov.memory.buffer_from}); memory "
               f"{ov.memory.fit.gpu_memory_mb:,.0f} MB ({ov.memory.memory_from}). Instances per GPU: "
               f"{limit.explain()} ({MPS_SOURCE}).")
st.markdown("**Oversubscription**")
st.plotly_chart(cached_figure(oversubscription, ov.oversubscription), key="ten_over_chart")
st.caption("Shares above 100% in total time-slice the GPU: each tenant's latency grows with the total while the "
           f"GPU's throughput stays at {ov.oversubscription.cap_items_per_s:,.0f} items/s.")

st.subheader("FPGA inference as a service (EIF): hardware threads as tenants")
c = st.columns(3)
c[0].number_input("FPGA time per request, dedicated (ms, 0 = use the GPU's)", *LIMITS["ten_fpga_ms"],
                  key="ten_fpga_ms", format="%.3f")
c[1].number_input("CPU time per request (ms, 0 = use the GPU's)", *LIMITS["ten_cpu_ms"], key="ten_cpu_ms",
                  format="%.3f")
c[2].slider("Model sparsity", *LIMITS["ten_sparsity"], key="ten_sparsity",
            help="fraction of zero weights; the seed measured 50-70%, outside which the slowdown fit holds its nearest "
                 "value")
try:
    bv = backends_cached(model, st.session_state["ten_share_gpu"], st.session_state["ten_fpga_ms"] or None,
                         st.session_state["ten_cpu_ms"] or None, float(st.session_state["ten_sparsity"]))
except KneepointError as e:
    st.error(f"FPGA and cold start: {md(e)}")
else:
    c = st.columns(2)
    with c[0]:
        st.plotly_chart(cached_figure(fpga_threads, bv.fpga_threads), key="ten_fpga_chart")
        t = bv.fpga_threads
        acc, top = int(t["accelerators_per_board"].iloc[0]), t.iloc[-1]
        st.caption(f"One board ({acc} accelerators): each extra hardware thread adds {acc} tenants; co-running "
                   f"threads slow each request by the fitted slowdown (EIF Sec V-B/V-C): "
                   f"{top['slowdown']:.1%} at {int(top['threads_per_accelerator'])} threads.")
    with c[1]:
        st.plotly_chart(cached_figure(cold_start, bv.cold_start), key="ten_cold_chart")
        st.caption(f"A cold request for {model} ({bv.weights_mb:,.0f} MB of weights): the FPGA streams the model "
                   "slice by slice and starts computing after the first slice; GPU and CPU load it whole first.")
    show_table(bv.cold_start, key="ten_cold_table")
    for note in bv.notes:
        st.caption(md(note))

st.subheader("Changing a GPU% share")
r = ov.reconfiguration
show_table(pd.DataFrame(r.table()), key="ten_reconf_table")
st.caption(f"At {r.rate_rps:,.0f} req/s: restarting with the new share is down for {r.load_s:g} s; a standby "
           f"instance loaded alongside (overlapped execution) switches in {r.switch_s * 1e6:g} us, so "
           f"{r.requests_saved:,.0f} fewer requests are lost or delayed.")
for note in ov.notes:
    st.caption(md(note))
