"""evaluate(scenario) -> Evaluation: the analytic answer for one design at its arrival rate."""

from __future__ import annotations

import math
from typing import Optional

from pydantic import BaseModel, ConfigDict

from engine.analytic.design import Design
from engine.analytic.evaluate import RatePoint, at_rate, capacity, sla_bounded_rate, sweep
from engine.analytic.pipeline import Context, build_design
from engine.cost import CostResult, fpga_price_defaults, inputs_from_spec, price_defaults, servers_for, tco
from engine.scenario import PreprocessDevice, RpcPreset, Scenario, load_scenario

_MS = 1e3


class Evaluation(BaseModel):
    """Capacity, bottleneck, latency (ms), SLA-bounded throughput, host CPU and cost of one design."""

    model_config = ConfigDict(frozen=True)

    name: str
    rate_rps: float
    stable: bool
    unstable_reason: Optional[str]
    capacity_rps: float
    bottleneck: str
    stage_capacity_rps: dict[str, float]
    utilization: dict[str, float]  # per stage, and per partition as 'gpu:<label>'
    latency_ms: dict[str, float]  # mean, p50, p95, p99 (inf when unstable)
    breakdown_ms: dict[str, float]  # mean time per component
    sla: dict[str, float | bool]  # latency_ms (bound), percentile, met, latency_at_rate_ms, sla_bounded_rps
    sla_bounded_rps: float
    batching: dict[str, object]  # policy, Batch_max per partition, Time_queue, knee rule
    partitions: list[dict[str, object]]
    host_cpu: dict[str, float]  # cores used per consumer, free, total
    cost: dict[str, float]
    notes: list[str]


def _finite(x: float) -> float:
    return x if math.isfinite(x) else math.inf


def evaluate_design(design: Design, ctx: Context, rate: Optional[float] = None) -> Evaluation:
    sc = design.scenario
    rate = sc.workload.arrival.rate_rps if rate is None else rate
    cap, bottleneck, caps = capacity(design)
    pt = at_rate(design, rate)
    sla_rps = sla_bounded_rate(design)
    util = {s.name: s.utilization for s in pt.stages}
    util[design.accelerator] = pt.gpu.utilization
    for p, u in zip(design.gpu.partitions, pt.gpu.partition_utilization):
        util[f"{design.accelerator}:{p.label}"] = u
    free = sc.host.cpu_cores - sc.host.cpu_reserved_cores
    cpu = {s.name: min(rate, s.capacity_rps) * s.host_cpu_s for s in design.host_stages}
    host_cpu = {**{f"{k} (cores)": v for k, v in cpu.items()}, "used (cores)": sum(cpu.values()),
                "free for serving (cores)": float(free), "reserved (cores)": float(sc.host.cpu_reserved_cores)}
    cost = _cost(design, ctx, sla_rps if sla_rps > 0 else min(rate, cap))
    lat = {k: v * _MS for k, v in pt.latency_s.items() if k != "sla"}
    sla_ms = design.sla_s * _MS
    met = pt.stable and pt.latency_s["sla"] <= design.sla_s
    parts = [{"label": p.label, "partition": p.name, "provenance": p.provenance, "batch_max": p.max_batch,
              "knee_batch": p.knee_batch, "time_knee_ms": p.knee_time_s * _MS, "batch": b,
              "service_ms": p.service(b) * _MS, "utilization": u}
             for p, b, u in zip(design.gpu.partitions, pt.gpu.batch, pt.gpu.partition_utilization)]
    return Evaluation(
        name=sc.name, rate_rps=rate, stable=pt.stable, unstable_reason=pt.unstable_reason, capacity_rps=cap,
        bottleneck=bottleneck, stage_capacity_rps=caps, utilization=util, latency_ms=lat,
        breakdown_ms={k: v * _MS for k, v in pt.breakdown_s.items()},
        sla={"latency_ms": sla_ms, "percentile": sc.workload.sla.percentile, "met": met,
             "latency_at_rate_ms": pt.latency_s["sla"] * _MS,
             "sla_bounded_rps": sla_rps},
        sla_bounded_rps=sla_rps,
        batching={"policy": design.gpu.policy.value, "time_queue_ms": design.gpu.time_queue_s * _MS,
                  "knee_rule": design.gpu.knee_rule, "batch_max": [p.max_batch for p in design.gpu.partitions]},
        partitions=parts, host_cpu=host_cpu, cost=cost, notes=list(dict.fromkeys(design.notes + _scheduler_notes(design))))


def _scheduler_notes(design: Design) -> tuple[str, ...]:
    kinds = {p.name for p in design.gpu.partitions}
    if design.scheduler.value == "elsa" and len(kinds) > 1:
        return ("ELSA is priced as first-idle-first-served here: the analytic engine does not model its size-aware "
                "routing across unequal partitions; simulate for ELSA's tail (Compare or Partitioning page)",)
    return ()


def _cost(design: Design, ctx: Context, throughput: float) -> dict[str, float]:
    sc = design.scenario
    smartnic = sc.rpc.preset in (RpcPreset.LYNX_SNIC, RpcPreset.SPLITRPC_SNIC)
    if sc.fpga is None:
        defaults = ctx.memo(("prices", sc.gpu.sku, sc.gpu.count, smartnic), lambda: price_defaults(
            ctx.prices_power, sc.gpu.sku, ctx.gpus, sc.gpu.count, smartnic=smartnic))
    else:  # FPGA boards in the GPU slots (engine.fpga)
        from engine.fpga.model import board

        power = board(sc.fpga.board).board_power_w
        defaults = ctx.memo(("fpga-prices", sc.fpga.board, sc.fpga.boards, smartnic), lambda: fpga_price_defaults(
            ctx.prices_power, power, sc.fpga.boards, smartnic=smartnic))
    gpus, fpgas = (sc.gpu.count, 0) if sc.fpga is None else (0, sc.fpga.boards)
    pt = at_rate(design, max(throughput, 1e-6))
    free = sc.host.cpu_cores - sc.host.cpu_reserved_cores
    host_util = min(1.0, sum(min(throughput, s.capacity_rps) * s.host_cpu_s for s in design.host_stages) / free)
    dpu = sc.preprocessing.device == PreprocessDevice.DPU
    dpu_util = next((s.utilization for s in pt.stages if s.name.startswith("preprocess:dpu")), 0.0)
    accel_util = min(1.0, pt.gpu.utilization)
    inputs = inputs_from_spec(sc.cost, defaults, throughput_rps=throughput, gpus=gpus,
                              gpu_util=accel_util, host_util=host_util,
                              dpus=math.ceil(sc.preprocessing.units / 8) if dpu else 0,
                              dpu_util=min(1.0, dpu_util), nics=servers_for(gpus + fpgas), fpgas=fpgas,
                              fpga_util=accel_util)
    r: CostResult = tco(inputs)
    return {"capex_usd": r.capex_usd, "opex_usd": r.opex_usd, "tco_usd": r.tco_usd,
            "queries_per_usd": r.queries_per_usd, "queries_per_joule": r.queries_per_joule,
            "wall_power_w": r.wall_power_w, "throughput_rps": throughput, "years": sc.cost.years,
            **{f"capex:{k}": v for k, v in r.capex_breakdown_usd.items()}}


def cost_at(design: Design, ctx: Context, throughput_rps: float) -> dict[str, float]:
    """The design's CAPEX, OPEX and TCO (USD), queries per USD and per joule when it carries `throughput_rps`
    requests/s (engine.deploy.sizing prices the least hardware at the offered load, not at its SLA-bounded peak)."""
    return _cost(design, ctx, throughput_rps)


def evaluate(scenario: Scenario | dict | str, ctx: Context, rate: Optional[float] = None) -> Evaluation:
    """Validate (if needed) and evaluate a scenario analytically at its arrival rate (or `rate`)."""
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario, ctx.book)
    return evaluate_design(build_design(scenario, ctx), ctx, rate)


def curve(scenario: Scenario, ctx: Context, lo: float, hi: float, n: int) -> list[RatePoint]:
    """The analytic latency-vs-load curve of a scenario."""
    return sweep(build_design(scenario, ctx), lo, hi, n)
