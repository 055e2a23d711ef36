"""Evaluate one design at many rates (sweep_rates) in chunks on an executor (engine.executors: processes forked
from the caller by default, or a Ray cluster). A design space (many designs at one rate) is swept by
engine.search (search's _sweep), the one design-space sweep.
"""

from __future__ import annotations

from typing import Optional, Sequence

from engine.analytic.design import Design
from engine.analytic.operating_point import RatePoint, at_rate, sweep_grid
from engine.executors import Executor, LocalExecutor


#: rates per chunk of sweep_rates: one rate costs ~0.1 ms, a task's overhead more
RATES_PER_CHUNK = 250


def _rates_chunk(design: Design, rates: Sequence[float]) -> list[RatePoint]:
    return [at_rate(design, rate) for rate in rates]


def sweep_rates(design: Design, lo: float, hi: float, n: int, executor: Optional[Executor] = None) -> list[RatePoint]:
    """The analytic latency-vs-load curve at n evenly spaced rates from lo to hi (req/s), in chunks on `executor`
    (default: here, in one process); the same points as engine.analytic.sweep."""
    rates = sweep_grid(lo, hi, n)
    chunks = [rates[start:start + RATES_PER_CHUNK] for start in range(0, n, RATES_PER_CHUNK)]
    parts = (executor or LocalExecutor(1)).map(_rates_chunk, design, chunks)
    return [point for part in parts for point in part]
