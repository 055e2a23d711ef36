"""The analytic answer for a design: capacity, bottleneck, latency, SLA-bounded throughput, over rates."""

import math
from typing import Optional

import numpy as np
from pydantic import BaseModel, ConfigDict

from engine.analytic.design import Design
from engine.analytic.host_point import StagePoint, host_stage_point
from engine.analytic.rate_scan import prefetch_gpu_points, scans_as_array
from engine.analytic.rates import GpuPoint, gpu_capacity_rps, gpu_point
from engine.analytic.sla_bound import BOUND_MARGIN, host_waits, sla_latency_lower_bound, sla_latency_lower_bounds
from engine.profiles.tails import lognormal_quantile, percentile_key
from engine.results import SlaLimit, SlaLimitKind

PERCENTILES = (0.50, 0.95, 0.99)
#: below this fraction of the capacity a queue waits less than one service time on average (M/M/1: rho / (1 -
#: rho) <= 1), so an SLA lost there is lost to the latency the path has without load, not to saturation
FLOOR_LOAD = 0.5
_MS = 1e3


class RatePoint(BaseModel):
    """The pipeline at one arrival rate."""

    model_config = ConfigDict(frozen=True)

    rate_rps: float
    stable: bool
    unstable_reason: Optional[str]
    latency_s: dict[str, float]  # mean, p50, p95, p99, sla (at the SLA percentile)
    breakdown_s: dict[str, float]  # mean time per component
    stages: tuple[StagePoint, ...]
    gpu: GpuPoint


def capacity(design: Design) -> tuple[float, str, dict[str, float]]:
    """(pipeline capacity in requests/s, bottleneck stage, capacity of every stage)."""
    caps = {s.name: s.capacity_rps for s in design.host_stages}
    caps[design.accelerator] = gpu_capacity_rps(design.gpu, design.q_mean, design.q_pmf, design.scheduler)
    name = min(caps, key=caps.get)
    return caps[name], name, caps


def _quantile(mean: float, excess: list[float]) -> float:
    """Mean plus the components' excesses over their means added in quadrature (signed, so a median can
    fall below the mean when the components are skewed)."""
    if not math.isfinite(mean) or any(not math.isfinite(e) for e in excess):
        return math.inf
    s = sum(e * abs(e) for e in excess)
    return mean + math.copysign(math.sqrt(abs(s)), s)


def _point(design: Design, rate: float, p: float):
    stages = tuple(host_stage_point(s, rate, p) for s in design.host_stages)
    g = gpu_point(design.gpu, design.scheduler, rate, design.q_mean, design.q_pmf, p)
    excess = [st.wait_q_s - st.wait_mean_s for st in stages] + [st.service_q_s - st.service_s for st in stages]
    excess += [g.batching_wait_q_s - g.batching_wait_mean_s, g.queue_wait_q_s - g.queue_wait_mean_s,
               g.service_q_s - g.service_mean_s]
    return stages, g, excess


def sla_latency_by_stage(design: Design, rate: float) -> dict[str, float]:
    """The latency (s) at the SLA percentile and `rate` requests/s, split over the stages that make it: each host
    stage (its fixed time, mean wait and service), 'batching' (the wait for a batch to form) and the accelerator
    (its queue and service). Each stage carries its mean plus its share of the tail: the excesses add in
    quadrature (_quantile), so a stage's share of sqrt(sum e_i |e_i|) is e_i |e_i| / sum e_j |e_j|. The values
    sum to sla_latency(design, rate)."""
    stages, g, excess = _point(design, rate, design.sla_percentile)
    means = {s.name: s.fixed_s + s.wait_mean_s + s.service_s for s in stages}
    means["batching"] = g.batching_wait_mean_s
    means[design.accelerator] = g.queue_wait_mean_s + g.service_mean_s
    owners = [s.name for s in stages] * 2 + ["batching", design.accelerator, design.accelerator]
    total = _quantile(sum(means.values()), excess) - sum(means.values())
    weights = [e * abs(e) for e in excess]
    whole = sum(weights)
    out = dict(means)
    for owner, weight in zip(owners, weights):
        out[owner] += total * weight / whole if whole and math.isfinite(total) else 0.0
    return out


def sla_limit(design: Design, sla_rps: float) -> SlaLimit:
    """Why the design's SLA-bounded throughput is what it is (sla_rps from sla_bounded_rate), as
    engine.results.SlaLimit: a latency floor (no load meets the SLA, or it is lost below FLOOR_LOAD of the
    capacity, where queueing costs less than the service itself) or saturation (the SLA holds until queueing
    at the bottleneck stage takes it). The floor is the SLA-percentile latency at the lowest rate the
    SLA-bounded search scans (scan_rates), split by stage (sla_latency_by_stage)."""
    cap, bottleneck, _ = capacity(design)
    low = float(scan_rates(design, cap)[0])
    by_stage = sla_latency_by_stage(design, low)
    kind = SlaLimitKind.LATENCY_FLOOR if sla_rps < FLOOR_LOAD * cap else SlaLimitKind.SATURATION
    return SlaLimit(kind=kind, sla_ms=design.sla_s * _MS, percentile=design.sla_percentile * 100,
                    sla_bounded_rps=sla_rps, capacity_rps=cap, bottleneck=bottleneck,
                    floor_rate_rps=low, floor_ms=sum(by_stage.values()) * _MS,
                    floor_by_stage_ms={name: v * _MS for name, v in sorted(by_stage.items(), key=lambda kv: -kv[1])
                                       if v > 0})


def utilisations(design: Design, rate: float) -> tuple[dict[str, float], float]:
    """({host stage: busy fraction}, the accelerator's utilisation) at `rate` requests/s, as at_rate's points give
    them (StagePoint.utilization, GpuPoint.utilization: the rate over the capacity), without working out the waits:
    what pricing needs."""
    gpu_cap = gpu_capacity_rps(design.gpu, design.q_mean, design.q_pmf, design.scheduler)
    return {s.name: rate / s.capacity_rps for s in design.host_stages}, rate / gpu_cap


def sla_latency(design: Design, rate: float) -> float:
    """Latency (s) at the SLA percentile and `rate` requests/s (the bisection's inner loop)."""
    return mean_and_sla(design, rate)[1]


def mean_and_sla(design: Design, rate: float) -> tuple[float, float]:
    """(mean latency, latency at the SLA percentile) in seconds at `rate`: the sweep's lean path."""
    stages, g, excess = _point(design, rate, design.sla_percentile)
    mean = sum(s.fixed_s + s.wait_mean_s + s.service_s for s in stages)
    mean += g.batching_wait_mean_s + g.queue_wait_mean_s + g.service_mean_s
    return mean, _quantile(mean, excess)


def at_rate(design: Design, rate: float) -> RatePoint:
    """Latency (mean and tails) and per-stage state at `rate` requests/s."""
    if rate <= 0:
        raise ValueError(f"the arrival rate must be positive, got {rate}")
    cap, bottleneck, caps = capacity(design)
    stages, g, _ = _point(design, rate, design.sla_percentile)
    unstable = [name for name, c in caps.items() if rate >= c]
    breakdown = _breakdown(design, stages, g)
    lat = latencies(design, rate, PERCENTILES, breakdown)
    reason = None
    if unstable:
        reason = (f"utilisation >= 1 at {rate:,.0f} requests/s: "
                  + ", ".join(f"{n} (capacity {caps[n]:,.0f}/s)" for n in unstable))
    return RatePoint(rate_rps=rate, stable=not unstable, unstable_reason=reason, latency_s=lat,
                     breakdown_s=breakdown, stages=stages, gpu=g)


def _breakdown(design: Design, stages: tuple[StagePoint, ...], g: GpuPoint) -> dict[str, float]:
    """Mean time (s) per component: each host stage's fixed time, wait and service, then the batching wait and the
    accelerator's queue and service (RatePoint.breakdown_s)."""
    breakdown = {}
    for s in stages:
        breakdown[f"{s.name}_fixed"] = s.fixed_s
        breakdown[f"{s.name}_wait"] = s.wait_mean_s
        breakdown[s.name] = s.service_s
    acc = design.accelerator
    breakdown.update({"batching_wait": g.batching_wait_mean_s, f"{acc}_queue": g.queue_wait_mean_s,
                      f"{acc}_service": g.service_mean_s})
    return breakdown


def latencies(design: Design, rate: float, percentiles=PERCENTILES,
              breakdown: Optional[dict[str, float]] = None) -> dict[str, float]:
    """{'mean', one key per percentile (percentile_key: 0.999 -> 'p99.9', as the simulator names it), 'sla'}: the
    latency (s) at `rate` requests/s at each of `percentiles` and the SLA percentile (RatePoint.latency_s; the
    search asks only for the few it ranks by). `breakdown`: _breakdown's, if already worked out."""
    excess = {}  # the SLA percentile's excesses, if _point was already asked for them here
    if breakdown is None:
        stages, g, excess[design.sla_percentile] = _point(design, rate, design.sla_percentile)
        breakdown = _breakdown(design, stages, g)
    mean = sum(breakdown.values())
    lat = {"mean": mean}
    for p in sorted(set(percentiles) | {design.sla_percentile}):
        q = _quantile(mean, excess[p] if p in excess else _point(design, rate, p)[2])
        lat[percentile_key(p)] = q
        if p == design.sla_percentile:
            lat["sla"] = q
    return lat


SCAN_POINTS = 48  # at least this many rates scanned below capacity before the bisection
SCAN_ONE_BY_ONE = 4  # top scanned rates evaluated one at a time before the rest are prefetched as one array
SLA_RTOL = 1e-6  # the bisection stops when its bracket is this small relative to the rate


def sla_bounded_rate(design: Design, points: int = SCAN_POINTS, rtol: float = SLA_RTOL) -> float:
    """Largest arrival rate (requests/s) whose SLA-percentile latency meets the SLA; 0 if none does.

    Latency need not grow monotonically with rate (a batch timeout fills faster at higher load), so the
    rates up to capacity are scanned first (scan_rates) and the last passing rate is refined against the
    next failing one, to `rtol` relative, by regula falsi with the Illinois modification (Dowell and Jarratt,
    BIT 11, 1971): the bracket always holds a passing and a failing rate, as in bisection, but a smooth
    latency curve takes ~5 evaluations instead of ~15. Each step stays rtol / 2 inside the bracket's ends, so
    the end regula falsi converges to is followed by a step just beyond the root that closes the bracket (as
    Brent's method keeps a step of at least its tolerance). A step that does not shrink the bracket by half is
    followed by a step just beyond the root the last two passing rates point to (_secant_root), or, if the
    previous such step did not close the bracket, by a bisection step, so a latency that jumps (a regime change)
    costs at most twice what bisection does.
    """
    if sla_latency_lower_bound(design) * (1 - BOUND_MARGIN) > design.sla_s:
        return 0.0  # no rate can meet the SLA: the scan below would find none passing (what it returns then)
    cap, _, _ = capacity(design)
    grid = scan_rates(design, cap, points)
    sla = design.sla_s
    i, excess = _last_passing(design, grid)
    if i is None:
        return 0.0
    if i + 1 >= len(grid):
        return float(_bisect_up(design, grid[i], cap, rtol))
    if i + 1 not in excess:  # failed on its lower bound alone (_last_passing): the refinement starts from its value
        excess[i + 1] = sla_latency(design, float(grid[i + 1])) - sla
    lo, hi, e_lo, e_hi = float(grid[i]), float(grid[i + 1]), excess[i], excess[i + 1]
    side, passed, closed_last = 0, [(lo, e_lo)], False  # passed: the latest passing (rate, excess), true values
    while hi - lo > rtol * hi:
        width = hi - lo
        finite = math.isfinite(e_hi) and math.isfinite(e_lo) and e_hi > e_lo
        mid = lo + width * (-e_lo) / (e_hi - e_lo) if finite else (lo + hi) / 2
        if not lo < mid < hi:
            mid = (lo + hi) / 2
        # at least half the resolution inside each end: once one end sits on the root, the next step closes the
        # bracket instead of creeping towards that end (which took ~20 evaluations, half of them bisections)
        mid = min(max(mid, lo + rtol * hi / 2), hi - rtol * hi / 2)
        e = sla_latency(design, mid) - sla
        if e <= 0:
            lo, e_lo = mid, e
            passed = [passed[-1], (mid, e)]
            if side == -1:
                e_hi /= 2  # Illinois: the end kept twice running counts half
            side = -1
        else:
            hi, e_hi = mid, e
            if side == 1:
                e_lo /= 2
            side = 1
        if hi - lo > width / 2:  # slow progress: halve the bracket outright, or try to close it
            mid = (lo + hi) / 2
            guess = _secant_root(passed) if not closed_last else None
            # the passing end converges fast (regula falsi on a convex curve) while the failing end stays put:
            # half the resolution beyond the root the last two passing rates point to usually closes the bracket
            closed_last = guess is not None and lo < guess + rtol * hi / 2 < mid
            if closed_last:
                mid = guess + rtol * hi / 2
            e = sla_latency(design, mid) - sla
            if e <= 0:
                passed = [passed[-1], (mid, e)]
            lo, hi, e_lo, e_hi = (mid, hi, e, e_hi) if e <= 0 else (lo, mid, e_lo, e)
            side = 0
    return float(lo)


def _secant_root(passed: list[tuple[float, float]]) -> Optional[float]:
    """Where the line through the last two passing (rate, latency - SLA) points reaches the SLA (requests/s);
    None unless there are two with the latency rising between them."""
    if len(passed) < 2:
        return None
    (x0, e0), (x1, e1) = passed
    if not (x1 > x0 and e1 > e0 and math.isfinite(e0)):
        return None
    return x1 - e1 * (x1 - x0) / (e1 - e0)


def _last_passing(design: Design, grid: np.ndarray) -> tuple[Optional[int], dict[int, float]]:
    """(index of the last scanned rate whose SLA-percentile latency meets the SLA or None, {index: latency - SLA
    in s} of the rates evaluated). The scan runs from the top down and stops at the first passing rate: the
    rates below it cannot change which passing rate is last, so they are never evaluated. The top SCAN_ONE_BY_ONE
    rates go one by one (a design limited near capacity stops there; none where no_load_floor misses the SLA);
    below them every remaining rate is worked out at once (prefetch_gpu_points, _scan_latencies), several times
    cheaper a rate than one by one."""
    excess: dict[int, float] = {}
    top = len(grid) - 1
    if no_load_floor(design) > design.sla_s:
        one_by_one = 0
    elif scans_as_array(design.gpu, design.scheduler):
        one_by_one = SCAN_ONE_BY_ONE
    else:  # the side's state comes one rate at a time whichever way: stop at the first passing rate from the top
        one_by_one = len(grid)
    # rates whose lower bound (engine.analytic.sla_bound) misses the SLA fail without being worked out; the top
    # SCAN_ONE_BY_ONE rates of an array side are worked out whatever their bound: most designs stop among them (210
    # of the search benchmark's 353 that scan), where the bound over the whole scan (~0.3 ms a design) costs more
    # than the few top rates it would skip (their GPU state shared by the designs on the side). A rate the bound
    # rules out fails when worked out too, so which rate passes first is the same.
    waits, hopeless = None, None
    if one_by_one != SCAN_ONE_BY_ONE:
        waits = host_waits(design, grid)
        hopeless = sla_latency_lower_bounds(design, grid, waits) * (1 - BOUND_MARGIN) > design.sla_s
    for k in range(top, max(top - one_by_one, -1), -1):
        if hopeless is not None and hopeless[k]:
            continue
        excess[k] = sla_latency(design, float(grid[k])) - design.sla_s
        if excess[k] <= 0:
            return k, excess
    if hopeless is None:
        waits = host_waits(design, grid)
        hopeless = sla_latency_lower_bounds(design, grid, waits) * (1 - BOUND_MARGIN) > design.sla_s
    rest = np.flatnonzero(~hopeless[:max(top - one_by_one, -1) + 1])
    if not len(rest):
        return None, excess
    rates = grid[rest]
    prefetch_gpu_points(design.gpu, design.scheduler, rates, design.q_mean, design.q_pmf, design.sla_percentile)
    below = _scan_latencies(design, rates, [(wait[rest], wait_q[rest]) for wait, wait_q in waits]) - design.sla_s
    excess.update(zip(rest.tolist(), below.tolist()))
    passing = np.flatnonzero(below <= 0)
    return (int(rest[passing[-1]]) if len(passing) else None), excess


def no_load_floor(design: Design) -> float:
    """A guess (s) at the SLA-percentile latency with no load: the host stages' fixed and service times plus the
    fastest partition's time for a batch of one and the batch timer's Time_queue (at low load a batch waits for
    its timer), the host services' excesses over their means added in quadrature (_quantile). Where it exceeds the
    SLA, the scan will most likely find no passing rate, so _last_passing works every rate out as one array at once
    instead of trying the top ones one by one first (which rate passes does not depend on this order, only the time
    taken)."""
    p = design.sla_percentile
    mean = sum(s.fixed_s + max(s.service_s, 0.0) for s in design.host_stages)
    mean += min((part.service(1) for part in design.gpu.partitions), default=0.0) + design.gpu.time_queue_s
    excess = [lognormal_quantile(s.service_s, s.scv, p) - s.service_s for s in design.host_stages if s.service_s > 0]
    return _quantile(mean, excess)


def _scan_latencies(design: Design, rates: np.ndarray, waits: Optional[list] = None) -> np.ndarray:
    """sla_latency (s) at each of `rates` (requests/s), the host stages' G/G/c waits as arrays (sla_bound.host_waits
    at these rates, if already worked out) and the GPU side read from gpu_point, summed as _point and _quantile do
    (mean plus the excesses in quadrature)."""
    p = design.sla_percentile
    waits = host_waits(design, rates) if waits is None else waits
    gpus = [gpu_point(design.gpu, design.scheduler, float(r), design.q_mean, design.q_pmf, p) for r in rates]
    mean = np.zeros(len(rates))
    excess = []  # in _point's order: host waits, host services, batching, GPU queue, GPU service
    services = []
    with np.errstate(invalid="ignore"):
        for stage, (wait, wait_q) in zip(design.host_stages, waits):
            if stage.service_s <= 0:  # no service: host_stage_point's zero-service stage
                service, service_q = 0.0, 0.0
            else:
                service, service_q = stage.service_s, lognormal_quantile(stage.service_s, stage.scv, p)
            mean = mean + (stage.fixed_s + wait + service)
            excess.append(wait_q - wait)
            services.append(np.full(len(rates), service_q - service))
        cols = np.array([[g.batching_wait_mean_s, g.batching_wait_q_s, g.queue_wait_mean_s, g.queue_wait_q_s,
                          g.service_mean_s, g.service_q_s] for g in gpus]).T.reshape(6, len(rates))
        mean = mean + cols[0] + cols[2] + cols[4]
        e = np.array(excess + services + [cols[1] - cols[0], cols[3] - cols[2], cols[5] - cols[4]])
        s = (e * np.abs(e)).sum(axis=0)
        out = mean + np.copysign(np.sqrt(np.abs(s)), s)
    return np.where(np.isfinite(mean) & np.isfinite(e).all(axis=0), out, math.inf)


def _bisect_up(design: Design, lo: float, hi: float, rtol: float) -> float:
    """Bisection between a passing rate lo and capacity hi (where the latency is unbounded)."""
    while hi - lo > rtol * hi:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if sla_latency(design, mid) <= design.sla_s else (lo, mid)
    return lo


def scan_rates(design: Design, cap: float, points: int = SCAN_POINTS) -> np.ndarray:
    """The rates (requests/s) sla_bounded_rate scans: steps of the GPU side's capacity / (points x 2^j), the
    smallest j that puts at least points / 2 of them below the pipeline's capacity `cap` (exactly `points`
    when the GPU is the bottleneck), then a hair below cap.

    On the GPU's own lattice rather than cap's: designs that share a GPU side (a search's preprocessing
    devices, RPC paths and hosts) scan the same rates and so share the GPU's state at each (GpuSide.remember).
    """
    gpu_cap = gpu_capacity_rps(design.gpu, design.q_mean, design.q_pmf, design.scheduler)
    top = cap * (1 - 1e-6)
    if not math.isfinite(gpu_cap) or gpu_cap <= 0 or gpu_cap < cap:
        return np.linspace(cap / points, top, points)
    step = gpu_cap / points
    while top / step < points / 2:
        step /= 2
    below = step * np.arange(1, int(top / step) + 1)
    return np.append(below[below < top], top)


def sweep_grid(lo: float, hi: float, n: int) -> list[float]:
    """`n` evenly spaced rates from lo to hi (requests/s): the rates of sweep (and of engine.analytic.space's
    sweep_rates); ValueError unless 0 < lo <= hi and n >= 1."""
    if not 0 < lo <= hi or n < 1:
        raise ValueError(f"need 0 < lo <= hi and n >= 1, got {lo}:{hi}:{n}")
    return [float(rate) for rate in np.linspace(lo, hi, n)]


def sweep(design: Design, lo: float, hi: float, n: int) -> list[RatePoint]:
    """The latency-vs-load curve at `n` evenly spaced rates from lo to hi (requests/s)."""
    return [at_rate(design, rate) for rate in sweep_grid(lo, hi, n)]


CURVE_TOP = 0.995  # a load curve stops this fraction of the way to capacity, where the latency is unbounded


def load_curve(design: Design, points: int) -> list[tuple[float, float, float]]:
    """The latency-vs-load curve the pages and the report draw, on the lean path (mean_and_sla): (rate in
    requests/s, mean latency in s, latency at the SLA percentile in s) at `points` evenly spaced rates from
    capacity / points to CURVE_TOP x capacity; empty when the capacity is not finite and positive."""
    cap = capacity(design)[0]
    if not (math.isfinite(cap) and cap > 0):
        return []
    return [(rate, *mean_and_sla(design, rate)) for rate in sweep_grid(cap / points, cap * CURVE_TOP, points)]
