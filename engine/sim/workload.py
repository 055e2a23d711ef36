"""Workloads for the simulator: arrival times, query sizes and input lengths, pre-generated as numpy arrays.

Kinds (`WorkloadKind`):
- poisson: exponential inter-arrival times at `rate_rps` (MLPerf's and PARIS's arrival process).
- mlperf-server: Poisson at the target rate; the run passes when p99 <= the benchmark's bound
  (MLPerf Inference rules, Server scenario: ResNet-50 15 ms, BERT 130 ms, RNN-T 1000 ms; the
  speech models here stand in for RNN-T; any other model 10 ms).
- offline: every query issued at t = 0 (the metric is throughput).
- single-stream: closed loop, the next query is issued when the previous one completes (metric p90).
- multi-stream: closed loop with `samples_per_query` items per query (MLPerf v2.0+: 8; metric p99).
- diurnal: Poisson with a rate that follows rate x (1 + amplitude sin(2 pi t / period_s)) and is
  multiplied, per `noise_interval_s`, by max(0, 1 + noise_cv N(0, 1)) (multiplicative Gaussian noise).
- trace: the scenario's inline arrival timestamps (`trace_unit` s, ms or us; parsed from an upload or
  `simulate --trace FILE` by engine.io.traces), shifted to start at 0. The trace plays at its own mean rate;
  a rate given to the run (a sweep's or a bisection's load, `--rate`, SimWorkload.rate_rps) scales its
  inter-arrival times so that its mean rate is that rate, keeping its shape (bursts stay bursts).

Query sizes come from the design's q_pmf (fixed, or log-normal discretised and truncated to
1..max_size, PARIS section V), so the simulator samples the distribution the analytic model averages.
Input lengths (audio seconds or tokens, variable-length models only) come from workload.input_len.
Randomness: the caller passes numpy Generators spawned from one SeedSequence.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from engine.analytic.sla import DEFAULT_SLA_MS, MLPERF_SERVER_P99_MS
from engine.contract import MAX_RATE_RPS, Positive
from engine.workload_spec import ArrivalSpec
from engine.vocab import WorkloadKind
from engine.sim.errors import SimError
from engine.io.traces import TRACE_UNIT_S

MAX_REQUESTS = 20_000_000
MLPERF_DEFAULT_P99_MS = DEFAULT_SLA_MS  # one default SLA for the analytic engine and the simulator
#: most noise intervals in one diurnal run: each holds a rate and a count (10M intervals are 160 MB of arrays)
MAX_DIURNAL_INTERVALS = 10_000_000


CLOSED_LOOP = (WorkloadKind.SINGLE_STREAM, WorkloadKind.MULTI_STREAM)


class SimWorkload(ArrivalSpec):
    """A workload for one simulation: the scenario's arrival spec with the rate optional (times in s)."""

    rate_rps: Optional[Positive] = Field(None, gt=0, le=MAX_RATE_RPS, description="default: the scenario's arrival rate")


class Arrivals(BaseModel):
    """Pre-generated requests: arrival time (s, nan for closed loop), items per query, input length."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    t: np.ndarray
    size: np.ndarray  # int items per query
    length: Optional[np.ndarray]  # audio s / tokens, or None for fixed-size inputs
    closed_loop: bool
    rate_rps: float  # offered rate (open loop); 0 for closed loop and offline


def mlperf_bound_ms(model: str) -> float:
    """The MLPerf Server p99 bound of a model (engine.analytic.sla), else its one default."""
    return MLPERF_SERVER_P99_MS.get(model, MLPERF_DEFAULT_P99_MS)


def _count(n_requests: Optional[int], duration_s: Optional[float], rate: float) -> tuple[Optional[int], Optional[float]]:
    if n_requests is None and duration_s is None:
        raise SimError("give n_requests or duration_s")
    if n_requests is not None and not 1 <= n_requests <= MAX_REQUESTS:
        raise SimError(f"n_requests: must be 1..{MAX_REQUESTS:,}, got {n_requests}")
    if duration_s is not None:
        if not duration_s > 0:
            raise SimError(f"duration_s: must be positive, got {duration_s}")
        if rate > 0 and rate * duration_s > MAX_REQUESTS:
            raise SimError(f"duration_s: {duration_s:g} s at {rate:g} req/s is over {MAX_REQUESTS:,} requests")
    return n_requests, duration_s


def poisson_times(rate: float, n: Optional[int], duration: Optional[float], rng: np.random.Generator) -> np.ndarray:
    """Arrival times of a Poisson process: n of them, or all in [0, duration)."""
    # in place: one array of n doubles, not three (the same floats; a fresh process pays for every new page)
    times = rng.standard_exponential(n if n is not None else
                                     int(rate * duration + 6 * math.sqrt(rate * duration) + 16))  # mean + 6 sd + 16
    np.cumsum(times, out=times)
    times /= rate
    return times if n is not None else times[times < duration]


def diurnal_times(workload: SimWorkload, rate: float, n: Optional[int], duration: Optional[float],
                  rng: np.random.Generator) -> np.ndarray:
    """Piecewise-constant-rate Poisson arrivals: a sinusoidal daily cycle times Gaussian noise per interval."""
    interval = workload.noise_interval_s
    horizon = duration if duration is not None else 1.5 * n / rate + 10 * interval
    while True:  # without a duration: until the horizon holds n arrivals, doubling it
        n_intervals = math.ceil(horizon / interval)
        if n_intervals > MAX_DIURNAL_INTERVALS:
            raise SimError(f"workload.arrival.noise_interval_s: {interval:g} s cuts this run "
                           f"({horizon:.3g} s of arrivals) into more than {MAX_DIURNAL_INTERVALS:,} intervals; "
                           "lengthen the interval or shorten the run")
        edges = np.arange(n_intervals + 1) * interval
        middle = edges[:-1] + interval / 2
        rates = rate * (1 + workload.amplitude * np.sin(2 * np.pi * middle / workload.period_s))
        rates = rates * np.maximum(0.0, 1 + workload.noise_cv * rng.standard_normal(n_intervals))
        counts = rng.poisson(rates * interval)
        if counts.sum() > MAX_REQUESTS:
            raise SimError("the diurnal workload would generate more than 20M requests; shorten the run")
        starts = np.repeat(edges[:-1], counts)
        times = np.sort(starts + rng.random(counts.sum()) * interval)  # uniform within each interval
        if duration is not None:
            return times[times < duration]
        if len(times) >= n:
            return times[:n]
        horizon *= 2


def trace_times(workload: SimWorkload, rate: Optional[float], n: Optional[int],
                duration: Optional[float]) -> np.ndarray:
    """The trace's arrival times in seconds from 0, scaled to mean rate `rate` when one is given (None: the
    trace's own pace), then cut to the first n requests or to [0, duration)."""
    if workload.timestamps is None or len(workload.timestamps) < 2:
        raise SimError("workload.arrival.timestamps: kind 'trace' needs at least two arrival timestamps")
    times = np.sort(np.asarray(workload.timestamps, dtype=float))
    times = (times - times[0]) * TRACE_UNIT_S[workload.trace_unit]
    if not times[-1] > 0:
        raise SimError("workload.arrival.timestamps: every timestamp is the same; a trace needs a time span")
    if rate is not None:
        own_rate = (len(times) - 1) / times[-1]
        times = times * (own_rate / rate)
    if duration is not None:
        times = times[times < duration]
    if n is not None:
        times = times[:n]
    return times


def sample_sizes(q_pmf: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Items per query from the design's size distribution (PARIS log-normal 1..max, or fixed)."""
    if q_pmf[-1] == 1.0:
        return np.full(n, len(q_pmf), dtype=np.int64)
    cdf = np.cumsum(q_pmf)
    cdf[-1] = 1.0
    return np.searchsorted(cdf, rng.random(n), side="right").astype(np.int64) + 1


def sample_lengths(spec, default: Optional[float], n: int, rng: np.random.Generator) -> np.ndarray:
    """Input lengths (audio s or tokens) from workload.input_len: fixed, uniform or log-normal."""
    if spec.kind == "fixed":
        value = spec.value if spec.value is not None else default
        return np.full(n, float(value if value is not None else 1.0))
    if spec.kind == "uniform":
        if spec.high < spec.low:
            raise SimError(f"workload.input_len: high ({spec.high}) is below low ({spec.low})")
        return spec.low + (spec.high - spec.low) * rng.random(n)
    return np.exp(spec.mu + spec.sigma * rng.standard_normal(n))


def generate(workload: SimWorkload, design, n_requests: Optional[int], duration_s: Optional[float],
             rngs: list[np.random.Generator], variable_length: bool, rate: Optional[float] = None) -> Arrivals:
    """Requests for one run of the workload's arrival process (workload.kind), at `rate` when given (else
    workload.rate_rps, else the scenario's rate; a trace without either plays at its own pace). rngs: three
    Generators (arrivals, sizes, lengths)."""
    scenario = design.scenario
    explicit_rate = rate if rate is not None else workload.rate_rps  # a trace keeps its own pace without one
    rate = explicit_rate if explicit_rate is not None else scenario.workload.arrival.rate_rps
    kind = workload.kind
    if kind in (WorkloadKind.POISSON, WorkloadKind.MLPERF_SERVER):
        n_requests, duration_s = _count(n_requests, duration_s, rate)
        times = poisson_times(rate, n_requests, duration_s, rngs[0])
    elif kind == WorkloadKind.DIURNAL:
        n_requests, duration_s = _count(n_requests, duration_s, rate * (1 + workload.amplitude))
        times = diurnal_times(workload, rate, n_requests, duration_s, rngs[0])
    elif kind == WorkloadKind.TRACE:
        times = trace_times(workload, explicit_rate, n_requests, duration_s)
        rate = (len(times) - 1) / times[-1] if len(times) > 1 and times[-1] > 0 else 0.0
    elif kind == WorkloadKind.OFFLINE:
        if n_requests is None:
            raise SimError("offline: give n_requests (every query is issued at t = 0)")
        _count(n_requests, None, 0.0)
        times, rate = np.zeros(n_requests), 0.0
    else:  # closed loop: times are decided by the simulation
        if n_requests is None:
            raise SimError(f"{kind.value}: give n_requests (a closed loop issues one query at a time)")
        _count(n_requests, None, 0.0)
        times, rate = np.full(n_requests, np.nan), 0.0
    n = len(times)
    if n == 0:
        raise SimError("the workload produced no requests (duration too short for the rate?)")
    if kind == WorkloadKind.MULTI_STREAM:
        size = np.full(n, workload.samples_per_query, dtype=np.int64)
    else:
        size = sample_sizes(design.q_pmf, n, rngs[1])
    length = (sample_lengths(scenario.workload.input_len, design.gpu.input_len, n, rngs[2])
              if variable_length else None)
    return Arrivals(t=times, size=size, length=length, closed_loop=kind in CLOSED_LOOP, rate_rps=float(rate))
