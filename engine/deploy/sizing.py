"""The least hardware for a load: GPUs (count and per-GPU MIG layout) and host cores that carry R requests/s
within the SLA, for one GPU type or several ranked by three-year TCO (issue 20).

Method (analytic, then one simulator check):
1. Candidate per-GPU layouts of a type: the scenario's own (when it names this type and a layout), every
   maximal MIG layout of the type (one per distinct instance multiset: the analytic engine prices a layout by
   its instances, not where they sit), and the whole GPU without MIG.
2. Per candidate, the SLA-bounded throughput of ONE GPU with the host never in the way (MAX_CORES cores, and
   MAX_DPU_UNITS DPU compute units when preprocessing runs on a DPU) estimates the GPU count ceil(R / per-GPU
   rate). A server holds at most GPUS_PER_SERVER GPUs and has one host (cores, NIC, DPU cards); k identical
   servers split the traffic evenly, so each is one design at R / k. From the fewest servers the estimate
   allows (and up to MAX_EXTRA_SERVERS more, for a host stage that caps a server first), the GPUs per server
   are checked at R / k (stable, SLA percentile within the SLA), moved down while fewer still pass (pooled
   GPUs queue better than one) or up while they fail; the fewest GPUs in all wins.
3. Among the candidates that need the fewest GPUs, each server's host is the least that still meets the SLA
   at R / k (with a DPU, the fewest compute units first; then the fewest host.cpu_cores, by bisection; the
   host-CPU model shares the free cores between RPC path and CPU preprocessing), and the cheapest by TCO at R
   wins the type.
4. Types are ranked by TCO at R; the simulator then runs one server of the winner at R / k and reports its
   SLA quantile (the servers are independent under an even random split).

A type without latency profiles for the model (or any other reason it cannot be evaluated) is reported with
the reason and left out of the ranking; nothing else stops the answer.
"""

from __future__ import annotations

import math
from typing import Callable, Literal, Optional

from pydantic import BaseModel, ConfigDict

from engine.analytic import Context, build_design
from engine.analytic.operating_point import at_rate, capacity, sla_bounded_rate
from engine.analytic.evaluate import cost_at
from engine.catalog import enumerate_layouts
from engine.cost import GPUS_PER_SERVER
from engine.errors import KneepointError
from engine.partition.pack import pack
from engine.contract import MAX_CORES, MAX_RATE_RPS
from engine.scenario import GpuSpec, load_scenario, PreprocessingSpec, require_gpu, Scenario
from engine.vocab import PreprocessDevice
from engine.analytic.sla import sla_of
from engine.sim.run import simulate_design



def _contract_limit(model, field: str) -> int:
    """The upper bound (le) the scenario contract declares for `field` of `model`: limits live there, once."""
    return next(int(m.le) for m in model.model_fields[field].metadata if getattr(m, "le", None) is not None)


#: most GPUs one design may use (the scenario contract's gpu.count limit)
MAX_GPUS = _contract_limit(GpuSpec, "count")
#: servers tried beyond the fewest the GPU estimate allows (a host stage such as the NIC may cap a server first)
MAX_EXTRA_SERVERS = 3
#: requests the simulator runs to confirm the winner (short: one check, not a study)
DEFAULT_CONFIRM_REQUESTS = 20_000
#: most DPU compute units a design may use (the contract's preprocessing.units limit: 8 cards of 8 CUs)
MAX_DPU_UNITS = _contract_limit(PreprocessingSpec, "units")
#: most GPU types one sizing compares (each costs a layout sweep of about a second)
MAX_GPU_TYPES = 12
WHOLE_GPU = "whole GPU (MIG off)"


class SizingError(KneepointError):
    """A sizing request that cannot be answered as asked (rate, GPU type list); the message says which."""


class TypeAnswer(BaseModel):
    """The least hardware of one GPU type for the load, or why there is none."""

    model_config = ConfigDict(frozen=True)

    sku: str
    status: Literal["ok", "no design", "cannot evaluate"]  # no design: nothing meets R within the limits;
    # cannot evaluate: the engine cannot price this type for the model (no latency profiles, ...)
    reason: Optional[str] = None
    gpus: int = 0  # in all (servers x gpus_per_server)
    gpus_per_server: int = 0
    server_rate_rps: float = 0.0  # the share of the rate each server carries (req/s)
    layout: list[str] = []  # placed per-GPU layout ('1g.10gb@0', ...); [] for the whole GPU
    layout_label: str = ""
    host_cores: int = 0  # host.cpu_cores of each server (reserved cores included)
    host_cores_used: float = 0.0  # cores the RPC path and preprocessing of one server use at its share of R
    dpu_units: Optional[int] = None  # DPU compute units per server (preprocessing on a DPU; 8 per card), else None
    servers: int = 0  # identical servers, each `scenario` at server_rate_rps
    per_gpu_sla_rps: float = 0.0  # SLA-bounded throughput of one GPU of this layout, host never limiting (req/s)
    sla_bounded_rps: float = 0.0  # of all servers together (req/s)
    capacity_rps: float = 0.0  # of all servers together (req/s)
    bottleneck: str = ""
    latency_at_rate_ms: float = math.inf  # analytic latency at the SLA percentile (one server at its share)
    tco_usd: float = math.inf  # of all servers, at R
    capex_usd: float = math.inf
    queries_per_usd: float = 0.0
    curves: list[str] = []  # provenance of the service-time curves priced ('published', 'derived', 'estimated')
    candidates: int = 0  # layouts tried
    scenario: Optional[dict] = None  # one server as a scenario (kneepoint.scenario/1) at its share, for export-design


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


def _gpu_scenario(base: Scenario, sku: str, layout: Optional[list[str]], count: int, cores: int,
                  units: Optional[int] = None) -> Scenario:
    """`base` on `count` GPUs of `sku`, each cut as `layout` (None: the whole GPU), with `cores` host cores and,
    when preprocessing runs on a DPU, `units` DPU compute units (None: MAX_DPU_UNITS, never in the way)."""
    gpu = {"sku": sku, "count": count, "layout": layout}
    host = base.host.model_copy(update={"cpu_cores": cores}).model_dump(mode="json")
    data = base.model_dump(mode="json", by_alias=True)
    data.update(gpu=gpu, host=host, fpga=None)
    if base.preprocessing.device == PreprocessDevice.DPU:
        data["preprocessing"]["units"] = MAX_DPU_UNITS if units is None else units
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
        out += [tuple(sorted(entry.split("@")[0] for entry in layout)) for layout in scenario.gpu.declared_layouts()]
    if gpu.mig_capable:
        out += [tuple(sorted(i.profile for i in lay.instances)) for lay in enumerate_layouts(gpu)]
    out.append(None)
    return list(dict.fromkeys(out))


def _least_host(base: Scenario, ctx: Context, sku: str, layout, gpus: int,
                rate: float) -> Optional[tuple[int, Optional[int]]]:
    """(fewest host.cpu_cores, fewest DPU units or None without a DPU) with which `gpus` GPUs of `layout` meet
    the SLA at `rate`; None when not even MAX_CORES and MAX_DPU_UNITS do. Units first (with every core), then
    cores with those units: each only makes meeting the SLA easier, so both bisections are exact."""
    pre = base.preprocessing
    dpu = pre.device == PreprocessDevice.DPU

    def ok(cores: int, units: Optional[int]) -> bool:
        return _meets(build_design(_gpu_scenario(base, sku, layout, gpus, cores, units), ctx), rate)[0]

    if not ok(MAX_CORES, None):  # another host stage (the link, a SmartNIC) is in the way
        return None
    units = _least(1, MAX_DPU_UNITS, lambda u: ok(MAX_CORES, u)) if dpu else None
    lo = base.host.cpu_reserved_cores + 1 + (pre.cores if pre.device == PreprocessDevice.CPU and pre.cores else 0)
    return _least(lo, MAX_CORES, lambda c: ok(c, units)), units


def _least(lo: int, hi: int, ok: Callable[[int], bool]) -> int:
    """Smallest k in lo..hi with ok(k), given ok(hi) and that ok only turns true as k grows."""
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid + 1, hi)
    return hi


def _gpus_needed(base: Scenario, ctx: Context, sku: str, layout, rate: float) -> tuple[int, int, float, str]:
    """(servers, GPUs per server) that carry `rate` within the SLA with an unlimited host, or (0, 0); one GPU's
    SLA-bounded rate; why not.

    A server holds at most GPUS_PER_SERVER GPUs and one host (its cores, NIC, DPU cards); k servers split the
    traffic evenly (a random split of Poisson arrivals is Poisson), so each is one design at rate / k. The
    fewest GPUs in all wins, over the fewest servers the GPU estimate allows and a few more (a host stage, e.g.
    the NIC, may cap one server before its GPUs do)."""
    one = build_design(_gpu_scenario(base, sku, layout, 1, MAX_CORES), ctx)
    per_gpu = sla_bounded_rate(one)
    if per_gpu <= 0:
        return 0, 0, 0.0, "no load meets the SLA on one GPU of this layout"
    estimate = math.ceil(rate / per_gpu)
    if estimate > MAX_GPUS:
        return 0, 0, per_gpu, f"needs about {estimate} GPUs, more than {MAX_GPUS}"
    first = max(1, math.ceil(estimate / GPUS_PER_SERVER))
    best: Optional[tuple[int, int]] = None
    for k in range(first, first + MAX_EXTRA_SERVERS + 1):
        if best is not None and k * math.ceil(estimate / k) >= best[0] * best[1]:
            break  # more servers cannot need fewer GPUs than found
        g = _server_gpus(base, ctx, sku, layout, rate / k, math.ceil(estimate / k))
        if g and k * g <= MAX_GPUS and (best is None or k * g < best[0] * best[1]):
            best = (k, g)
    if best is not None:
        return best[0], best[1], per_gpu, ""
    d = build_design(_gpu_scenario(base, sku, layout, GPUS_PER_SERVER, MAX_CORES), ctx)
    _, bottleneck, caps = capacity(d)
    limit = caps[bottleneck] * (first + MAX_EXTRA_SERVERS)
    return 0, 0, per_gpu, (f"the {bottleneck} stage caps a server at {caps[bottleneck]:,.0f} req/s, "
                           f"{first + MAX_EXTRA_SERVERS} servers at {limit:,.0f}" if limit <= rate else
                           "the SLA is missed at this rate however many GPUs are added")


def _server_gpus(base: Scenario, ctx: Context, sku: str, layout, rate: float, estimate: int) -> int:
    """Fewest GPUs (1..GPUS_PER_SERVER) of one server that carry `rate` within the SLA with an unlimited host,
    searched from `estimate`; 0 if none."""
    def ok(k: int) -> bool:
        return _meets(build_design(_gpu_scenario(base, sku, layout, k, MAX_CORES), ctx), rate)[0]

    n = min(max(estimate, 1), GPUS_PER_SERVER)
    if ok(n):
        while n > 1 and ok(n - 1):  # pooled GPUs queue better than one: fewer may do
            n -= 1
        return n
    return next((k for k in range(n + 1, GPUS_PER_SERVER + 1) if ok(k)), 0)


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
            k, g, per_gpu, why = _gpus_needed(scenario, ctx, sku, layout, rate)
            if k:
                needed.append((k * g, k, g, layout, per_gpu))
            else:
                reasons.append(why)
    except KneepointError as e:
        return TypeAnswer(sku=sku, status="cannot evaluate", reason=str(e).split(". ")[0])
    if not needed:
        common = max(set(reasons), key=reasons.count) if reasons else "no candidate layout"
        return TypeAnswer(sku=sku, status="no design", candidates=len(cands),
                          reason=f"no layout of {sku} carries {rate:,.0f} req/s within the SLA: {common}")
    fewest = min(t[0] for t in needed)
    priced = []  # (TCO at the rate, host, servers, GPUs per server, layout, per-GPU rate) of every tie
    for total, k, g, layout, per_gpu in needed:
        if total != fewest:
            continue
        host = _least_host(scenario, ctx, sku, layout, g, rate / k)
        if host is None:
            continue
        design = build_design(_gpu_scenario(scenario, sku, layout, g, *host), ctx)
        priced.append((k * cost_at(design, ctx, rate / k).tco_usd, host, k, g, layout, per_gpu))
    if not priced:
        return TypeAnswer(sku=sku, status="no design", candidates=len(cands),
                          reason=f"the host stages cannot carry {rate:,.0f} req/s within the SLA even with "
                                 f"{MAX_CORES} cores")
    _, host, k, g, layout, per_gpu = min(priced, key=lambda t: (t[0], t[2], t[1][0], _label(t[4])))
    return _answer(scenario, ctx, gpu, layout, k, g, host, per_gpu, rate, len(cands))


def _answer(scenario: Scenario, ctx: Context, gpu, layout, servers: int, per_server: int,
            host: tuple[int, Optional[int]], per_gpu: float, rate: float, candidates: int) -> TypeAnswer:
    """The full answer for the chosen layout, servers, GPUs per server and host (placed layout, latency, cost)."""
    placed = pack(gpu, _multiset(layout), gpus=1)[0].labels() if layout else None
    cores, units = host
    share = rate / servers
    sc = _gpu_scenario(scenario, gpu.sku, placed, per_server, cores, units)
    design = build_design(sc, ctx)
    _, q = _meets(design, share)
    cost = cost_at(design, ctx, share)
    cap, bottleneck, _ = capacity(design)
    used = sum(min(share, s.capacity_rps) * s.host_cpu_s for s in design.host_stages)
    scenario_out = sc.model_dump(mode="json", by_alias=True)
    scenario_out["workload"]["arrival"]["rate_rps"] = share
    return TypeAnswer(
        sku=gpu.sku, status="ok", gpus=servers * per_server, gpus_per_server=per_server, layout=placed or [],
        layout_label=_label(layout), host_cores=cores, host_cores_used=used, dpu_units=units, servers=servers,
        server_rate_rps=share, per_gpu_sla_rps=per_gpu, sla_bounded_rps=servers * sla_bounded_rate(design),
        capacity_rps=servers * cap, bottleneck=bottleneck, latency_at_rate_ms=q * 1e3,
        tco_usd=servers * cost.tco_usd, capex_usd=servers * cost.capex_usd,
        queries_per_usd=cost.queries_per_usd, candidates=candidates, scenario=scenario_out,
        curves=sorted({p.provenance for p in design.gpu.partitions}))


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
    """Simulate one server of the answer at its share of `rate` and compare its SLA quantile with the SLA."""
    sc = load_scenario(answer.scenario, ctx.book)
    design = build_design(sc, ctx)
    sim = simulate_design(design, n_requests, seed=seed, ctx=ctx, rate=answer.server_rate_rps, stats="numpy")
    p = sc.workload.sla.percentile
    q = sim.sla.latency_at_rate_ms
    ci = sim.ci.sla
    sla_ms = design.sla_s * 1e3
    met = bool(sim.stable and q is not None and math.isfinite(q) and q <= sla_ms)
    return Confirmation(sku=answer.sku, n_requests=sim.n_requests, seed=seed, percentile=p,
                        analytic_ms=answer.latency_at_rate_ms, simulated_ms=q if q is not None and math.isfinite(q)
                        else None, ci_ms=ci, sla_ms=sla_ms, met=met, stable=sim.stable,
                        note=sim.unstable_reason or "")
