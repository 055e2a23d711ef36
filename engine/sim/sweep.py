"""Curves and adaptive run length.

sweep(): independent load points of a latency-vs-load curve run in parallel on an executor (engine.executors:
processes forked from the caller by default, or a Ray cluster; the workers compute percentiles with numpy, since a
forked process must not share the parent's DuckDB). Every point uses the same seed: common random numbers (the
unit-rate arrival stream is scaled by each rate), so the curve is smooth and differences between points are not
sampling noise.

adaptive(): runs n, 2n, 4n... requests until the p99 confidence half-width is under `target` of the
p99 (or max_requests is reached); each round is a fresh run with the same seed.
"""

from __future__ import annotations

import math
from typing import Callable, Optional

import numpy as np

from engine.errors import excerpt
from engine.executors import Executor, LocalExecutor
from engine.contract import MAX_RATE_RPS, MIN_POSITIVE
from engine.sim.errors import SimError
from engine.sim.run import simulate_design

def _point(job: dict, rate: float):
    """One load point (an executor's chunk function; job holds the design and the run's settings)."""
    result = simulate_design(job["design"], job["n"], duration_s=job["duration"], seed=job["seed"], ctx=job["ctx"],
                             service=job["service"], workload=job["workload"], rate=rate, warmup=job["warmup"],
                             stats="numpy", timeseries=False)
    return result.model_copy(update={"records": None})  # the records would be pickled back for nothing


def sweep(design, rates, n_requests: Optional[int] = None, *, duration_s: Optional[float] = None, seed: int = 0,
          ctx=None, service=None, workload=None, warmup: float = 0.1, workers: Optional[int] = None,
          progress: Optional[Callable[[float], None]] = None, executor: Optional[Executor] = None) -> list:
    """SimResults at each arrival rate (req/s), computed in parallel (records are dropped) on `executor` (default:
    a LocalExecutor of `workers` processes); the results do not depend on where they ran."""
    rates = [float(rate) for rate in rates]
    if not rates:
        raise SimError("sweep: no rates")
    if any(not (math.isfinite(rate) and MIN_POSITIVE <= rate <= MAX_RATE_RPS) for rate in rates):
        raise SimError(f"sweep: rates must be in [{MIN_POSITIVE:g}, {MAX_RATE_RPS:g}] requests/s, "
                       f"got {excerpt(rates)}")
    job = dict(design=design, n=n_requests, duration=duration_s, seed=seed, ctx=ctx, service=service,
               workload=workload, warmup=warmup)
    executor = executor or LocalExecutor(min(len(rates), workers) if workers else None)
    slots = executor.parallel_for(len(rates))
    # interleave the rates so that each worker gets cheap and expensive points alike
    order = sorted(range(len(rates)), key=lambda i: (i % slots, i))
    results = executor.map(_point, job, [rates[i] for i in order],
                           progress=(lambda done, total: progress(done / total)) if progress else None)
    in_rate_order: list = [None] * len(rates)
    for index, result in zip(order, results):
        in_rate_order[index] = result
    return in_rate_order


def rate_grid(lo: float, hi: float, n: int) -> list[float]:
    """n rates from lo to hi (req/s), evenly spaced; SimError unless 0 < lo <= hi <= MAX_RATE_RPS, n >= 1."""
    if not (math.isfinite(lo) and math.isfinite(hi) and MIN_POSITIVE <= lo <= hi <= MAX_RATE_RPS) or n < 1:
        raise SimError(f"need 0 < LO <= HI <= {MAX_RATE_RPS:g} and N >= 1, got {lo:.6g}:{hi:.6g}:{n}")
    return [float(x) for x in np.linspace(lo, hi, n)]


def adaptive(design, target: float, n_start: int = 20_000, max_requests: int = 2_000_000, **kw):
    """Double the run length until the p99 half-width <= target x p99; returns (result, rounds)."""
    if not 0 < target < 1:
        raise SimError(f"target: the p99 half-width as a fraction of p99, in (0, 1), got {target}")
    n, rounds = n_start, 0
    while True:
        rounds += 1
        result = simulate_design(design, n, **kw)
        half_width = result.ci.p99
        reached = half_width is not None and half_width <= target * result.latency_ms.p99
        if reached or n >= max_requests:
            note = (f"adaptive length: {rounds} round(s), {n:,} requests, p99 half-width "
                    f"{(half_width or float('nan')):.3g} ms (target {target:.1%} of p99)")
            if not reached:
                note += "; stopped at max_requests before reaching the target"
            return result.model_copy(update={"notes": result.notes + [note]}), rounds
        n = min(2 * n, max_requests)
