"""The analytic answer for a design: capacity, bottleneck, latency, SLA-bounded throughput, over rates."""

from __future__ import annotations

import math
from typing import Optional

import numpy as np
from pydantic import BaseModel, ConfigDict

from engine.analytic.design import Design
from engine.analytic.rates import GpuPoint, StagePoint, gpu_capacity_rps, gpu_point, host_stage_point

PERCENTILES = (0.50, 0.95, 0.99)


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
    breakdown = {}
    for s in stages:
        breakdown[f"{s.name}_fixed"] = s.fixed_s
        breakdown[f"{s.name}_wait"] = s.wait_mean_s
        breakdown[s.name] = s.service_s
    acc = design.accelerator
    breakdown.update({"batching_wait": g.batching_wait_mean_s, f"{acc}_queue": g.queue_wait_mean_s,
                      f"{acc}_service": g.service_mean_s})
    mean = sum(breakdown.values())
    lat = {"mean": mean}
    for p in sorted(set(PERCENTILES) | {design.sla_percentile}):
        q = _quantile(mean, _point(design, rate, p)[2])
        lat[f"p{round(p * 100):g}"] = q
        if p == design.sla_percentile:
            lat["sla"] = q
    reason = None
    if unstable:
        reason = (f"utilisation >= 1 at {rate:,.0f} requests/s: "
                  + ", ".join(f"{n} (capacity {caps[n]:,.0f}/s)" for n in unstable))
    return RatePoint(rate_rps=rate, stable=not unstable, unstable_reason=reason, latency_s=lat,
                     breakdown_s=breakdown, stages=stages, gpu=g)


def sla_bounded_rate(design: Design, points: int = 48, refine: int = 20) -> float:
    """Largest arrival rate (requests/s) whose SLA-percentile latency meets the SLA; 0 if none does.

    Latency need not grow monotonically with rate (a batch timeout fills faster at
    higher load), so the rates up to capacity are scanned first and the last
    passing rate is refined by bisection against the next failing one.
    """
    cap, _, _ = capacity(design)
    grid = np.linspace(cap / points, cap * (1 - 1e-6), points)
    ok = [sla_latency(design, r) <= design.sla_s for r in grid]
    if not any(ok):
        return 0.0
    i = max(k for k, v in enumerate(ok) if v)
    lo = grid[i]
    hi = grid[i + 1] if i + 1 < len(grid) else cap
    for _ in range(refine):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if sla_latency(design, mid) <= design.sla_s else (lo, mid)
    return float(lo)


def sweep(design: Design, lo: float, hi: float, n: int) -> list[RatePoint]:
    """The latency-vs-load curve at `n` evenly spaced rates from lo to hi (requests/s)."""
    if not 0 < lo <= hi or n < 1:
        raise ValueError(f"need 0 < lo <= hi and n >= 1, got {lo}:{hi}:{n}")
    return [at_rate(design, float(r)) for r in np.linspace(lo, hi, n)]
