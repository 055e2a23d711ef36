"""Design: one inference-server design, analysed: capacity, bottleneck, tail latency vs load, cost."""

import json

import streamlit as st

from engine.catalog import addable, validate_layout
from engine.charts.design import (batch_histogram, breakdown_bar, host_cpu_bar, latency_vs_load, slot_diagram,
                                  utilization_bar)
from engine.errors import KneepointError
from engine.presets import DEFAULT_SCENARIO
from engine.results import AnalyticPartition
from engine.studies import model_row
from engine.scenario import (BatchingSpec, CostSpec, FpgaSpec, GpuSpec, HostSpec, PreprocessingSpec, RpcSpec,
                             ScenarioError, SchedulerSpec, load_scenario)
from engine.workload_spec import InputLenSpec, QuerySizeSpec, SlaSpec
from engine.io.urlstate import encode
from ui.design_form import (CUSTOM, DEFAULT_SKU, FPGA, MIG, NAME_TYPED, RATE_INPUT_RANGE, SHARES, WHOLE, applicable,
                            applies_note, arrival_inputs, input_len_fields, keep_hidden_inputs,
                            fpga_defaults, from_widgets, layout_choices, to_widgets)
from ui.compute import kept_result
from ui.deploy_state import deployment_download
from ui.figures import cached_figure
from ui.design_state import context, evaluate_cached, simulate_cached
from ui.scenarios import pin, scenario_reader, set_current
from ui.fields import field_choices, field_range
from ui.session import hosting
from ui.text import md
from ui.viewlink import drop_link, read_link, write_link
from ui.tables import show as show_table
from ui.gate import guard_page

guard_page()  # before anything else: the page may run without app.py (ui/gate.py)

ctx = context()
book = ctx.book
st.title("Design")
st.caption("One design end to end: pick the model, GPU partitioning, host, preprocessing, RPC path, batching, "
           "scheduler and workload; the analytic engine answers with capacity, bottleneck, tail latency and cost.")


def _apply(scenario) -> None:
    sku = scenario.gpu.sku if scenario.gpu is not None else st.session_state.get("d_gpu", DEFAULT_SKU)
    for k, v in to_widgets(scenario, book.catalog.gpu(sku)).items():
        st.session_state[k] = v


if "d_model" not in st.session_state:  # first run of this session: the link's scenario, else the default
    _apply(read_link("s", scenario_reader(book), "scenario") or load_scenario(DEFAULT_SCENARIO, book))

def _entries() -> list[str]:
    return [p.strip() for p in st.session_state.get("d_custom", "").replace(";", ",").split(",") if p.strip()]


def _add() -> None:  # callbacks run before the widgets, so they may change d_custom
    st.session_state["d_custom"] = ", ".join([*_entries(), st.session_state["d_add"]])


def _clear() -> None:
    st.session_state["d_custom"] = ""


def _reset() -> None:  # a callback runs before the widgets exist, so their values can be set
    drop_link("s")
    _apply(load_scenario(DEFAULT_SCENARIO, book))


def _name_typed() -> None:  # an emptied box goes back to the derived name
    st.session_state[NAME_TYPED] = st.session_state["d_name"].strip() or None


def _name_input(scenario) -> None:
    """The name box, drawn once the scenario is known: it shows the typed name, else the one derived from the
    design as it now stands (set before the widget exists in this run, as Streamlit requires)."""
    if scenario is not None:
        st.session_state["d_name"] = scenario.name
    top[0].text_input("Design name", key="d_name", on_change=_name_typed,
                      help="named after the design (model, GPU and layout, preprocessing, RPC path, batching) until "
                           "you type a name; empty the box to go back to the derived name")


top = st.columns([3, 1, 1])
top[1].button("Reset to defaults", key="d_reset", on_click=_reset)

cols = st.columns(4)
models = sorted(book.model_names)
cols[0].selectbox("Model", models, key="d_model")
cols[1].selectbox("GPU", book.catalog.skus, key="d_gpu")
cols[2].number_input("GPUs", *field_range(GpuSpec, "count"), key="d_count")
gpu = book.catalog.gpu(st.session_state["d_gpu"])
modes = [WHOLE, MIG, SHARES, FPGA] if gpu.mig_capable else [WHOLE, SHARES, FPGA]
if st.session_state.get("d_mode") not in modes:
    st.session_state["d_mode"] = WHOLE
cols[3].radio("Partitioning", modes, key="d_mode")

if st.session_state["d_mode"] == MIG:
    choices = layout_choices(gpu)
    if st.session_state.get("d_layout") not in choices:
        st.session_state["d_layout"] = choices[0]
    st.selectbox(f"MIG layout (all {len(choices) - 1} maximal layouts of {gpu.sku}, or custom)", choices,
                 key="d_layout")
    if st.session_state["d_layout"] == CUSTOM:
        st.text_input("Profiles, comma-separated (profile or profile@start)", key="d_custom",
                      help=f"valid profiles: {', '.join(p.name for p in gpu.profiles)}")
        entries = _entries()
        can = addable(gpu, entries)
        fits = [p for p, why in can.items() if why is None]
        cols = st.columns([2, 1, 1])
        cols[0].selectbox("Build it one instance at a time: add", fits or ["(nothing more fits)"], key="d_add")
        cols[1].button("Add", key="d_add_btn", on_click=_add, disabled=not fits)
        cols[2].button("Clear", key="d_clear", on_click=_clear)
        blocked = [f"{p}: {why}" for p, why in can.items() if why]
        if blocked and entries:
            st.caption("Cannot add: " + "; ".join(blocked))
elif st.session_state["d_mode"] == SHARES:
    st.text_input("GPU% per instance (MPS active-thread percentage), comma-separated", key="d_shares")
elif st.session_state["d_mode"] == FPGA:
    st.caption("FPGA inference as a service (EIF): boards x accelerators x hardware threads serve the model; the "
               "GPU above is not used.")
    for k, v in fpga_defaults().items():  # widgets off screen in another mode lost their values
        st.session_state.setdefault(k, v)
    cols = st.columns(5)
    cols[0].number_input("Boards", *field_range(FpgaSpec, "boards"), key="d_fpga_boards")
    cols[1].number_input("Accelerators per board (0 = the board's)",
                         *field_range(FpgaSpec, "accelerators_per_board", low=0),
                         key="d_fpga_acc")
    cols[2].number_input("Threads per accelerator (0 = the board's)",
                         *field_range(FpgaSpec, "threads_per_accelerator", low=0), key="d_fpga_threads")
    cols[3].number_input("Sparsity (zero weights)", *field_range(FpgaSpec, "sparsity", high=0.99),
                         key="d_fpga_sparsity")
    cols[4].number_input("Dedicated ms per request (0 = stored)", *field_range(FpgaSpec, "ms_per_request", low=0.0),
                         key="d_fpga_ms", format="%.3f",
                         help="the seed reports speed-ups, not times: give your accelerator's time per request")

keep_hidden_inputs()  # an input hidden below (it does not apply) keeps its value in the scenario and the link
with st.expander("Host, preprocessing and RPC path", expanded=False):
    st.markdown("**Host and preprocessing**")
    cols = st.columns(4)
    cols[0].number_input("Host CPU cores", *field_range(HostSpec, "cpu_cores"), key="d_cores")
    cols[1].number_input("Reserved cores", *field_range(HostSpec, "cpu_reserved_cores"), key="d_reserved")
    cols[2].selectbox("Preprocessing device", field_choices(PreprocessingSpec, "device"), key="d_pre",
                      help="cpu: a pool of host cores; dpu: FPGA data-processing unit; gpu: decode on the slices; "
                           "none: PREBA's ideal")
    shown = applicable(st.session_state)
    if "d_pre_cores" in shown:
        cols[3].number_input("Preprocessing cores (0 = share all free cores)",
                             *field_range(PreprocessingSpec, "cores", low=0), key="d_pre_cores")
    if "d_pre_audio" in shown and model_row(book, st.session_state["d_model"]).get("preprocess") == "audio":
        cols[3].selectbox("CPU audio pipeline", field_choices(PreprocessingSpec, "cpu_audio_pipeline"),
                          key="d_pre_audio", help="published: the decode and mel rows of the store; librosa: "
                          "PREBA's Librosa baseline, its per-core cost fitted on PREBA Fig 8 (393 cores for CitriNet)")
    if "d_dpu_units" in shown:
        cols[3].number_input("DPU compute units", *field_range(PreprocessingSpec, "units"), key="d_dpu_units")
    st.markdown("**RPC path**")
    cols = st.columns(4)
    cols[0].selectbox("RPC path", field_choices(RpcSpec, "preset"), key="d_rpc")
    cols[1].number_input("Link (Gbit/s)", *field_range(RpcSpec, "link_gbps", low=1.0), key="d_link")
    with cols[2].popover("Advanced RPC components"):
        st.selectbox("Copy method", ["preset", *field_choices(RpcSpec, "copy_method")], key="d_copy")
        st.selectbox("Orchestration", ["preset", *field_choices(RpcSpec, "orchestration")], key="d_orch")
        st.selectbox("Completion", ["preset", *field_choices(RpcSpec, "completion")], key="d_completion")

with st.expander("Batching, scheduling, workload, SLA and cost", expanded=False):
    # one row per stage a request meets, each showing only the inputs its chosen policy reads
    st.markdown("**Workload**")
    cols = st.columns(4)
    cols[0].number_input("Offered load (requests/s)", *RATE_INPUT_RANGE, key="d_rate")
    cols[1].selectbox("Query size", field_choices(QuerySizeSpec, "kind"), key="d_qkind",
                      help="items per query: fixed, log-normal (PARIS), or a table of size:probability")
    shown = applicable(st.session_state)
    if "d_qsize" in shown:
        cols[2].number_input("Items per query", *field_range(QuerySizeSpec, "size"), key="d_qsize")
    if "d_mu" in shown:
        cols[2].number_input("Log-normal mu (PARIS)", *field_range(QuerySizeSpec, "mu"), key="d_mu")
        cols[3].number_input("Log-normal sigma", *field_range(QuerySizeSpec, "sigma", low=0.01), key="d_sigma")
    if "d_qtable" in shown:
        cols[2].text_input("Query sizes, size:probability, comma-separated", key="d_qtable")
    if not book.is_fixed_input(st.session_state["d_model"]):  # audio seconds or tokens: the model's own unit
        cols = st.columns(4)
        cols[0].selectbox("Input length law", field_choices(InputLenSpec, "kind"), key="d_ilen_kind",
                          help="each request's length (audio seconds or tokens): it sets the GPU time per item")
        labels = {"d_ilen_value": ("Input length (0 = profiled middle)", "value", 0.0),
                  "d_ilen_low": ("Shortest input", "low", 0.01), "d_ilen_high": ("Longest input", "high", 0.01),
                  "d_ilen_mu": ("Log-normal mu of the length", "mu", None),
                  "d_ilen_sigma": ("Log-normal sigma of the length", "sigma", 0.01)}
        for col, key in zip(cols[1:], input_len_fields(st.session_state["d_ilen_kind"])):
            label, field, low = labels[key]
            col.number_input(label, *field_range(InputLenSpec, field, low=low), key=key)
    arrival_inputs(hosting().limits)
    st.markdown("**Batching**")
    cols = st.columns(4)
    cols[0].selectbox("Batching", field_choices(BatchingSpec, "policy"), key="d_batching")
    shown = applicable(st.session_state)
    if "d_max_batch" in shown:
        cols[1].number_input("Batch_max (0 = the knee)", *field_range(BatchingSpec, "max_batch", low=0),
                             key="d_max_batch")
    if "d_delay" in shown:
        cols[2].number_input("Time_queue ms (0 = Time_knee / partitions)",
                             *field_range(BatchingSpec, "max_queue_delay_ms"), key="d_delay")
    if "d_max_batch" not in shown and "d_delay" not in shown:
        cols[1].caption(applies_note(st.session_state["d_batching"]))
    st.markdown("**Scheduler**")
    cols = st.columns(4)
    cols[0].selectbox("Scheduler", field_choices(SchedulerSpec, "policy"), key="d_sched")
    shown = applicable(st.session_state)
    if "d_alpha" in shown:
        cols[1].number_input("ELSA alpha", *field_range(SchedulerSpec, "alpha", low=0.01), key="d_alpha")
        cols[2].number_input("ELSA beta", *field_range(SchedulerSpec, "beta", low=0.01), key="d_beta")
    st.markdown("**SLA**")
    cols = st.columns(4)
    cols[0].number_input("SLA latency ms (0 = MLPerf bound)", *field_range(SlaSpec, "latency_ms", low=0.0),
                         key="d_sla")
    cols[1].number_input("SLA percentile", *field_range(SlaSpec, "percentile", low=50.0, high=99.99), key="d_pct")
    st.markdown("**Cost**")
    cols = st.columns(4)
    cols[0].number_input("Years", *field_range(CostSpec, "years", low=0.5), key="d_years")
    cols[1].number_input("Electricity (USD/kWh)", *field_range(CostSpec, "usd_per_kwh"), key="d_kwh", format="%.3f")
    cols[2].number_input("PUE", *field_range(CostSpec, "pue"), key="d_pue")

try:
    scenario = load_scenario(from_widgets(dict(st.session_state)), book)
except ScenarioError as e:
    _name_input(None)
    st.error(f"This design is not valid: {md(e)}")
    st.stop()
_name_input(scenario)
write_link("s", encode(scenario))
set_current(scenario)
if top[2].button("Pin for Compare", key="d_pin", help="keep this design to compare on the Compare page"):
    st.toast(f"Pinned '{md(scenario.name)}' ({pin(scenario)} pinned); open Compare to see them side by side.")

try:
    result = evaluate_cached(scenario.to_json())
except KneepointError as e:  # ProfileError and the stage models' errors: the design is valid but has no answer
    st.error(f"This design cannot be evaluated: {md(e)}")
    st.stop()
ev, curve = result
pct = ev.sla.percentile

m = st.columns(3) + st.columns(3)
m[0].metric("SLA-bounded throughput", f"{ev.sla_bounded_rps:,.0f} req/s",
            help=f"largest load whose p{pct:g} latency meets {ev.sla.latency_ms:g} ms")
m[1].metric("Capacity", f"{ev.capacity_rps:,.0f} req/s", help="throughput at which the bottleneck saturates")
m[2].metric(f"p{pct:g} at offered load", f"{ev.sla.latency_at_rate_ms:,.2f} ms" if ev.stable else "unstable")
m[3].metric("Bottleneck", ev.bottleneck)
m[4].metric(f"TCO ({ev.cost.years:g} years)", f"${ev.cost.tco_usd:,.0f}")
qpd = ev.cost.queries_per_usd
m[5].metric("Queries per dollar", "—" if qpd is None else f"{qpd:,.0f}",
            help=f"at {ev.cost_basis} over the cost period"
            + (f"; none: {ev.cost_no_value_reason}" if ev.cost_no_value_reason else ""))
# the verdict at the offered load, then what limits the SLA-bounded throughput: a latency floor or saturation
(st.error if not ev.stable else st.success if ev.sla.met else st.warning)(md(ev.headline()))

layouts = []
for g in range(scenario.gpu.count if scenario.gpu is not None else 0):
    lay = scenario.gpu.layouts[g] if scenario.gpu.layouts else scenario.gpu.layout
    layouts.append(validate_layout(gpu, lay) if lay else None)
if scenario.gpu is not None and not scenario.gpu.shares:
    st.plotly_chart(cached_figure(slot_diagram, gpu, layouts[:4]), key="d_slots")
    if scenario.gpu.count > 4:
        st.caption(f"Showing 4 of {scenario.gpu.count} GPUs (all have the same layout).")

st.subheader("Tail latency against load")
SIM_FRACTIONS = (0.2, 0.4, 0.6, 0.75, 0.85, 0.92)  # of capacity: where the curve bends
cols = st.columns([1, 1, 2])
cols[0].number_input("Requests per simulated point", 2_000, 500_000, 20_000, step=10_000, key="d_sim_n")
cols[1].number_input("Seed", 0, 2**31 - 1, 0, key="d_sim_seed")
sim_key = (scenario.to_json(), int(st.session_state["d_sim_n"]), int(st.session_state["d_sim_seed"]))
pressed = cols[2].button("Simulate points on the curve", key="d_sim", help="discrete-event simulation (engine.sim) at "
                         f"{', '.join(f'{f:.0%}' for f in SIM_FRACTIONS)} of capacity; changing an input cancels it")
sim = kept_result("d_sim_result", sim_key, pressed, lambda: simulate_cached(sim_key[0], SIM_FRACTIONS, *sim_key[1:]),
                  "The simulation could not run")
st.plotly_chart(cached_figure(latency_vs_load, curve.rates_rps, curve.mean_ms, curve.tail_ms, pct, ev.sla.latency_ms,
                              ev.rate_rps, sim=sim["points"] if sim else None), key="d_curve")
st.caption(f"Analytic mean and p{pct:g} latency from {curve.rates_rps[0]:,.0f} req/s up to capacity; the dashed "
           "line is the SLA, the dotted one the offered load."
           + (f" Diamonds: simulated ({sim['requests']:,} requests per point, seed {sim['seed']}; bars are 95% "
              "confidence half-widths)." if sim else ""))
if sim:
    st.subheader("Batch sizes (simulated)")
    st.plotly_chart(cached_figure(batch_histogram, sim["histogram"], sim["histogram_rate_rps"]), key="d_batch_hist")
    st.caption(f"Share of batches by size at {sim['histogram_rate_rps']:,.0f} req/s, the simulated point nearest "
               "the offered load.")

cols = st.columns(2)
with cols[0]:
    st.subheader("Where the time goes")
    st.plotly_chart(cached_figure(breakdown_bar, ev.breakdown_ms), key="d_breakdown")
with cols[1]:
    st.subheader("Utilisation")
    st.plotly_chart(cached_figure(utilization_bar, ev.utilization), key="d_util")
    st.caption("Busy fraction, as the simulator reports it. Stages: offered load over capacity. Partitions "
               "('gpu:'): busy fraction at the batch size the load produces, so a partition can be busy while the "
               "GPU still has headroom in larger batches; the accelerator: the mean of its partitions.")
st.subheader("Host CPU")
st.plotly_chart(cached_figure(host_cpu_bar, ev.host_cpu.cores, ev.host_cpu.free), key="d_cpu")
st.subheader("Batching")
st.caption(f"Policy {ev.batching.policy}; Time_queue {ev.batching.time_queue_ms:.3f} ms; Batch_max per "
           f"partition from the {ev.batching.knee_rule} knee unless set.")
show_table([part.model_dump() for part in ev.partitions], key="d_parts",
             column_order=list(AnalyticPartition.LABELS))
with st.expander("Notes"):
    for note in ev.notes:
        st.markdown(f"- {md(note)}")
# drawn only once opened: a code block makes a first visit's browser load Streamlit's 1.6 MB syntax highlighter
with st.expander("Scenario JSON", key="d_json", on_change="rerun") as as_json:
    if as_json.open:
        st.code(json.dumps(json.loads(scenario.to_json()), indent=1), language="json")


deployment_download(scenario.to_json(), key="d_dl_deploy", name=scenario.name)
