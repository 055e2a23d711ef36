"""Latency-bounded throughput of a design, simulated (PARIS/ELSA seed, Sec VI-B, Fig 11-12).

The seed's metric is the largest query rate whose tail latency (at the SLA percentile) still
meets the SLA. The analytic engine answers it in closed form (engine.analytic.sla_bounded_rate);
here it is found with the simulator: bisection on the arrival rate between 0 and the design's
capacity, each probe one seeded simpy run (common random numbers: every probe uses the same
seed, so the arrival stream is only rescaled and the comparison between rates is not noise).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from engine.analytic import build_design, capacity
from engine.scenario import load_scenario, Scenario
from engine.sim.run import simulate_design


class BoundedRate(BaseModel):
    """The simulated latency-bounded throughput and the probes that found it."""

    model_config = ConfigDict(frozen=True)

    rate_rps: float  # largest probed rate that met the SLA (0 if none did)
    capacity_rps: float
    sla_ms: float
    percentile: float
    probes: list[tuple[float, float, bool]]  # (rate, latency at the SLA percentile in ms, met)


def sim_bounded_rate(scenario, ctx, n_requests: int = 20_000, seed: int = 0, steps: int = 8) -> BoundedRate:
    """Bisection for the largest rate (req/s) whose simulated SLA-percentile latency meets the SLA.

    `steps` halvings of [0, capacity] give the rate to capacity / 2**steps; a probe that is
    unstable (queue growing) or misses the SLA moves the upper end down.
    """
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario, ctx.book)
    design = build_design(scenario, ctx)
    cap = capacity(design)[0]
    lo, hi = 0.0, cap
    probes = []
    for _ in range(steps):
        mid = (lo + hi) / 2
        r = simulate_design(design, n_requests, seed=seed, ctx=ctx, rate=mid, stats="numpy", timeseries=False)
        met = r.stable and r.sla.met
        probes.append((mid, float(r.sla.latency_at_rate_ms), met))
        lo, hi = (mid, hi) if met else (lo, mid)
    return BoundedRate(rate_rps=lo, capacity_rps=cap, sla_ms=design.sla_s * 1e3,
                       percentile=design.sla_percentile * 100, probes=probes)
