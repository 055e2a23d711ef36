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


_WORKER_CTX: Optional[Context] = None  # set in the parent just before forking; read-only in the workers


def _one(ctx: Context, i: int, scenario: Scenario, rate: float) -> DesignPoint:
    d = build_design(scenario, ctx)
    cap, bottleneck, _ = capacity(d)
    stable = rate < cap
    mean, tail = mean_and_sla(d, rate) if stable else (math.inf, math.inf)
    return DesignPoint(index=i, capacity_rps=cap, bottleneck=bottleneck, stable=stable, mean_ms=mean * 1e3,
                       sla_ms=tail * 1e3, sla_bound_ms=d.sla_s * 1e3, meets_sla=stable and tail <= d.sla_s)


def _chunk(args: tuple[int, list[Scenario], float]) -> list[DesignPoint]:
    start, scenarios, rate = args
    return [_one(_WORKER_CTX, start + k, s, rate) for k, s in enumerate(scenarios)]


def sweep_designs(scenarios: list[Scenario], ctx: Context, rate: float, workers: Optional[int] = None,
                  progress: Optional[Callable[[float], None]] = None, chunk: int = 500) -> list[DesignPoint]:
    """Every scenario at `rate` requests/s, in order; `workers` processes (default: all cores)."""
    global _WORKER_CTX
    workers = workers or os.cpu_count() or 1
    if workers <= 1 or len(scenarios) < 2 * chunk or "fork" not in mp.get_all_start_methods():
        out = []
        for i, s in enumerate(scenarios):
            out.append(_one(ctx, i, s, rate))
            if progress and i % chunk == 0:
                progress(i / len(scenarios))
        return out
    _WORKER_CTX = ctx
    try:
        jobs = [(i, scenarios[i:i + chunk], rate) for i in range(0, len(scenarios), chunk)]
        out: list[DesignPoint] = []
        with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("fork")) as pool:
            for k, part in enumerate(pool.map(_chunk, jobs)):
                out.extend(part)
                if progress:
                    progress((k + 1) / len(jobs))
        return out
    finally:
        _WORKER_CTX = None
