"""SplitRPC's view of the RPC path: E2E breakdown per preset, latency against load, host CPU per request.

SplitRPC (seed) section 6.2 / Figure 8: the E2E split (GPU, client proc, server proc, network, data
movement) of each RPC path, for the design's model and for the Table 1 services normalised to gRPC-VMA;
section 6.3 / Figure 9: mean and p99 latency against load per path; sections 3.1-3.2 and the
GPU-runtime-primitives seed V-A/V-B: the host CPU a request costs. The breakdowns come from
engine.stages.rpc.rpc_path (batch 1, as Figure 8), the load curves and capacities from the analytic engine
on the whole design with each preset. Units: us per request, ms of latency, requests/s.
"""

from __future__ import annotations

import math
from typing import Optional

from pydantic import BaseModel, ConfigDict

from engine.analytic import Context, build_design, capacity, load_curve, sla_bounded_rate
from engine.analytic.pipeline import _ModelLike
from engine.scenario import Scenario
from engine.vocab import RpcPreset
from engine.stages.rpc import DEFAULT_KERNEL_COUNT, RpcBreakdown, rpc_path
from engine.stages.rpc_calibration import SERVICES, CalibrationRow, calibration_table, splitrpc_e2e
from engine.studies import model_row, require_gpu, variant

#: SplitRPC Figure 9 plots mean and p99 latency
LOAD_PERCENTILE = 99.0
#: points per preset on the latency-vs-load curve (cap / n .. 0.995 cap)
LOAD_POINTS = 30
#: SplitRPC's baseline: Figure 8 normalises every bar to gRPC-VMA (kernel bypass)
BASELINE = RpcPreset.GRPC_BYPASS
CATEGORIES = ("gpu", "client_proc", "server_proc", "network", "data_movement")


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True)


class PresetRow(_Row):
    """One RPC path for the design's model: its batch-1 E2E split (us) and what the whole design then sustains."""

    preset: str
    this_design: bool  # the scenario's own path (with its component overrides)
    breakdown_us: dict[str, float]  # CATEGORIES (SplitRPC Fig 8: orchestration in GPU, completion in server proc)
    e2e_us: float
    rpc_tax_us: float  # E2E minus the model's own GPU time
    host_cpu_critical_us: float  # server CPU on the critical path before the GPU (SerDes, stack, copies)
    host_cpu_other_us: float  # kernel launches and completion waiting
    arm_us: float  # SmartNIC ARM-core time
    path_cap_rps: float  # the link or SmartNIC ARM cap (inf when neither binds)
    capacity_rps: float  # the whole design with this path (analytic engine)
    bottleneck: str
    sla_bounded_rps: float
    host_cores_at_rate: float  # host cores the RPC path uses at the offered load


class LoadPoint(_Row):
    preset: str
    rate_rps: float
    mean_ms: float
    p99_ms: float


class ServiceRow(_Row):
    """A SplitRPC Table 1 service under one preset, categories as fractions of its gRPC-VMA E2E."""

    service: str
    preset: str
    normalised: dict[str, float]
    e2e_us: float


class RpcStudy(_Row):
    model: str
    partition: str  # the partition whose batch-1 GPU time the breakdown uses
    gpu_us: float
    kernels: int
    request_bytes: float
    response_bytes: float
    rate_rps: float
    sla_ms: Optional[float]  # the design's SLA bound when its percentile is the curves' (p99), else None
    presets: tuple[PresetRow, ...]
    load: tuple[LoadPoint, ...]
    services: tuple[ServiceRow, ...]
    calibration: tuple[CalibrationRow, ...]
    notes: tuple[str, ...]


def _spec_changes(scenario: Scenario, preset: RpcPreset) -> dict:
    """Another preset keeps the design's link speed and drops its component overrides (they belong to its path)."""
    return {"rpc": {"preset": preset.value, "link_gbps": scenario.rpc.link_gbps}}


def _row(preset: RpcPreset, mine: bool, bd: RpcBreakdown, design, rate: float) -> PresetRow:
    cap, bottleneck, _ = capacity(design)
    cats = bd.paper_categories()
    rpc_cpu = sum(s.host_cpu_s - s.breakdown_s.get("preprocess_cpu", 0.0) for s in design.host_stages
                  if not s.name.startswith("preprocess"))
    return PresetRow(preset=preset.value, this_design=mine, breakdown_us={k: cats[k] * 1e6 for k in CATEGORIES},
                     e2e_us=bd.e2e_s * 1e6, rpc_tax_us=(bd.e2e_s - bd.gpu_s) * 1e6,
                     host_cpu_critical_us=bd.critical_cpu_s * 1e6,
                     host_cpu_other_us=(bd.cpu_s_per_request - bd.critical_cpu_s) * 1e6,
                     arm_us=bd.arm_s_per_request * 1e6,
                     path_cap_rps=bd.capacity_rps, capacity_rps=cap, bottleneck=bottleneck,
                     sla_bounded_rps=sla_bounded_rate(design), host_cores_at_rate=min(rate, cap) * rpc_cpu)


def _load(preset: RpcPreset, design) -> list[LoadPoint]:
    return [LoadPoint(preset=preset.value, rate_rps=rate, mean_ms=mean * 1e3, p99_ms=tail * 1e3)
            for rate, mean, tail in load_curve(design, LOAD_POINTS) if math.isfinite(tail)]


def table1_services() -> tuple[ServiceRow, ...]:
    """SplitRPC Figure 8 as the model draws it: every Table 1 service under every preset (Table 2 testbed)."""
    runs = splitrpc_e2e()
    rows = []
    for s in SERVICES:
        base = runs[BASELINE][s.name].e2e_s
        for preset, by_service in runs.items():
            bd = by_service[s.name]
            cats = bd.paper_categories()
            rows.append(ServiceRow(service=s.name, preset=preset.value,
                                   normalised={k: cats[k] / base for k in CATEGORIES}, e2e_us=bd.e2e_s * 1e6))
    return tuple(rows)


def rpc_study(scenario: Scenario, ctx: Context) -> RpcStudy:
    """SplitRPC's view of a design's RPC path against every preset (see the module docstring)."""
    require_gpu(scenario)
    gpu = ctx.book.catalog.gpu(scenario.gpu.sku)
    model = _ModelLike(model_row(ctx.book, scenario.model))  # the same bytes and kernels the engine prices
    rate = scenario.workload.arrival.rate_rps
    presets, load, gpu_s, part, sla_ms = [], [], None, "", None
    for preset in RpcPreset:
        mine = preset == scenario.rpc.preset
        sc = scenario if mine else variant(scenario, ctx.book, _spec_changes(scenario, preset))
        design = build_design(sc, ctx)
        if gpu_s is None:  # the model's own batch-1 time: the partition's curve less the path's overhead
            first = design.gpu.partitions[0]
            gpu_s, part = first.service(1) - design.gpu_overhead_s, first.label
        if mine and scenario.workload.sla.percentile == LOAD_PERCENTILE:
            sla_ms = design.sla_s * 1e3
        bd = rpc_path(sc.rpc, model, gpu_s, gpu.pcie_gen, batch=1)
        presets.append(_row(preset, mine, bd, design, rate))
        p99 = sc if scenario.workload.sla.percentile == LOAD_PERCENTILE else variant(
            sc, ctx.book, {"workload.sla.percentile": LOAD_PERCENTILE})
        load += _load(preset, build_design(p99, ctx))
    notes = []
    if model.kernel_count is None:
        notes.append(f"{scenario.model} has no kernel count (SplitRPC Table 1 models only): "
                     f"{DEFAULT_KERNEL_COUNT} assumed")
    if scenario.rpc.components or any(getattr(scenario.rpc, n) is not None
                                      for n in ("copy_method", "orchestration", "completion", "polling_interval_us")):
        notes.append(f"component overrides apply to the design's own path ({scenario.rpc.preset.value}) only")
    return RpcStudy(model=scenario.model, partition=part, gpu_us=gpu_s * 1e6,
                   kernels=model.kernel_count or DEFAULT_KERNEL_COUNT, request_bytes=model.request_bytes,
                   response_bytes=model.response_bytes, rate_rps=rate, sla_ms=sla_ms, presets=tuple(presets),
                   load=tuple(load),
                   services=ctx.memo(("view:table1",), table1_services),  # constants of the seed: once per context
                   calibration=ctx.memo(("view:calibration",), lambda: tuple(calibration_table())),
                   notes=tuple(notes))
