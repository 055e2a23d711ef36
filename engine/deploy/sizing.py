"""The least hardware for a load: GPUs (count and per-GPU MIG layout) and host cores that carry R requests/s
within the SLA, for one GPU type or several ranked by three-year TCO (issue 20).

Method (analytic, then one simulator check):
1. Candidate per-GPU layouts of a type: the scenario's own (when it names this type and a layout), every
   maximal MIG layout of the type (one per distinct instance multiset: the analytic engine prices a layout by
   its instances, not where they sit), and the whole GPU without MIG.
2. Per candidate, the SLA-bounded throughput of ONE GPU with the host never in the way (MAX_CORES cores) gives
   the GPU count ceil(R / per-GPU rate); the whole design with that count is then checked at R (stable, SLA
   percentile within the SLA) and the count moved down while a smaller one still passes (pooled GPUs queue
   better than one) or up while it fails, at most MAX_EXTRA_GPUS beyond the estimate.
3. Among the candidates that need the fewest GPUs, the host cores are the fewest that still meet the SLA at R
   (bisection on host.cpu_cores; the host-CPU model shares the free cores between RPC path and CPU
   preprocessing), and the cheapest by TCO at R wins the type.
4. Types are ranked by TCO at R; the simulator then runs the winner at R and reports its SLA quantile.

A type without latency profiles for the model (or any other reason it cannot be evaluated) is reported with
the reason and left out of the ranking; nothing else stops the answer.
"""

from __future__ import annotations

import math
from typing import Callable, Optional

from pydantic import BaseModel, ConfigDict

from engine.analytic import Context, build_design
from engine.analytic.evaluate import at_rate, capacity, sla_bounded_rate
from engine.analytic.result import cost_at
from engine.catalog import enumerate_layouts
from engine.cost import servers_for
from engine.errors import KneepointError
from engine.partition.pack import pack
from engine.scenario import MAX_CORES, MAX_RATE_RPS, PreprocessDevice, Scenario, load_scenario, require_gpu

#: most GPUs one design may use (the scenario contract's gpu.count limit)
MAX_GPUS = 64
#: GPUs tried beyond ceil(R / per-GPU rate) before a candidate layout is given up
MAX_EXTRA_GPUS = 4
#: requests the simulator runs to confirm the winner (short: one check, not a study)
DEFAULT_CONFIRM_REQUESTS = 20_000
#: most GPU types one sizing compares (each costs a layout sweep of about a second)
MAX_GPU_TYPES = 12
WHOLE_GPU = "whole GPU (MIG off)"


class SizingError(KneepointError):
    """A sizing request that cannot be answered as asked (rate, GPU type list); the message says which."""


class TypeAnswer(BaseModel):
    """The least hardware of one GPU type for the load, or why there is none."""

    model_config = ConfigDict(frozen=True)

    sku: str
    status: str  # 'ok' | 'no design' (nothing meets R within the limits) | 'cannot evaluate' (no profiles, ...)
    reason: Optional[str] = None
    gpus: int = 0
    layout: list[str] = []  # placed per-GPU layout ('1g.10gb@0', ...); [] for the whole GPU
    layout_label: str = ""
    host_cores: int = 0  # host.cpu_cores of the answer (reserved cores included)
    host_cores_used: float = 0.0  # cores the RPC path and preprocessing use at R
    servers: int = 0
    per_gpu_sla_rps: float = 0.0  # SLA-bounded throughput of one GPU of this layout, host never limiting (req/s)
    sla_bounded_rps: float = 0.0  # of the whole answer (req/s)
    capacity_rps: float = 0.0
    bottleneck: str = ""
    latency_at_rate_ms: float = math.inf  # analytic latency at the SLA percentile at R
    tco_usd: float = math.inf
    capex_usd: float = math.inf
    queries_per_usd: float = 0.0
    candidates: int = 0  # layouts tried
    scenario: Optional[dict] = None  # the answer as a scenario (kneepoint.scenario/1), for export-design


class Confirmation(BaseModel):
    """The simulator's verdict on the winner at R."""

    model_config = ConfigDict(frozen=True)

    sku: str
    n_requests: int
    seed: int
    percentile: float
    analytic_ms: float
    simulated_ms: Optional[float]
    ci_ms: Optional[float]
    sla_ms: float
    met: bool
    stable: bool
    note: str = ""


class SizingResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: str
    rate_rps: float
    sla_ms: float
    percentile: float
    answers: list[TypeAnswer]  # ranked: answered types by TCO, then the others in the order given
    best: Optional[str]
    confirmation: Optional[Confirmation] = None


def _gpu_scenario(base: Scenario, sku: str, layout: Optional[list[str]], count: int, cores: int) -> Scenario:
    """`base` on `count` GPUs of `sku`, each cut as `layout` (None: the whole GPU), with `cores` host cores."""
    gpu = {"sku": sku, "count": count, "layout": layout}
    host = base.host.model_copy(update={"cpu_cores": cores}).model_dump(mode="json")
    data = base.model_dump(mode="json", by_alias=True)
    data.update(gpu=gpu, host=host, fpga=None)
    return Scenario.model_validate(data)


def _meets(design, rate: float) -> tuple[bool, float]:
    """(stable and within the SLA at `rate`, latency at the SLA percentile in s)."""
    pt = at_rate(design, rate)
    q = pt.latency_s["sla"]
    return pt.stable and q <= design.sla_s, q


def _candidates(scenario: Scenario, ctx: Context, sku: str) -> list[Optional[tuple[str, ...]]]:
    """Per-GPU layouts to try (instance multisets, sorted; None = the whole GPU)."""
    gpu = ctx.book.catalog.gpu(sku)
    out: list[Optional[tuple[str, ...]]] = []
    if scenario.gpu is not None and scenario.gpu.sku == sku:
        own = scenario.gpu.layouts or ([scenario.gpu.layout] if scenario.gpu.layout else [])
        out += [tuple(sorted(e.split("@")[0] for e in lay)) for lay in own]
    if gpu.mig_capable:
        out += [tuple(sorted(i.profile for i in lay.instances)) for lay in enumerate_layouts(gpu)]
    out.append(None)
    return list(dict.fromkeys(out))


def _least_cores(base: Scenario, ctx: Context, sku: str, layout, gpus: int, rate: float) -> Optional[int]:
    """Fewest host.cpu_cores with which `gpus` GPUs of `layout` meet the SLA at `rate` (None: not even MAX_CORES)."""
    pre = base.preprocessing
    lo = base.host.cpu_reserved_cores + 1 + (pre.cores if pre.device == PreprocessDevice.CPU and pre.cores else 0)

    def ok(cores: int) -> bool:
        return _meets(build_design(_gpu_scenario(base, sku, layout, gpus, cores), ctx), rate)[0]

    if not ok(MAX_CORES):
        return None
    hi = MAX_CORES
    while lo < hi:  # meeting the SLA only gets easier with more cores
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid + 1, hi)
    return hi


def _gpus_needed(base: Scenario, ctx: Context, sku: str, layout, rate: float) -> tuple[int, float, str]:
    """(GPUs that carry `rate` within the SLA with an unlimited host, or 0; one GPU's SLA-bounded rate; why not)."""
    one = build_design(_gpu_scenario(base, sku, layout, 1, MAX_CORES), ctx)
    per_gpu = sla_bounded_rate(one)
    if per_gpu <= 0:
        return 0, 0.0, "no load meets the SLA on one GPU of this layout"
    n = math.ceil(rate / per_gpu)
    if n > MAX_GPUS + MAX_EXTRA_GPUS:
        return 0, per_gpu, f"needs about {n} GPUs, more than {MAX_GPUS}"
    n = min(max(n, 1), MAX_GPUS)

    def ok(k: int) -> bool:
        return _meets(build_design(_gpu_scenario(base, sku, layout, k, MAX_CORES), ctx), rate)[0]

    if ok(n):
        while n > 1 and ok(n - 1):
            n -= 1
        return n, per_gpu, ""
    for k in range(n + 1, min(n + MAX_EXTRA_GPUS, MAX_GPUS) + 1):
        if ok(k):
            return k, per_gpu, ""
    d = build_design(_gpu_scenario(base, sku, layout, min(n + MAX_EXTRA_GPUS, MAX_GPUS), MAX_CORES), ctx)
    _, bottleneck, caps = capacity(d)
    return 0, per_gpu, (f"the {bottleneck} stage caps the design at {caps[bottleneck]:,.0f} req/s"
                        if caps[bottleneck] <= rate else "the SLA is missed at this rate however many GPUs are added")


def _label(layout) -> str:
    if layout is None:
        return WHOLE_GPU
    counts: dict[str, int] = {}
    for p in layout:
        counts[p] = counts.get(p, 0) + 1
    return " + ".join(f"{c} x {p}" for p, c in sorted(counts.items(), key=lambda kv: (-int(kv[0][0]), kv[0])))


def size_type(scenario: Scenario, ctx: Context, sku: str, rate: float) -> TypeAnswer:
    """The least hardware of GPU type `sku` for `rate` requests/s at the scenario's SLA."""
    try:
        gpu = ctx.book.catalog.gpu(sku)
        cands = _candidates(scenario, ctx, sku)
        needed = []
        reasons = []
        for layout in cands:
            n, per_gpu, why = _gpus_needed(scenario, ctx, sku, layout, rate)
            if n:
                needed.append((n, layout, per_gpu))
            else:
                reasons.append(why)
    except KneepointError as e:
        return TypeAnswer(sku=sku, status="cannot evaluate", reason=str(e).split(". ")[0])
    if not needed:
        common = max(set(reasons), key=reasons.count) if reasons else "no candidate layout"
        return TypeAnswer(sku=sku, status="no design", candidates=len(cands),
                          reason=f"no layout of {sku} carries {rate:,.0f} req/s within the SLA: {common}")
    fewest = min(n for n, _, _ in needed)
    best: Optional[TypeAnswer] = None
    for n, layout, per_gpu in needed:
        if n != fewest:
            continue
        cores = _least_cores(scenario, ctx, sku, layout, n, rate)
        if cores is None:
            continue
        placed = pack(gpu, _multiset(layout), gpus=1)[0].labels() if layout else None
        sc = _gpu_scenario(scenario, sku, placed, n, cores)
        design = build_design(sc, ctx)
        ok, q = _meets(design, rate)
        cost = cost_at(design, ctx, rate)
        cap, bottleneck, _ = capacity(design)
        pt = at_rate(design, rate)
        used = sum(min(rate, s.capacity_rps) * s.host_cpu_s for s in design.host_stages)
        scenario_out = sc.model_dump(mode="json", by_alias=True)
        scenario_out["workload"]["arrival"]["rate_rps"] = rate
        answer = TypeAnswer(
            sku=sku, status="ok", gpus=n, layout=placed or [], layout_label=_label(layout), host_cores=cores,
            host_cores_used=used, servers=servers_for(n), per_gpu_sla_rps=per_gpu,
            sla_bounded_rps=sla_bounded_rate(design), capacity_rps=cap, bottleneck=bottleneck,
            latency_at_rate_ms=q * 1e3 if pt.stable else math.inf, tco_usd=cost["tco_usd"],
            capex_usd=cost["capex_usd"], queries_per_usd=cost["queries_per_usd"], candidates=len(cands),
            scenario=scenario_out)
        if best is None or (answer.tco_usd, answer.host_cores) < (best.tco_usd, best.host_cores):
            best = answer
    if best is None:
        return TypeAnswer(sku=sku, status="no design", candidates=len(cands),
                          reason=f"the host stages cannot carry {rate:,.0f} req/s within the SLA even with "
                                 f"{MAX_CORES} cores")
    return best


def _multiset(layout) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in layout:
        out[p] = out.get(p, 0) + 1
    return out


def size(scenario: Scenario | dict | str, ctx: Context, rate: float, skus: Optional[list[str]] = None, *,
         confirm: bool = True, n_requests: int = DEFAULT_CONFIRM_REQUESTS, seed: int = 0,
         progress: Optional[Callable[[float, str], None]] = None) -> SizingResult:
    """The least hardware for `rate` requests/s at the scenario's SLA, per GPU type in `skus` (default: the
    scenario's), ranked by TCO at that rate; the simulator confirms the winner unless `confirm` is False."""
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario, ctx.book)
    require_gpu(scenario, "sizing")
    if not (isinstance(rate, (int, float)) and math.isfinite(rate) and 0 < rate <= MAX_RATE_RPS):
        raise SizingError(f"rate: a number of requests/s in (0, {MAX_RATE_RPS:g}], got {rate!r}")
    skus = list(dict.fromkeys(skus or [scenario.gpu.sku]))
    if len(skus) > MAX_GPU_TYPES:
        raise SizingError(f"gpus: at most {MAX_GPU_TYPES} GPU types at once, got {len(skus)}")
    for s in skus:
        ctx.book.catalog.gpu(s)  # an unknown name is named with the valid ones before any work
    answers = []
    for k, s in enumerate(skus):
        if progress:
            progress(k / (len(skus) + confirm), f"sizing {s}")
        answers.append(size_type(scenario, ctx, s, rate))
    ok = sorted((a for a in answers if a.status == "ok"), key=lambda a: (a.tco_usd, a.gpus))
    ranked = ok + [a for a in answers if a.status != "ok"]
    best = ok[0] if ok else None
    from engine.analytic.design import sla_of

    sla_ms = sla_of(scenario) * 1e3
    confirmation = None
    if best is not None and confirm:
        if progress:
            progress(len(skus) / (len(skus) + 1), f"simulating {best.sku}")
        confirmation = _confirm(best, ctx, rate, n_requests, seed)
    if progress:
        progress(1.0, "done")
    return SizingResult(model=scenario.model, rate_rps=rate, sla_ms=sla_ms,
                        percentile=scenario.workload.sla.percentile, answers=ranked,
                        best=best.sku if best else None, confirmation=confirmation)


def _confirm(answer: TypeAnswer, ctx: Context, rate: float, n_requests: int, seed: int) -> Confirmation:
    """Simulate the answer at `rate` and compare its SLA quantile with the SLA."""
    from engine.sim.run import simulate_design

    sc = load_scenario(answer.scenario, ctx.book)
    design = build_design(sc, ctx)
    sim = simulate_design(design, n_requests, seed=seed, ctx=ctx, rate=rate, stats="numpy")
    p = sc.workload.sla.percentile
    key = f"p{round(design.sla_percentile * 100, 4):g}"  # the simulator's own key for the SLA quantile
    q = sim.latency_ms.get(key)
    ci = sim.ci.get(key)
    sla_ms = design.sla_s * 1e3
    met = bool(sim.stable and q is not None and math.isfinite(q) and q <= sla_ms)
    return Confirmation(sku=answer.sku, n_requests=sim.n_requests, seed=seed, percentile=p,
                        analytic_ms=answer.latency_at_rate_ms, simulated_ms=q if q is not None and math.isfinite(q)
                        else None, ci_ms=ci, sla_ms=sla_ms, met=met, stable=sim.stable,
                        note=sim.unstable_reason or "")
