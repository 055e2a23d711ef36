"""Evaluate many designs at one rate: the analytic design-space sweep, in parallel worker processes.

Each design is a validated Scenario; a worker builds it (sharing memoised GPU and host sides with the
designs before it) and returns its capacity, bottleneck, and mean and SLA-percentile latency at the
rate. Workers are forked from the caller, so they inherit its Context (profile book and tables) and
never touch the DuckDB connection: everything they read is already in memory.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Optional

from pydantic import BaseModel, ConfigDict

from engine.analytic.evaluate import capacity, mean_and_sla
from engine.analytic.pipeline import Context, build_design
from engine.scenario import Scenario


class DesignPoint(BaseModel):
    """One design of a sweep at the sweep's rate (latencies in ms; inf when the design is unstable there)."""

    model_config = ConfigDict(frozen=True)

    index: int
    capacity_rps: float
    bottleneck: str
    stable: bool
    mean_ms: float
    sla_ms: float  # latency at the scenario's SLA percentile
    sla_bound_ms: float
    meets_sla: bool


# (context, scenarios, rate), set in the parent just before forking and read-only in the workers: forked
# workers inherit them, so only index ranges go out and plain tuples come back (pickling 20k pydantic
# scenarios cost more than evaluating them)
_WORKER_JOB: Optional[tuple[Context, list[Scenario], float]] = None


def _measure(ctx: Context, scenario: Scenario, rate: float) -> tuple:
    d = build_design(scenario, ctx)
    cap, bottleneck, _ = capacity(d)
    stable = rate < cap
    mean, tail = mean_and_sla(d, rate) if stable else (math.inf, math.inf)
    return cap, bottleneck, stable, mean * 1e3, tail * 1e3, d.sla_s * 1e3, stable and tail <= d.sla_s


def _point(i: int, m: tuple) -> DesignPoint:
    return DesignPoint(index=i, capacity_rps=m[0], bottleneck=m[1], stable=m[2], mean_ms=m[3], sla_ms=m[4],
                       sla_bound_ms=m[5], meets_sla=m[6])


def _chunk(bounds: tuple[int, int]) -> list[tuple]:
    ctx, scenarios, rate = _WORKER_JOB
    return [_measure(ctx, scenarios[i], rate) for i in range(*bounds)]


def sweep_designs(scenarios: list[Scenario], ctx: Context, rate: float, workers: Optional[int] = None,
                  progress: Optional[Callable[[float], None]] = None, chunk: int = 500) -> list[DesignPoint]:
    """Every scenario at `rate` requests/s, in order; `workers` processes (default: all cores)."""
    global _WORKER_JOB
    workers = workers or os.cpu_count() or 1
    if workers <= 1 or len(scenarios) < 2 * chunk or "fork" not in mp.get_all_start_methods():
        out = []
        for i, s in enumerate(scenarios):
            out.append(_point(i, _measure(ctx, s, rate)))
            if progress and i % chunk == 0:
                progress(i / len(scenarios))
        return out
    _WORKER_JOB = (ctx, scenarios, rate)
    try:
        # contiguous ranges: neighbouring designs share GPU and host sides, which a worker then reuses
        jobs = [(i, min(i + chunk, len(scenarios))) for i in range(0, len(scenarios), chunk)]
        out: list[DesignPoint] = []
        with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("fork")) as pool:
            for k, part in enumerate(pool.map(_chunk, jobs)):
                out.extend(_point(jobs[k][0] + j, m) for j, m in enumerate(part))
                if progress:
                    progress((k + 1) / len(jobs))
        return out
    finally:
        _WORKER_JOB = None
