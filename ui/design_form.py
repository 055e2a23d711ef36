"""The Design page's form: scenario <-> widget values (keys are the widgets' session-state keys)."""

from __future__ import annotations

from functools import lru_cache

from engine.catalog import enumerate_layouts
from engine.scenario import FpgaSpec, Scenario
from engine.scenario import GpuSpec as _GpuSpec

WHOLE, MIG, SHARES, FPGA = "Whole GPU (MIG off)", "MIG layout", "GPU% shares", "FPGA boards (EIF)"
DEFAULT_SKU = "A100-SXM4-80GB"  # the GPU the form shows while an FPGA design is on
DEFAULT_TABLE = ((1, 0.25), (2, 0.25), (4, 0.25), (8, 0.25))  # a starting point for the table editor
CUSTOM = "custom (type profiles)"


@lru_cache(maxsize=32)
def _layout_labels(gpu) -> tuple[str, ...]:
    return tuple(" + ".join(l.labels()) for l in enumerate_layouts(gpu))


def layout_choices(gpu) -> list[str]:
    """Every maximal layout of the GPU as 'profile@start + ...', then the custom entry."""
    return list(_layout_labels(gpu)) + [CUSTOM] if gpu.mig_capable else [CUSTOM]


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
        "d_name": s.name, "d_model": s.model, "d_gpu": s.gpu.sku, "d_count": s.gpu.count, "d_mode": mode,
        "d_layout": label or (layout_choices(gpu)[0] if gpu.mig_capable else CUSTOM),
        "d_custom": ", ".join(layout or []), "d_shares": ", ".join(f"{x:g}" for x in (s.gpu.shares or [50, 50])),
        "d_cores": s.host.cpu_cores, "d_reserved": s.host.cpu_reserved_cores,
        "d_pre": s.preprocessing.device.value, "d_pre_cores": s.preprocessing.cores or 0,
        "d_dpu_units": s.preprocessing.units, "d_rpc": s.rpc.preset.value, "d_link": s.rpc.link_gbps,
        "d_copy": s.rpc.copy_method or "preset", "d_orch": s.rpc.orchestration or "preset",
        "d_completion": s.rpc.completion or "preset",
        "d_batching": s.batching.policy.value, "d_max_batch": s.batching.max_batch or 0,
        "d_delay": s.batching.max_queue_delay_ms or 0.0, "d_sched": s.scheduler.policy.value,
        "d_alpha": s.scheduler.alpha, "d_beta": s.scheduler.beta,
        "d_rate": s.workload.arrival.rate_rps, "d_qkind": s.workload.query_size.kind,
        "d_qsize": s.workload.query_size.size, "d_mu": s.workload.query_size.mu,
        "d_sigma": s.workload.query_size.sigma, "d_sla": s.workload.sla.latency_ms or 0.0,
        "d_qtable": ", ".join(f"{k}:{p:g}" for k, p in (s.workload.query_size.table or DEFAULT_TABLE)),
        "d_pct": s.workload.sla.percentile, "d_years": s.cost.years, "d_kwh": s.cost.usd_per_kwh,
        "d_pue": s.cost.pue,
        **_fpga_widgets(fpga or FpgaSpec()),
    }


def fpga_defaults() -> dict:
    """The FPGA widgets' values for a default FpgaSpec (restored when the widgets were off screen)."""
    return _fpga_widgets(FpgaSpec())


def _fpga_widgets(f: FpgaSpec) -> dict:
    return {"d_fpga_boards": f.boards, "d_fpga_acc": f.accelerators_per_board or 0,
            "d_fpga_threads": f.threads_per_accelerator or 0, "d_fpga_sparsity": f.sparsity,
            "d_fpga_ms": f.ms_per_request or 0.0}


def _floats(text: str) -> list:
    out = []
    for part in text.replace(";", ",").split(","):
        part = part.strip()
        if part:
            try:
                out.append(float(part))
            except ValueError:
                out.append(part)  # left for validation to name
    return out


def pairs(text: str):
    """'size:probability, ...' as [[size, probability], ...]; a part that does not parse is kept as text
    so that validation names it."""
    out = []
    for part in text.replace(";", ",").split(","):
        if part.strip():
            k, _, p = part.partition(":")
            try:
                out.append([int(k), float(p)])
            except ValueError:
                out.append(part.strip())
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
    accel = {"gpu": gpu}
    if w["d_mode"] == FPGA:
        fpga = {"boards": int(w["d_fpga_boards"]), "sparsity": float(w["d_fpga_sparsity"])}
        for key, field, cast in (("d_fpga_acc", "accelerators_per_board", int),
                                 ("d_fpga_threads", "threads_per_accelerator", int), ("d_fpga_ms", "ms_per_request", float)):
            if w[key]:
                fpga[field] = cast(w[key])
        accel = {"fpga": fpga}
    return {"name": w["d_name"] or "untitled", "model": w["d_model"], **accel,
            "host": {"cpu_cores": int(w["d_cores"]), "cpu_reserved_cores": int(w["d_reserved"])},
            "preprocessing": pre, "rpc": rpc, "batching": batching,
            "scheduler": {"policy": w["d_sched"], "alpha": float(w["d_alpha"]), "beta": float(w["d_beta"])},
            "workload": {"arrival": {"kind": "poisson", "rate_rps": float(w["d_rate"])}, "query_size": query,
                         "sla": sla},
            "cost": {"years": float(w["d_years"]), "usd_per_kwh": float(w["d_kwh"]), "pue": float(w["d_pue"])}}
