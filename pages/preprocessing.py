"""Preprocessing: PREBA's question - can the host CPU keep the partitions fed, and what do a DPU or GPU decode buy?"""

import streamlit as st

from engine.errors import KneepointError
from engine.charts.preprocessing import (cores_needed_chart, decode_chart, dpu_sizing_chart, preprocessing_costs_chart,
                                throughput_by_partitions)
from engine.scenario import HostSpec, PreprocessingSpec
from engine.studies.preprocessing import DEVICE_LABEL
from ui.design_form import CUSTOM, MIG, layout_choices
from ui.design_form import to_widgets as design_widgets
from ui.design_state import context
from ui.fields import field_range
from ui.page_state import preprocessing_cached, publish, reset, start, validate
from ui.text import md
from ui.tables import show as show_table
from ui.gate import guard_page
from ui.figures import cached_figure

guard_page()  # before anything else: the page may run without app.py (ui/gate.py)

AS_DESIGNED = "as on the Design page"
book = context().book
st.title("Preprocessing")
st.caption("PREBA's view of a design: throughput with and without preprocessing as partitions are activated, the "
           "host CPU cores that keep them fed, an FPGA DPU's size, GPU-side decode, and the preprocessing costs "
           "behind it all.")


def to_widgets(s) -> dict:
    gpu = book.catalog.gpu(s.gpu.sku)
    d = design_widgets(s, gpu)
    mig = d["d_mode"] == MIG and d["d_layout"] != CUSTOM
    return {"pp_model": s.model, "pp_layout": d["d_layout"] if mig else AS_DESIGNED, "pp_cores": s.host.cpu_cores,
            "pp_reserved": s.host.cpu_reserved_cores, "pp_pre_cores": s.preprocessing.cores or 0,
            "pp_units": s.preprocessing.units, "pp_mp": s.preprocessing.image_megapixels}


def from_widgets(base, w: dict) -> dict:
    data = base.model_dump(mode="json", by_alias=True)
    data["model"] = w["pp_model"]
    if w["pp_layout"] != AS_DESIGNED:
        data["gpu"] = {"sku": base.gpu.sku, "count": base.gpu.count, "layout": [p.strip() for p in
                                                                              w["pp_layout"].split("+")]}
    data["host"] = {"cpu_cores": int(w["pp_cores"]), "cpu_reserved_cores": int(w["pp_reserved"])}
    data["preprocessing"].update(cores=int(w["pp_pre_cores"]) or None, units=int(w["pp_units"]),
                                 image_megapixels=float(w["pp_mp"]))
    return data


base = start("pp", book, to_widgets, marker="pp_model")
if getattr(base, "gpu", None) is None:
    st.info("This page is about GPU inference servers; the current design has no GPUs. Pick a GPU design on the "
            "Design page to see its preprocessing.")
    st.stop()

top = st.columns([4, 1])
top[0].caption(f"Starting from '{md(base.name)}': {base.gpu.count} x {base.gpu.sku}, preprocessing on "
               f"{base.preprocessing.device.value}, {base.workload.arrival.rate_rps:,.0f} requests/s offered.")
top[1].button("Reset", key="pp_reset", on_click=reset, args=("pp", book, to_widgets),
              help="back to the Design page's current design")
gpu = book.catalog.gpu(base.gpu.sku)
cols = st.columns(4)
cols[0].selectbox("Model", sorted(book.model_names), key="pp_model")
layouts = [AS_DESIGNED] + ([x for x in layout_choices(gpu) if x != CUSTOM] if gpu.mig_capable else [])
if st.session_state.get("pp_layout") not in layouts:
    st.session_state["pp_layout"] = AS_DESIGNED
cols[1].selectbox(f"Partitioning of each {gpu.sku}", layouts, key="pp_layout",
                  help="the partitions are activated one by one in this order")
cols[2].number_input("Host CPU cores", *field_range(HostSpec, "cpu_cores"), key="pp_cores")
cols[3].number_input("Reserved cores", *field_range(HostSpec, "cpu_reserved_cores"), key="pp_reserved",
                     help="kept for the OS; must be below the cores")
cols = st.columns(4)
cols[0].number_input("Preprocessing cores (0 = share all free cores)", *field_range(PreprocessingSpec, "cores", low=0),
                     key="pp_pre_cores")
cols[1].number_input("DPU compute units (8 per card)", *field_range(PreprocessingSpec, "units"), key="pp_units")
cols[2].number_input("JPEG size (megapixels)", *field_range(PreprocessingSpec, "image_megapixels", low=0.01),
                     key="pp_mp", format="%.3f",
                     help="ImageNet's mean is about 0.37 MP; sets image preprocessing costs")

scenario = validate(from_widgets(base, dict(st.session_state)), book)
if scenario is None:
    st.stop()
publish(scenario)
try:
    view = preprocessing_cached(scenario)
except KneepointError as e:
    st.error(f"This design cannot be answered: {md(e)}")
    st.stop()

rows = view.scaling
last = rows[-1]
m = st.columns(4)
m[0].metric("Without preprocessing", f"{last.rps['none']:,.0f} req/s", help="all partitions, PREBA's 'Ideal'")
m[1].metric("With CPU preprocessing", f"{last.rps['cpu']:,.0f} req/s")
m[2].metric("Cores to feed all partitions", f"{last.preprocessing_cores + last.rpc_cores:,.1f} cores",
            help=f"preprocessing {last.preprocessing_cores:,.1f} + RPC path {last.rpc_cores:,.1f}; "
                 f"{last.available_cores:g} available")
m[3].metric("CPU preprocessing cost", f"{view.cpu_costs[0].ms_per_item:.2f} ms/item" if view.cpu_costs else "none",
            help="per item per core, " + (view.cpu_costs[0].basis if view.cpu_costs else "no preprocessing"))
for note in view.notes:
    st.info(md(note))

st.subheader("Throughput as partitions are activated")
st.plotly_chart(cached_figure(throughput_by_partitions, rows), key="pp_scaling")
st.caption(f"Pipeline capacity (requests/s) when the first k of {len(rows)} partitions serve, each at its Batch_max, "
           f"for each preprocessing device (PREBA Figures 8 and 17). With all partitions: "
           + "; ".join(f"{DEVICE_LABEL[d].split(' (')[0]} {last.rps[d.value]:,.0f}" for d in DEVICE_LABEL) + ".")

st.subheader("Host CPU cores needed")
st.plotly_chart(cached_figure(cores_needed_chart, rows), key="pp_cores_chart")
starve = next((r.active_partitions for r in rows if r.preprocessing_cores + r.rpc_cores > r.available_cores), None)
st.caption("Cores that CPU preprocessing and the RPC path need to keep k partitions busy, against the "
           f"{last.available_cores:g} free cores, and the CPU utilisation the CPU-preprocessing design reaches "
           "(PREBA Figure 9). " + (f"From {starve} active partitions the CPU saturates and the slices starve."
                                   if starve else "The free cores keep every partition fed."))

dev = st.columns(2)
with dev[0]:
    st.subheader("DPU sizing")
    if view.dpu:
        st.plotly_chart(cached_figure(dpu_sizing_chart,
                                      rows, view.dpu.units, view.dpu.pcie_gbps_available), key="pp_dpu")
        d = view.dpu
        st.caption(f"{d.units} CUs on {d.cards} card(s): II {d.ii_ms:.3f} ms, latency {d.latency_ms:.3f} ms, "
                   f"{d.kb_per_item:,.0f} kB per item over PCIe, {d.capacity_items_per_s:,.0f} items/s. All "
                   f"partitions need {d.cus_needed} CUs and {d.pcie_gbps_used:.2f} of {d.pcie_gbps_available:g} GB/s "
                   + ("(PCIe has room)." if d.pcie_ok else "(more than the link carries)."))
    else:
        st.info("No DPU needed: this model has no preprocessing.")
with dev[1]:
    st.subheader("GPU decode and its cost on the partition")
    if view.decode:
        st.plotly_chart(cached_figure(decode_chart, view.decode), key="pp_decode")
        st.caption("Per kind of partition: inference alone, the partition's decode rate (JPEG engines where the "
                   "profile has them, else CUDA on its SMs), and inference when the partition decodes its own "
                   "inputs. " + " ".join(f"{r.partition}: {r.path}; decoding as fast as it infers needs "
                                         f"{100 * r.slice_share:.0f}% of its SM time." for r in view.decode))
    else:
        st.info("No GPU decode: this model has no preprocessing.")

st.subheader("The design with each preprocessing device")
show_table([{"device": r.device, "capacity (req/s)": r.capacity_rps, "bottleneck": r.bottleneck,
               "SLA-bounded (req/s)": r.sla_bounded_rps, "preprocessing (ms)": r.preprocess_ms,
               "host CPU (ms/request)": r.host_cpu_ms} for r in view.devices], key="pp_devices")
st.caption("The analytic engine's answer for the whole design with each device: capacity, its bottleneck, the "
           "largest load meeting the SLA, preprocessing time on a request's path and host CPU per request.")

st.subheader("Preprocessing costs: measured here vs published")
if view.cost_points:
    st.plotly_chart(cached_figure(preprocessing_costs_chart,
                                  view.cost_points, view.cpu_costs, view.input_size, view.input_unit),
                    key="pp_costs")
    for e in view.cpu_costs:
        if e.found:
            st.caption(f"From {e.prefer} rows: {e.ms_per_item:.3f} ms per item per core ({e.basis}).")
        else:
            st.caption(f"No {e.prefer} CPU rows for this pipeline" + (
                ": run `python -m engine profile preprocess` to time it on this machine." if e.prefer == "measured"
                else "."))
    with st.expander("The rows"):
        show_table([r.model_dump() for r in view.cost_points], key="pp_points")
else:
    st.info(f"{view.model} has no preprocessing pipeline.")
