"""simulate(scenario, n_requests | duration_s, seed) -> SimResult: one run of the discrete-event simulator.

A request's path: arrival -> host stages (RPC/host ingest, preprocessing pool, ... each a FIFO pool,
engine.sim.hoststages) -> batcher -> scheduler -> GPU partition (simpy processes, engine.sim.gpu)
-> response. Every number comes from the same Design the analytic engine evaluates
(engine.analytic.pipeline.build_design), so the simulator samples what the analytic model averages.
Randomness: numpy.random.SeedSequence(seed).spawn(...) streams owned by the run; arrivals, sizes,
lengths and service draws are pre-generated arrays, so one seed gives one result.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
from pydantic import ValidationError

from engine.contract import MAX_RATE_RPS, MIN_POSITIVE
from engine.scenario import Scenario, load_scenario
from engine.sim.assemble import assemble
from engine.sim.errors import SimError
from engine.sim.gpu import GpuEngine, GpuRequests, GpuSpec
from engine.sim.hoststages import run_host
from engine.sim.plan import gpu_plan
from engine.sim.service import GpuService, ServiceSpec
from engine.sim.workload import CLOSED_LOOP, SimWorkload, generate
from engine.analytic import Context, build_design
from engine.store import Store
from engine.errors import excerpt
from engine.analytic.operating_point import capacity
from engine.vocab import WorkloadKind

DEFAULT_WARMUP = 0.1
STATS_ENGINES = ("quantile_cont", "duckdb", "numpy")


def _context():
    return Context.from_store(Store())


def capacity_of(design, service: Optional[ServiceSpec], plan, host: bool) -> float:
    """Requests/s the design sustains: the analytic capacity, or with a synthetic service, each partition
    at its Batch_max (one query at a time without batching) and the host stages' capacities."""
    if service is None:
        return capacity(design)[0]
    n_partitions = len(design.gpu.partitions)
    means_ms = service.mean_ms if isinstance(service.mean_ms, list) else [service.mean_ms] * n_partitions
    size_pmf = design.q_pmf
    sizes = np.arange(1, len(size_pmf) + 1)
    total = 0.0
    for mean_ms, batch_max in zip(means_ms, plan.batch_max):
        if plan.request_cap == 1:  # one query per batch, at its own size
            total += 1.0 / float(np.dot(size_pmf, mean_ms / 1e3 * (1 + service.batch_slope * (sizes - 1))))
        else:  # full batches of Batch_max items
            full = batch_max[0]
            total += full / (mean_ms / 1e3 * (1 + service.batch_slope * (full - 1))) / design.q_mean
    if host:
        total = min([total] + [stage.capacity_rps for stage in design.host_stages])
    return total


def _workload_from(data: dict) -> SimWorkload:
    """A SimWorkload from a dict; SimError names the field (a trace file, e.g., is refused, never read)."""


    try:
        return SimWorkload.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ()))
        cause = (first.get("ctx") or {}).get("error")
        message = str(cause) if cause is not None else first.get("msg", "")
        given = (f" (got {excerpt(first['input'])})"
                 if "input" in first and not isinstance(first["input"], dict) else "")
        raise SimError(f"workload{'.' + where if where else ''}: {message}{given}") from None


def simulate(scenario, n_requests: Optional[int] = None, *, duration_s: Optional[float] = None, seed: int = 0,
             progress: Optional[Callable[[float], None]] = None, ctx=None, service: Optional[ServiceSpec] = None,
             workload: Optional[SimWorkload] = None, rate: Optional[float] = None, warmup: float = DEFAULT_WARMUP,
             stats: str = "quantile_cont", timeseries: Optional[bool] = None):
    """Simulate a scenario (Scenario, dict or JSON text) for n_requests or duration_s of arrivals.

    ctx: an engine.analytic.Context (built from the default store if None); service: a synthetic GPU
    service distribution (validation); workload: the arrival process (default: the scenario's own,
    workload.arrival, whatever its kind); rate: override the arrival rate (req/s), which scales the process
    (a diurnal cycle's base rate, a trace's mean rate; closed loops and offline have none); warmup: fraction
    of requests discarded;
    stats: how percentiles are computed: 'quantile_cont' (DuckDB's quantile_cont in numpy, engine.sim.quantiles),
    'duckdb' (through the store's DuckDB: the same numbers, slower) or 'numpy' (np.quantile, which differs from
    DuckDB's in the last bits; search and sweeps use it).
    """
    ctx = ctx if ctx is not None else _context()
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario, ctx.book)
    design = build_design(scenario, ctx)
    return simulate_design(design, n_requests, duration_s=duration_s, seed=seed, progress=progress, ctx=ctx,
                           service=service, workload=workload, rate=rate, warmup=warmup, stats=stats,
                           timeseries=timeseries)


@dataclass(frozen=True)
class PreparedRun:
    """Everything a run draws before its GPU side: the workload, the host stages' times and the GPU side's
    inputs (GpuSpec, GpuRequests). Benchmarks feed the same inputs to reference loops."""

    workload: SimWorkload
    service: Optional[ServiceSpec]
    with_host: bool
    stages: tuple
    arrivals: object  # engine.sim.workload.Arrivals
    host: object  # engine.sim.hoststages.HostTimes
    plan: object  # engine.sim.plan.GpuPlan
    spec: GpuSpec
    requests: GpuRequests
    notes: list


def prepare(design, n_requests: Optional[int] = None, *, duration_s: Optional[float] = None, seed: int = 0,
            ctx=None, service: Optional[ServiceSpec] = None, workload: Optional[SimWorkload] = None,
            rate: Optional[float] = None) -> PreparedRun:
    """The draws and host-stage times of one run (simulate_design's arguments, already validated)."""
    scenario_arrival = design.scenario.workload.arrival
    if workload is None:  # the scenario's own arrival process; its rate unless `rate` overrides it
        workload = SimWorkload(**{**scenario_arrival.model_dump(), "rate_rps": None})
    if isinstance(workload, dict):
        workload = _workload_from(workload)
    if isinstance(service, dict):
        service = ServiceSpec.model_validate(service)
    service = service or design.scenario.service
    with_host = service is None or service.host == "model"
    stages = design.host_stages if with_host else ()
    # streams: arrivals, sizes, lengths, GPU service, then one per host stage (fixed slots: adding a stage
    # leaves the others' draws alone)
    streams = [np.random.default_rng(child) for child in np.random.SeedSequence(seed).spawn(4 + len(stages))]
    variable = design.gpu.input_len is not None
    arrivals = generate(workload, design, n_requests, duration_s, streams[:3], variable, rate)
    n = len(arrivals.t)
    closed = workload.kind in CLOSED_LOOP
    host = run_host(stages, np.zeros(n) if closed else arrivals.t, arrivals.size, design.q_mean, streams[4:],
                    isolated=closed)
    plan = gpu_plan(design, ctx, arrivals.length)
    gpu_service = GpuService(design, n, streams[3], service, ctx)
    notes = list(design.notes) + list(plan.notes) + gpu_service.notes
    if service is not None:
        notes.append(f"synthetic GPU service: {service.kind.value}, mean {service.mean_ms} ms"
                     + ("" if with_host else "; host stages left out"))
    spec = GpuSpec(service=gpu_service, plan=plan, scheduler=design.scheduler.value, sla_s=design.sla_s,
                   alpha=design.scenario.scheduler.alpha, beta=design.scenario.scheduler.beta)
    requests = GpuRequests(ready=host.ready, sizes=arrivals.size, lengths=arrivals.length,
                           arrival=None if closed else arrivals.t, closed_loop=closed,
                           ready_order=None if closed else host.ready_order)
    return PreparedRun(workload=workload, service=service, with_host=with_host, stages=stages, arrivals=arrivals,
                       host=host, plan=plan, spec=spec, requests=requests, notes=notes)


def simulate_design(design, n_requests: Optional[int] = None, *, duration_s: Optional[float] = None, seed: int = 0,
                    progress: Optional[Callable[[float], None]] = None, ctx=None,
                    service: Optional[ServiceSpec] = None, workload: Optional[SimWorkload] = None,
                    rate: Optional[float] = None, warmup: float = DEFAULT_WARMUP, stats: str = "quantile_cont",
                    timeseries: Optional[bool] = None):
    """simulate() for a prepared Design (engine.analytic.build_design)."""
    t_start = time.perf_counter()
    if stats not in STATS_ENGINES:
        raise SimError(f"stats {stats!r} is unknown; valid: {', '.join(STATS_ENGINES)}")
    if not 0 <= warmup < 1:
        raise SimError(f"warmup: a fraction in [0, 1), got {warmup}")
    if rate is not None and not (math.isfinite(rate) and MIN_POSITIVE <= rate <= MAX_RATE_RPS):
        raise SimError(f"rate: must be a number of requests/s in [{MIN_POSITIVE:g}, {MAX_RATE_RPS:g}], got {rate:.6g}")
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise SimError(f"seed: a non-negative integer, got {seed!r}")
    run = prepare(design, n_requests, duration_s=duration_s, seed=int(seed), ctx=ctx, service=service,
                  workload=workload, rate=rate)
    workload, service, plan, arrivals, host = run.workload, run.service, run.plan, run.arrivals, run.host
    stages, with_host, notes = run.stages, run.with_host, run.notes
    spec, requests = run.spec, run.requests
    log = GpuEngine(spec, requests, progress=progress).run()
    del run, spec, requests  # the service's draws (one per batch) are not needed for the statistics
    if np.any(log.request_batch < 0):
        raise RuntimeError("internal error: a request was never served")
    series = timeseries if timeseries is not None else workload.kind in (WorkloadKind.DIURNAL, WorkloadKind.TRACE)
    return assemble(design, plan, workload, arrivals, host, log, host_stages=stages, seed=int(seed), warmup=warmup,
                    engine=stats, capacity=capacity_of(design, service, plan, with_host), want_series=series,
                    t_start=t_start, notes=notes)
