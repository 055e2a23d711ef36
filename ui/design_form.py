"""The Design page's form: scenario <-> widget values (keys are the widgets' session-state keys), and the
workload's arrival inputs with the trace upload."""

from __future__ import annotations

from functools import lru_cache

import streamlit as st

from engine.catalog import enumerate_layouts
from engine.policy_rules import BatchMaxRule, rule_for, scheduler_rule_for
from engine.scenario import FpgaSpec, Scenario
from engine.workload_spec import ArrivalSpec, InputLenSpec
from engine.scenario import GpuSpec as _GpuSpec
from engine.io.traces import TraceError, mean_rate_rps, parse_trace_upload
from ui.fields import field_choices, field_range
from engine.vocab import WorkloadKind

WHOLE, MIG, SHARES, FPGA = "Whole GPU (MIG off)", "MIG layout", "GPU% shares", "FPGA boards (EIF)"
DEFAULT_SKU = "A100-SXM4-80GB"  # the GPU the form shows while an FPGA design is on
DEFAULT_TABLE = ((1, 0.25), (2, 0.25), (4, 0.25), (8, 0.25))  # a starting point for the table editor
CUSTOM = "custom (type profiles)"
ARRIVAL_KINDS = field_choices(ArrivalSpec, "kind")
#: session key (no widget) for the arrival fields the form has no widget for: diurnal parameters, streams,
#: and a trace's timestamps (from the upload, or from the link's scenario)
ARRIVAL_EXTRA = "d_arrival_extra"
TRACE_FILE, TRACE_ERROR = "d_trace_file", "d_trace_error"
#: session key (no widget) for the name the user typed; None while the name is derived from the design
#: (Scenario.derived_name), so it follows every change of model, GPU, layout, preprocessing, RPC path...
NAME_TYPED = "d_name_typed"
#: lowest and highest offered load the Design page's rate input takes
RATE_INPUT_RANGE = field_range(ArrivalSpec, "rate_rps", low=1.0)


@lru_cache(maxsize=32)
def _layout_labels(gpu) -> tuple[str, ...]:
    return tuple(" + ".join(l.labels()) for l in enumerate_layouts(gpu))


def layout_choices(gpu) -> list[str]:
    """Every maximal layout of the GPU as 'profile@start + ...', then the custom entry."""
    return list(_layout_labels(gpu)) + [CUSTOM] if gpu.mig_capable else [CUSTOM]


#: inputs shown only where they apply (the chosen device, query-size kind or policy reads them)
CONDITIONAL = ("d_pre_cores", "d_pre_audio", "d_dpu_units", "d_qsize", "d_mu", "d_sigma", "d_qtable", "d_max_batch",
               "d_delay", "d_alpha", "d_beta", "d_ilen_kind", "d_ilen_value", "d_ilen_low", "d_ilen_high",
               "d_ilen_mu", "d_ilen_sigma")


def applicable(w) -> set[str]:
    """The CONDITIONAL inputs that apply to the widget values `w`: preprocessing cores and the CPU audio pipeline
    (drawn for audio models only) for a CPU pool, compute units for a DPU; the query-size kind's own parameters; Batch_max where the batching rule takes a requested
    one, Time_queue where it honours a requested delay; alpha and beta for a scheduler that is sized by them."""
    out = {"d_pre_cores", "d_pre_audio"} if w.get("d_pre") == "cpu" else {"d_dpu_units"} if w.get("d_pre") == "dpu" \
        else set()
    out |= {"fixed": {"d_qsize"}, "lognormal": {"d_mu", "d_sigma"}, "table": {"d_qtable"}}.get(w.get("d_qkind"), set())
    if w.get("d_batching"):
        rule = rule_for(w["d_batching"])
        out |= {"d_max_batch"} if rule.batch_max_rule == BatchMaxRule.REQUESTED_OR_KNEE else set()
        out |= {"d_delay"} if rule.uses_time_queue and rule.honours_requested_delay else set()
    if w.get("d_sched") and scheduler_rule_for(w["d_sched"]).sized_by_alpha_beta:
        out |= {"d_alpha", "d_beta"}
    return out


def applies_note(policy: str) -> str:
    """Why a batching policy shows neither Batch_max nor Time_queue."""
    rule = rule_for(policy)
    if not rule.batches:
        return "No batching: each query is served alone."
    return "Batch_max is each partition's knee and Time_queue its knee time over the partitions (PREBA 4.3)."


def keep_hidden_inputs() -> None:
    """Keep the values of inputs not drawn in this run: Streamlit drops a widget's state when the widget is not
    drawn, and the scenario (and its link) would lose them; a value set through session state is kept."""
    for key in CONDITIONAL:
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]


def to_widgets(s: Scenario, gpu) -> dict:
    """Widget values that show scenario `s` (used at start, from a link, and on Reset); `gpu` is the catalogue
    entry of s.gpu.sku, or of the GPU to show alongside an FPGA design."""
    fpga = s.fpga
    if s.gpu is None:  # an FPGA design: the GPU widgets keep a GPU to return to
        s = s.model_copy(update={"gpu": _GpuSpec(sku=gpu.sku)})
    layout = s.gpu.layout
    mode = FPGA if fpga is not None else SHARES if s.gpu.shares else (MIG if layout else WHOLE)
    label = None
    if layout:
        from engine.catalog import validate_layout

        placed = " + ".join(validate_layout(gpu, layout).labels())
        label = placed if placed in _layout_labels(gpu) else CUSTOM
    return {
        "d_name": s.name, NAME_TYPED: None if s.name == s.derived_name() else s.name,
        "d_model": s.model, "d_gpu": s.gpu.sku, "d_count": s.gpu.count, "d_mode": mode,
        "d_layout": label or (layout_choices(gpu)[0] if gpu.mig_capable else CUSTOM),
        "d_custom": ", ".join(layout or []), "d_shares": ", ".join(f"{x:g}" for x in (s.gpu.shares or [50, 50])),
        "d_cores": s.host.cpu_cores, "d_reserved": s.host.cpu_reserved_cores,
        "d_pre": s.preprocessing.device.value, "d_pre_cores": s.preprocessing.cores or 0,
        "d_pre_audio": s.preprocessing.cpu_audio_pipeline.value,
        "d_dpu_units": s.preprocessing.units, "d_rpc": s.rpc.preset.value, "d_link": s.rpc.link_gbps,
        "d_copy": s.rpc.copy_method or "preset", "d_orch": s.rpc.orchestration or "preset",
        "d_completion": s.rpc.completion or "preset",
        "d_batching": s.batching.policy.value, "d_max_batch": s.batching.max_batch or 0,
        "d_delay": s.batching.max_queue_delay_ms or 0.0, "d_sched": s.scheduler.policy.value,
        "d_alpha": s.scheduler.alpha, "d_beta": s.scheduler.beta,
        "d_rate": s.workload.arrival.rate_rps, "d_arrival": s.workload.arrival.kind.value,
        "d_trace_unit": s.workload.arrival.trace_unit,
        ARRIVAL_EXTRA: s.workload.arrival.model_dump(mode="json", exclude={"kind", "rate_rps", "trace_unit"}),
        **_input_len_widgets(s.workload.input_len),
        "d_qkind": s.workload.query_size.kind,
        "d_qsize": s.workload.query_size.size, "d_mu": s.workload.query_size.mu,
        "d_sigma": s.workload.query_size.sigma, "d_sla": s.workload.sla.latency_ms or 0.0,
        "d_qtable": ", ".join(f"{k}:{p:g}" for k, p in (s.workload.query_size.table or DEFAULT_TABLE)),
        "d_pct": s.workload.sla.percentile, "d_years": s.cost.years, "d_kwh": s.cost.usd_per_kwh,
        "d_pue": s.cost.pue,
        **_fpga_widgets(fpga or FpgaSpec()),
    }


def _input_len_widgets(spec: InputLenSpec) -> dict:
    return {"d_ilen_kind": spec.kind, "d_ilen_value": spec.value or 0.0, "d_ilen_low": spec.low,
            "d_ilen_high": spec.high, "d_ilen_mu": spec.mu, "d_ilen_sigma": spec.sigma}


def input_len_fields(kind: str) -> tuple[str, ...]:
    """The input-length widgets a length law of `kind` reads (besides its kind)."""
    return {"fixed": ("d_ilen_value",), "uniform": ("d_ilen_low", "d_ilen_high"),
            "lognormal": ("d_ilen_mu", "d_ilen_sigma")}.get(kind, ())


def _input_len(w: dict) -> dict:
    """The input-length law the widgets describe; a fixed length of 0 is the profiled middle (the spec's None)."""
    if "d_ilen_kind" not in w:  # a session from before these widgets: the spec's default
        return {}
    spec = {"kind": w["d_ilen_kind"], "low": float(w["d_ilen_low"]), "high": float(w["d_ilen_high"]),
            "mu": float(w["d_ilen_mu"]), "sigma": float(w["d_ilen_sigma"])}
    if w["d_ilen_value"]:
        spec["value"] = float(w["d_ilen_value"])
    return spec


def fpga_defaults() -> dict:
    """The FPGA widgets' values for a default FpgaSpec (restored when the widgets were off screen)."""
    return _fpga_widgets(FpgaSpec())


def _fpga_widgets(f: FpgaSpec) -> dict:
    return {"d_fpga_boards": f.boards, "d_fpga_acc": f.accelerators_per_board or 0,
            "d_fpga_threads": f.threads_per_accelerator or 0, "d_fpga_sparsity": f.sparsity,
            "d_fpga_ms": f.ms_per_request or 0.0}


def parsed(text: str, kind: type = float):
    """`kind(text)` (int or float), or None when the text does not read as one: the caller keeps the text for
    validation to name (the one place a typed number is parsed; no engine error is caught here)."""
    try:
        return kind(text)
    except ValueError:
        return None


def _floats(text: str) -> list:
    out = []
    for part in text.replace(";", ",").split(","):
        part = part.strip()
        if part:
            number = parsed(part)
            out.append(part if number is None else number)  # text is left for validation to name
    return out


def pairs(text: str):
    """'size:probability, ...' as [[size, probability], ...]; a part that does not parse is kept as text
    so that validation names it."""
    out = []
    for part in text.replace(";", ",").split(","):
        if part.strip():
            size_text, _, probability_text = part.partition(":")
            size, probability = parsed(size_text, int), parsed(probability_text)
            out.append(part.strip() if size is None or probability is None else [size, probability])
    return out


def from_widgets(w: dict) -> dict:
    """The scenario dict the widgets describe (validated afterwards by engine.scenario.load_scenario)."""
    gpu: dict = {"sku": w["d_gpu"], "count": int(w["d_count"])}
    if w["d_mode"] == MIG:
        if w["d_layout"] == CUSTOM:
            gpu["layout"] = [p.strip() for p in w["d_custom"].replace(";", ",").split(",") if p.strip()]
        else:
            gpu["layout"] = [p.strip() for p in w["d_layout"].split("+")]
    elif w["d_mode"] == SHARES:
        gpu["shares"] = _floats(w["d_shares"])
    rpc = {"preset": w["d_rpc"], "link_gbps": float(w["d_link"])}
    for key, field in (("d_copy", "copy_method"), ("d_orch", "orchestration"), ("d_completion", "completion")):
        if w[key] != "preset":
            rpc[field] = w[key]
    batching = {"policy": w["d_batching"]}
    if w["d_max_batch"]:
        batching["max_batch"] = int(w["d_max_batch"])
    if w["d_delay"]:
        batching["max_queue_delay_ms"] = float(w["d_delay"])
    query = {"kind": w["d_qkind"], "size": int(w["d_qsize"]), "mu": float(w["d_mu"]), "sigma": float(w["d_sigma"])}
    if w["d_qkind"] == "table":
        query["table"] = pairs(w.get("d_qtable", ""))
    sla = {"percentile": float(w["d_pct"])}
    if w["d_sla"]:
        sla["latency_ms"] = float(w["d_sla"])
    pre = {"device": w["d_pre"], "units": int(w["d_dpu_units"])}
    if w["d_pre_cores"]:
        pre["cores"] = int(w["d_pre_cores"])
    if w.get("d_pre_audio", "published") != "published":  # PREBA's Librosa baseline (engine.stages.librosa)
        pre["cpu_audio_pipeline"] = w["d_pre_audio"]
    accel = {"gpu": gpu}
    if w["d_mode"] == FPGA:
        fpga = {"boards": int(w["d_fpga_boards"]), "sparsity": float(w["d_fpga_sparsity"])}
        for key, field, cast in (("d_fpga_acc", "accelerators_per_board", int),
                                 ("d_fpga_threads", "threads_per_accelerator", int), ("d_fpga_ms", "ms_per_request", float)):
            if w[key]:
                fpga[field] = cast(w[key])
        accel = {"fpga": fpga}
    named = {"name": w[NAME_TYPED]} if w.get(NAME_TYPED) else {}  # without a typed name the scenario derives one
    return {**named, "model": w["d_model"], **accel,
            "host": {"cpu_cores": int(w["d_cores"]), "cpu_reserved_cores": int(w["d_reserved"])},
            "preprocessing": pre, "rpc": rpc, "batching": batching,
            "scheduler": {"policy": w["d_sched"], "alpha": float(w["d_alpha"]), "beta": float(w["d_beta"])},
            "workload": {"arrival": _arrival(w), "query_size": query, "input_len": _input_len(w), "sla": sla},
            "cost": {"years": float(w["d_years"]), "usd_per_kwh": float(w["d_kwh"]), "pue": float(w["d_pue"])}}


def _arrival(w: dict) -> dict:
    """The arrival spec: the kind and rate the widgets show, over the fields kept from the scenario or upload."""
    return {**(w.get(ARRIVAL_EXTRA) or {}), "kind": w.get("d_arrival", WorkloadKind.POISSON.value),
            "rate_rps": float(w["d_rate"]), "trace_unit": w.get("d_trace_unit", "s")}


def trace_uploaded(limits) -> None:
    """file_uploader callback (runs before the widgets, so the rate may be set): parse the upload into the
    scenario's inline timestamps and offer the trace's own mean rate; a bad file is named, never echoed."""
    upload = st.session_state.get(TRACE_FILE)
    if upload is None:  # the file was removed: the timestamps already taken stay until another upload
        return
    try:
        stamps = parse_trace_upload(upload.getvalue(), upload.name, limits)
    except TraceError as e:
        st.session_state[TRACE_ERROR] = str(e)
        return
    st.session_state.pop(TRACE_ERROR, None)
    st.session_state[ARRIVAL_EXTRA] = {**(st.session_state.get(ARRIVAL_EXTRA) or {}), "timestamps": stamps}
    rate = mean_rate_rps(stamps, st.session_state.get("d_trace_unit", "s"))
    if rate > 0:
        low, high = RATE_INPUT_RANGE
        st.session_state["d_rate"] = min(max(rate, low), high)


def arrival_inputs(limits) -> None:
    """The arrival process (every kind the simulator runs) and, for 'trace', the upload of a CSV of timestamps."""
    c = st.columns(4)
    c[0].selectbox("Arrival process", ARRIVAL_KINDS, key="d_arrival",
                   help="how requests arrive in a simulation (the analytic engine reads the offered load): Poisson, "
                        "MLPerf Server/Offline/SingleStream/MultiStream, diurnal, or an uploaded trace")
    if st.session_state.get("d_arrival") != WorkloadKind.TRACE.value:
        return
    c[1].selectbox("Trace timestamp unit", field_choices(ArrivalSpec, "trace_unit"), key="d_trace_unit")
    c[2].file_uploader("Arrival trace (CSV)", type=["csv", "txt"], key=TRACE_FILE, max_upload_size=limits.max_mb,
                       on_change=trace_uploaded, args=(limits,),
                       help="one column of timestamps, or a header naming timestamp, time, t or arrival; "
                            f"up to {limits.max_mb} MB and {limits.max_rows:,} rows")
    if st.session_state.get(TRACE_ERROR):
        st.error(f"This trace cannot be used: {st.session_state[TRACE_ERROR]}")
    stamps = (st.session_state.get(ARRIVAL_EXTRA) or {}).get("timestamps")
    if stamps:
        unit = st.session_state.get("d_trace_unit", "s")
        st.caption(f"Trace: {len(stamps):,} arrivals, mean {mean_rate_rps(stamps, unit):,.1f} requests/s. A simulation "
                   "plays it at its own pace; the simulated curve scales it to each load.")
