"""evaluate(scenario) -> Evaluation: the analytic answer for one design at its arrival rate."""

import math
from typing import NamedTuple, Optional

import numpy as np
from pydantic import BaseModel, ConfigDict

from engine.analytic.bestbatch import MigVsWhole, compare_with_whole, comparison_note, flag_note
from engine.analytic.design import Design, contention_of, prepare, with_overhead
from engine.analytic.operating_point import at_rate, capacity, latencies, sla_bounded_rate, sla_limit, utilisations
from engine.analytic.pipeline import Context, build_design
from engine.cost import (COST_BASIS_NAMES, CostResult, PricedRate, fpga_price_defaults, inputs_from_spec,
                         price_defaults, priced_rate, servers_for, tco)
from engine.errors import KneepointError
from engine.fpga.model import board
from engine.profiles.slicelaw import continue_saturated, fit_slice_law, is_saturated
from engine.results import (AnalyticPartition, BatchingSummary, CostSummary, HostCpuUse, LatencySummary, SlaLimit,
                            SlaOutcome)
from engine.scenario import Scenario, load_scenario
from engine.vocab import CostBasis, PreprocessDevice, RpcPreset

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
    utilization: dict[str, float]  # busy fraction per stage, the accelerator (mean of its partitions) and each
    # partition ('gpu:<label>'), as engine.sim reports it; the offered load over capacity is rate_rps / capacity_rps
    latency_ms: LatencySummary  # mean, p50, p95, p99 (inf when unstable)
    breakdown_ms: dict[str, float]  # mean time per component
    sla: SlaOutcome  # bound, percentile, met, the SLA-percentile latency at the rate
    sla_bounded_rps: float
    sla_limit: SlaLimit  # what holds sla_bounded_rps down: a latency floor or a saturating stage
    batching: BatchingSummary  # policy, Batch_max per partition, Time_queue, knee rule
    partitions: list[AnalyticPartition]
    host_cpu: HostCpuUse  # cores used per consumer, used, free for serving, reserved
    cost: CostSummary  # queries_per_usd and queries_per_joule are None when the design serves nothing on the
    # cost basis (cost_no_value_reason says why)
    notes: list[str]
    cost_basis: str = COST_BASIS_NAMES[CostBasis.SLA_BOUNDED]  # the throughput the cost is priced at, in words
    cost_no_value_reason: Optional[str] = None
    # a MIG layout's slices at their best batch under the SLA against the whole GPU at its best batch
    mig_vs_whole: Optional[MigVsWhole] = None

    def headline(self) -> str:
        """The verdict at the offered load and what limits the SLA-bounded throughput, in words."""
        sla = self.sla
        if not self.stable:
            verdict = f"Unstable at the offered load of {self.rate_rps:,.0f} req/s: {self.unstable_reason}."
        elif sla.met:
            verdict = f"Meets the p{sla.percentile:g} {sla.latency_ms:g} ms SLA at {self.rate_rps:,.0f} req/s."
        else:
            verdict = (f"Misses the p{sla.percentile:g} {sla.latency_ms:g} ms SLA at {self.rate_rps:,.0f} req/s "
                       f"(p{sla.percentile:g} {sla.latency_at_rate_ms:,.1f} ms).")
        return f"{verdict} {self.sla_limit.explain(self.rate_rps)}"


def evaluate_design(design: Design, ctx: Context, rate: Optional[float] = None,
                    cost_basis: CostBasis | str = CostBasis.SLA_BOUNDED) -> Evaluation:
    sc = design.scenario
    rate = sc.workload.arrival.rate_rps if rate is None else rate
    cap, bottleneck, caps = capacity(design)
    pt = at_rate(design, rate)
    sla_rps = sla_bounded_rate(design)
    util = {s.name: s.utilization for s in pt.stages}
    # busy fraction, as the simulator reports it: a stage's offered load over capacity is its busy fraction
    # (rho = lambda / (c mu)); a batching accelerator's is the mean of its partitions' busy fractions
    parts_busy = pt.gpu.partition_utilization
    util[design.accelerator] = float(np.mean(parts_busy)) if len(parts_busy) else pt.gpu.utilization
    for p, u in zip(design.gpu.partitions, pt.gpu.partition_utilization):
        util[f"{design.accelerator}:{p.label}"] = u
    free = sc.host.free_cores
    cpu: dict[str, float] = {}  # cores per consumer: what each stage's requests at the rate spend on each
    for stage in design.host_stages:
        for consumer, seconds in stage.host_cpu_consumers().items():
            cpu[consumer] = cpu.get(consumer, 0.0) + min(rate, stage.capacity_rps) * seconds
    host_cpu = HostCpuUse(cores=cpu, used=sum(cpu.values()), free=float(free),
                          reserved=float(sc.host.cpu_reserved_cores))
    priced = priced_rate(cost_basis, sla_rps, cap, rate)
    cost = _cost(design, ctx, priced)
    latency = LatencySummary(**{key: pt.latency_s[key] * _MS for key in LatencySummary.model_fields})
    sla_ms = design.sla_s * _MS
    met = pt.stable and pt.latency_s["sla"] <= design.sla_s
    check = mig_check(design, ctx)
    flagged = () if check is None else tuple(n for n in (comparison_note(check), flag_note(check)) if n)
    flagged += (f"cost priced at {priced.basis}" + (f": no queries per USD or per joule ({priced.no_value_reason})"
                                                    if priced.no_value_reason else ""),)
    parts = [AnalyticPartition(label=part.label, partition=part.name, provenance=part.provenance,
                               batch_max=part.max_batch, knee_batch=part.knee_batch,
                               time_knee_ms=part.knee_time_s * _MS, batch=batch, service_ms=part.service(batch) * _MS,
                               utilization=busy)
             for part, batch, busy in zip(design.gpu.partitions, pt.gpu.batch, pt.gpu.partition_utilization)]
    return Evaluation(
        name=sc.name, rate_rps=rate, stable=pt.stable, unstable_reason=pt.unstable_reason, capacity_rps=cap,
        bottleneck=bottleneck, stage_capacity_rps=caps, utilization=util, latency_ms=latency,
        breakdown_ms={k: v * _MS for k, v in pt.breakdown_s.items()},
        sla=SlaOutcome(latency_ms=sla_ms, percentile=sc.workload.sla.percentile, met=met,
                       latency_at_rate_ms=pt.latency_s["sla"] * _MS),
        sla_bounded_rps=sla_rps, sla_limit=sla_limit(design, sla_rps),
        batching=BatchingSummary(policy=design.gpu.policy.value, time_queue_ms=design.gpu.time_queue_s * _MS,
                                 knee_rule=design.gpu.knee_rule,
                                 batch_max=[part.max_batch for part in design.gpu.partitions]),
        partitions=parts, host_cpu=host_cpu, cost=cost, cost_basis=priced.basis,
        cost_no_value_reason=priced.no_value_reason, mig_vs_whole=check,
        notes=list(dict.fromkeys(design.notes + _scheduler_notes(design) + flagged)))


class Ranked(NamedTuple):
    """What a search ranks a design by, as evaluate_design gives it (the same numbers, bit for bit)."""

    capacity_rps: float
    bottleneck: str
    stable: bool
    p99_ms: float  # at the offered rate
    sla_latency_ms: float  # at the SLA percentile and the offered rate
    sla_met: bool
    sla_bounded_rps: float
    cost: CostSummary


RANKED_PERCENTILES = (0.99,)  # the search's p99 at the offered rate


def ranked(design: Design, ctx: Context) -> Ranked:
    """evaluate_design's numbers that a search ranks by, at the offered rate and priced at the SLA-bounded
    throughput, without what only a page shows (the MIG-vs-whole check, the SLA limit's split by stage, host CPU,
    the other percentiles): several times cheaper a design than evaluate_design, with the same values."""
    rate = design.scenario.workload.arrival.rate_rps
    cap, bottleneck, caps = capacity(design)
    stable = not any(rate >= c for c in caps.values())
    lat = latencies(design, rate, RANKED_PERCENTILES)
    sla_rps = sla_bounded_rate(design)
    cost = _cost(design, ctx, priced_rate(CostBasis.SLA_BOUNDED, sla_rps, cap, rate))
    return Ranked(capacity_rps=cap, bottleneck=bottleneck, stable=stable, p99_ms=lat["p99"] * _MS,
                  sla_latency_ms=lat["sla"] * _MS, sla_met=stable and lat["sla"] <= design.sla_s,
                  sla_bounded_rps=sla_rps, cost=cost)


def mig_check(design: Design, ctx: Context) -> Optional[MigVsWhole]:
    """A MIG design's slices and its whole GPU, each at the batch it can best use under the SLA (None for a
    whole GPU, GPU% shares, FPGAs, or when the whole GPU has no curve)."""
    sc = design.scenario
    if contention_of(sc) is None:
        return None
    key = ("whole-gpu", sc.model, sc.precision, sc.gpu.sku, sc.workload.input_len, sc.workload.sla.percentile)
    try:
        whole = ctx.memo(key, lambda: prepare(sc.model_copy(update={"gpu": sc.gpu.model_copy(
            update={"layout": None, "layouts": None})}), ctx.book))
    except KneepointError:
        return None
    # the whole GPU's extended partition depends only on it and the RPC path's overhead: one slice-law fit per pair
    part = ctx.memo(("whole-extended", key, design.gpu_overhead_s),
                    lambda: _extended(with_overhead(whole.gpu, design.gpu_overhead_s).partitions[0], whole, ctx))
    return compare_with_whole(design.gpu.partitions, part, design.sla_s)


def _extended(part, whole: Design, ctx: Context):
    """The whole GPU's partition continued past its measured batches along the saturated slope (as the slices'
    slice law is), up to the memory limit, so both sides of the comparison may use large batches."""
    sc = whole.scenario
    length = whole.gpu.input_len
    try:
        curve = ctx.book.curve(sc.model, sc.gpu.sku, "full", sc.precision, input_len=_profiled(ctx, sc, length))
    except KneepointError:
        return part
    limit = ctx.book.memory_limit(sc.model, sc.gpu.sku, "full", length)
    n = len(part.mean_s)
    if curve.fit is not None or limit is None or limit <= n or len(curve.batches) < 2:
        return part
    fit = fit_slice_law(curve.batches, curve.mean_s)
    if not is_saturated(fit, curve.batches, curve.mean_s):
        return part
    more = np.arange(n + 1, limit + 1)
    mean = continue_saturated(fit, n, float(part.mean_s[-1]), more)
    tail = mean * float(part.tail_s[-1] / part.mean_s[-1])
    return part.model_copy(update={"mean_s": np.concatenate([part.mean_s, mean]),
                                   "tail_s": np.concatenate([part.tail_s, tail])})


def _profiled(ctx: Context, sc: Scenario, length: Optional[float]) -> Optional[float]:
    """The profiled input length the GPU side priced at (None for fixed-size inputs)."""
    if length is None:
        return None
    lengths = ctx.book.profiled_lengths(sc.model, sc.gpu.sku, "full", sc.precision)
    return next((l for l in lengths if l >= length - 1e-9), lengths[-1])


def _scheduler_notes(design: Design) -> tuple[str, ...]:
    kinds = {p.name for p in design.gpu.partitions}
    if design.scheduler.value == "elsa" and len(kinds) > 1:
        return ("ELSA is priced as first-idle-first-served here: the analytic engine does not model its size-aware "
                "routing across unequal partitions; simulate for ELSA's tail (Compare or Partitioning page)",)
    return ()


def _cost(design: Design, ctx: Context, priced: PricedRate) -> CostSummary:
    """TCO and efficiency at the priced rate; queries per USD and per joule are None when the design serves
    nothing on the basis (e.g. it meets the SLA at no load)."""
    throughput = priced.throughput_rps
    sc = design.scenario
    smartnic = sc.rpc.preset in (RpcPreset.LYNX_SNIC, RpcPreset.SPLITRPC_SNIC)
    if sc.fpga is None:
        defaults = ctx.memo(("prices", sc.gpu.sku, sc.gpu.count, smartnic), lambda: price_defaults(
            ctx.prices_power, sc.gpu.sku, ctx.gpus, sc.gpu.count, smartnic=smartnic))
    else:  # FPGA boards in the GPU slots (engine.fpga)
        power = board(sc.fpga.board).board_power_w
        defaults = ctx.memo(("fpga-prices", sc.fpga.board, sc.fpga.boards, smartnic), lambda: fpga_price_defaults(
            ctx.prices_power, power, sc.fpga.boards, smartnic=smartnic))
    gpus, fpgas = (sc.gpu.count, 0) if sc.fpga is None else (0, sc.fpga.boards)
    cap = capacity(design)[0]
    stage_util, gpu_util = utilisations(design, min(max(throughput, 1e-6), cap * (1 - 1e-9)))
    free = sc.host.free_cores
    host_util = min(1.0, sum(min(throughput, s.capacity_rps) * s.host_cpu_s for s in design.host_stages) / free)
    dpu = sc.preprocessing.device == PreprocessDevice.DPU
    dpu_util = next((u for name, u in stage_util.items() if name.startswith("preprocess:dpu")), 0.0)
    accel_util = min(1.0, gpu_util)
    inputs = inputs_from_spec(sc.cost, defaults, throughput_rps=throughput, gpus=gpus,
                              gpu_util=accel_util, host_util=host_util,
                              dpus=math.ceil(sc.preprocessing.units / 8) if dpu else 0,
                              dpu_util=min(1.0, dpu_util), nics=servers_for(gpus + fpgas), fpgas=fpgas,
                              fpga_util=accel_util)
    result: CostResult = tco(inputs)
    none = priced.no_value_reason is not None
    return CostSummary(capex_usd=result.capex_usd, opex_usd=result.opex_usd, tco_usd=result.tco_usd,
                       queries_per_usd=None if none else result.queries_per_usd,
                       queries_per_joule=None if none else result.queries_per_joule,
                       wall_power_w=result.wall_power_w, throughput_rps=throughput, years=sc.cost.years,
                       capex_breakdown_usd=dict(result.capex_breakdown_usd))


def cost_at(design: Design, ctx: Context, throughput_rps: float) -> CostSummary:
    """The design's CAPEX, OPEX and TCO (USD), queries per USD and per joule when it carries `throughput_rps`
    requests/s (engine.deploy.sizing prices the least hardware at the offered load, not at its SLA-bounded peak)."""
    priced = PricedRate(throughput_rps=throughput_rps, basis=COST_BASIS_NAMES[CostBasis.OFFERED],
                        no_value_reason=None)
    return _cost(design, ctx, priced)


def evaluate(scenario: Scenario | dict | str, ctx: Context, rate: Optional[float] = None,
             cost_basis: CostBasis | str = CostBasis.SLA_BOUNDED) -> Evaluation:
    """Validate (if needed) and evaluate a scenario analytically at its arrival rate (or `rate`), priced at
    `cost_basis` (default: the SLA-bounded throughput)."""
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario, ctx.book)
    return evaluate_design(build_design(scenario, ctx), ctx, rate, cost_basis)
