"""RPC: SplitRPC's question - how much of end-to-end latency is RPC tax, and what does each RPC path buy?"""

import math

import streamlit as st

from engine.errors import KneepointError
from engine.charts.rpc import host_cpu_chart, load_curves_chart, rpc_breakdown_chart, services_chart
from engine.scenario import BatchingSpec, PreprocessingSpec, RpcSpec, ScenarioError
from engine.studies.rpc import BASELINE, LOAD_PERCENTILE
from ui.design_form import RATE_INPUT_RANGE, parsed
from ui.design_state import context
from ui.fields import field_choices, field_range
from ui.page_state import publish, reset, rpc_cached, start, validate
from ui.text import md
from ui.tables import show as show_table
from ui.gate import guard_page
from ui.figures import cached_figure

guard_page()  # before anything else: the page may run without app.py (ui/gate.py)

book = context().book
st.title("RPC path")
st.caption("SplitRPC's view of a design: where a request's time goes on each RPC path (serialisation, network "
           "stack, host copies, kernel orchestration), latency against load per path, and the host CPU a request "
           "costs.")


def to_widgets(s) -> dict:
    return {"rpc_model": s.model, "rpc_preset": s.rpc.preset.value, "rpc_link": s.rpc.link_gbps,
            "rpc_pre": s.preprocessing.device.value, "rpc_batching": s.batching.policy.value,
            "rpc_rate": s.workload.arrival.rate_rps,
            "rpc_components": ", ".join(f"{k}={v}" for k, v in s.rpc.components.items())}


def _components(text: str) -> dict:
    """'name=value, ...' -> dict; a value stays text unless it reads as a number or true/false."""
    out = {}
    for part in text.replace(";", ",").split(","):
        if not part.strip():
            continue
        name, sep, value = part.partition("=")
        if not sep:
            raise ScenarioError(f"rpc.components: {part.strip()[:100]!r} is not name=value")
        value = value.strip()
        low = value.lower()
        if low in ("true", "false"):
            out[name.strip()] = low == "true"
            continue
        number = parsed(value, int if value.lstrip("-").isdigit() else float)
        out[name.strip()] = value if number is None else number
    return out


def from_widgets(base, w: dict) -> dict:
    data = base.model_dump(mode="json", by_alias=True)
    data["model"] = w["rpc_model"]
    if w["rpc_preset"] != base.rpc.preset.value:  # the design's own overrides belong to its own preset
        data["rpc"] = {"preset": w["rpc_preset"]}
    data["rpc"].update(link_gbps=float(w["rpc_link"]), components=_components(w["rpc_components"]))
    data["preprocessing"]["device"] = w["rpc_pre"]
    if w["rpc_batching"] != base.batching.policy.value:  # the design's Batch_max / Time_queue belong to its policy
        data["batching"] = {"policy": w["rpc_batching"]}
    data["workload"]["arrival"]["rate_rps"] = float(w["rpc_rate"])
    return data


base = start("rpc", book, to_widgets, marker="rpc_model")
if getattr(base, "gpu", None) is None:
    st.info("This page is about GPU inference servers; the current design has no GPUs. Pick a GPU design on the "
            "Design page to see its RPC path.")
    st.stop()

top = st.columns([4, 1])
top[0].caption(f"Starting from '{md(base.name)}': {base.gpu.count} x {base.gpu.sku}. Each path is priced on this "
               "design's GPU and host; the chosen path keeps the design's component overrides.")
top[1].button("Reset", key="rpc_reset", on_click=reset, args=("rpc", book, to_widgets),
              help="back to the Design page's current design")
cols = st.columns(4)
cols[0].selectbox("Model", sorted(book.model_names), key="rpc_model")
cols[1].selectbox("This design's RPC path", field_choices(RpcSpec, "preset"), key="rpc_preset")
cols[2].number_input("Link (Gbit/s)", *field_range(RpcSpec, "link_gbps", low=1.0), key="rpc_link")
cols[3].number_input("Offered load (requests/s)", *RATE_INPUT_RANGE, key="rpc_rate")
cols = st.columns(4)
cols[0].selectbox("Preprocessing device", field_choices(PreprocessingSpec, "device"), key="rpc_pre",
                  help="SplitRPC's clients send tensors: 'none' shows the RPC path alone")
cols[1].selectbox("Batching", field_choices(BatchingSpec, "policy"), key="rpc_batching",
                  help="SplitRPC Figure 9 runs without batching, Figure 10 work-conserving")
cols[2].text_input("Component overrides (name=value, comma-separated)", key="rpc_components",
                   help="any engine.stages.rpc.RpcComponents field, e.g. transport_us_per_request=50, pcie_gen=4")

try:
    data = from_widgets(base, dict(st.session_state))
except KneepointError as e:
    st.error(f"These inputs are not valid: {md(e)}")
    st.stop()
scenario = validate(data, book)
if scenario is None:
    st.stop()
publish(scenario)
try:
    view = rpc_cached(scenario)
except KneepointError as e:
    st.error(f"This design cannot be answered: {md(e)}")
    st.stop()

mine = next(r for r in view.presets if r.this_design)
m = st.columns(4)
m[0].metric("E2E, batch 1", f"{mine.e2e_us:,.0f} us", help=f"{mine.preset}, no queueing")
m[1].metric("RPC tax", f"{mine.rpc_tax_us:,.0f} us", help="E2E minus the model's own GPU time")
m[2].metric("Host CPU per request", f"{mine.host_cpu_critical_us + mine.host_cpu_other_us:,.0f} us")
m[3].metric("Capacity with this path", f"{mine.capacity_rps:,.0f} req/s", help=f"bottleneck: {mine.bottleneck}")
for note in view.notes:
    st.info(md(note))

st.subheader(f"Where a request's time goes: {view.model}")
st.plotly_chart(cached_figure(rpc_breakdown_chart, view.presets), key="rpc_breakdown")
best = min(view.presets, key=lambda r: r.e2e_us if r.preset != "local" else float("inf"))
st.caption(f"{view.model} at batch 1 on {view.partition} ({view.gpu_us:,.0f} us of GPU time, {view.kernels} kernels, "
           f"{view.request_bytes:,.0f} B in, {view.response_bytes:,.0f} B out) in SplitRPC's Figure 8 categories. "
           f"The RPC tax runs from {min(r.rpc_tax_us for r in view.presets):,.0f} us to "
           f"{max(r.rpc_tax_us for r in view.presets):,.0f} us; the fastest networked path is {best.preset} "
           f"({best.e2e_us:,.0f} us).")

st.subheader("Latency against load")
st.plotly_chart(cached_figure(load_curves_chart, view.load, sla_ms=view.sla_ms, rate_rps=view.rate_rps), key="rpc_load")
caps = "; ".join(f"{r.preset} {r.capacity_rps:,.0f} req/s ({r.bottleneck})" for r in view.presets)
st.caption(f"Analytic mean (solid) and p{LOAD_PERCENTILE:g} (dashed) latency of the whole design with each path, up "
           f"to its capacity (SplitRPC Figure 9); the dotted lines are the offered load and the SLA. Capacity: {caps}.")

st.subheader("Host CPU per request")
st.plotly_chart(cached_figure(host_cpu_chart, view.presets), key="rpc_cpu")
st.caption(f"Server CPU a request costs at batch 1, and SmartNIC ARM time. At {view.rate_rps:,.0f} requests/s the "
           "RPC path keeps busy: " + "; ".join(f"{r.preset} {r.host_cores_at_rate:,.1f} cores" for r in view.presets)
           + ".")
show_table([{"path": r.preset, "E2E (us)": r.e2e_us, "RPC tax (us)": r.rpc_tax_us,
               "host CPU (us/request)": r.host_cpu_critical_us + r.host_cpu_other_us, "ARM (us/request)": r.arm_us,
               "link or SmartNIC cap (req/s)": r.path_cap_rps if math.isfinite(r.path_cap_rps) else None,
               "capacity (req/s)": r.capacity_rps, "bottleneck": r.bottleneck,
               "SLA-bounded (req/s)": r.sla_bounded_rps} for r in view.presets],
             key="rpc_table")

st.subheader("SplitRPC's Table 1 services")
st.plotly_chart(cached_figure(services_chart, view.services), key="rpc_services")
st.caption(f"Each service's E2E split under every path, as a fraction of its {BASELINE.value} E2E (the dashed line), "
           "on SplitRPC's testbed (100GbE, PCIe Gen3, A100): the model's reproduction of Figure 8.")
with st.expander("Paper vs model: the figures the RPC model is calibrated to"):
    show_table([r.model_dump() for r in view.calibration], key="rpc_calibration")
