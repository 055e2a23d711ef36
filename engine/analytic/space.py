"""Evaluate many designs at one rate (sweep_designs), or one design at many rates (sweep_rates), in parallel on an
executor (engine.executors: processes forked from the caller by default, or a Ray cluster).

Each design is a validated Scenario; a worker builds it (sharing memoised GPU and host sides with the
designs before it) and returns its capacity, bottleneck, and mean and SLA-percentile latency at the
rate. Workers get the Context (profile book and tables) once, inherited or from the object store, and
never touch the DuckDB connection: everything they read is already in memory.
"""

from __future__ import annotations

import math
from typing import Callable, Optional, Sequence

from pydantic import BaseModel, ConfigDict

from engine.analytic.design import Design
from engine.analytic.operating_point import RatePoint, at_rate, capacity, mean_and_sla, sweep_grid
from engine.analytic.pipeline import Context, build_design
from engine.executors import Executor, LocalExecutor
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


#: rates per chunk of sweep_rates: one rate costs ~0.1 ms, a task's overhead more
RATES_PER_CHUNK = 250


def _measure(ctx: Context, scenario: Scenario, rate: float) -> tuple:
    d = build_design(scenario, ctx)
    cap, bottleneck, _ = capacity(d)
    stable = rate < cap
    mean, tail = mean_and_sla(d, rate) if stable else (math.inf, math.inf)
    return cap, bottleneck, stable, mean * 1e3, tail * 1e3, d.sla_s * 1e3, stable and tail <= d.sla_s


def _point(i: int, m: tuple) -> DesignPoint:
    return DesignPoint(index=i, capacity_rps=m[0], bottleneck=m[1], stable=m[2], mean_ms=m[3], sla_ms=m[4],
                       sla_bound_ms=m[5], meets_sla=m[6])


def _chunk(shared: tuple[Context, list[Scenario], float], bounds: tuple[int, int]) -> list[tuple]:
    # only index ranges go out and plain tuples come back (pickling 20k pydantic scenarios cost more than
    # evaluating them); the context and scenarios are shared once per worker
    ctx, scenarios, rate = shared
    return [_measure(ctx, scenarios[i], rate) for i in range(*bounds)]


def sweep_designs(scenarios: list[Scenario], ctx: Context, rate: float, workers: Optional[int] = None,
                  progress: Optional[Callable[[float], None]] = None, chunk: int = 500,
                  executor: Optional[Executor] = None) -> list[DesignPoint]:
    """Every scenario at `rate` requests/s, in order, on `executor` (default: `workers` processes, all cores)."""
    executor = executor or LocalExecutor(workers)
    n = len(scenarios)
    # contiguous ranges: neighbouring designs share GPU and host sides, which a worker then reuses; fewer than two
    # full chunks are done in one piece, before a pool would have started
    size = n if n < 2 * chunk else chunk
    jobs = [(i, min(i + size, n)) for i in range(0, n, max(size, 1))]
    parts = executor.map(_chunk, (ctx, scenarios, rate), jobs,
                         progress=(lambda done, total: progress(done / total)) if progress else None)
    return [_point(lo + j, m) for (lo, _), part in zip(jobs, parts) for j, m in enumerate(part)]


def _rates_chunk(design: Design, rates: Sequence[float]) -> list[RatePoint]:
    return [at_rate(design, r) for r in rates]


def sweep_rates(design: Design, lo: float, hi: float, n: int, executor: Optional[Executor] = None) -> list[RatePoint]:
    """The analytic latency-vs-load curve at n evenly spaced rates from lo to hi (req/s), in chunks on `executor`
    (default: here, in one process); the same points as engine.analytic.sweep."""
    rates = sweep_grid(lo, hi, n)
    chunks = [rates[i:i + RATES_PER_CHUNK] for i in range(0, n, RATES_PER_CHUNK)]
    parts = (executor or LocalExecutor(1)).map(_rates_chunk, design, chunks)
    return [p for part in parts for p in part]
