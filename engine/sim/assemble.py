"""Turn one run's arrays (workload, host stages, GPU batch log) into per-request records and a SimResult."""

from __future__ import annotations

import time

import numpy as np

from engine.sim import stats
from engine.sim.hoststages import own_service_ratio
from engine.results import LatencySummary, SimulatedBatching, SimulatedPartition, SlaOutcome
from engine.sim.result import LatencyHalfWidths, SimRecords, SimResult
from engine.sim.workload import WorkloadKind, mlperf_bound_ms


def records(arrivals, host, log, host_shift: bool) -> dict[str, np.ndarray]:
    """Per-request columns (s). host_shift: the host times are offsets from each request's arrival."""
    arrival = log.arrival if log.arrival is not None else arrivals.t
    b = log.req_batch
    cols = {"arrival": arrival}
    for name, enter, start, end in zip(host.names, host.enter, host.start, host.end):
        shift = arrival if host_shift else 0.0
        cols[f"{name}_enter"], cols[f"{name}_start"], cols[f"{name}_end"] = enter + shift, start + shift, end + shift
    cols["ready"] = log.ready if log.ready is not None else host.ready
    cols["batch"] = b
    cols["batch_formed"] = log.formed[b]
    cols["batch_start"] = log.start[b]
    cols["end"] = log.end[b]
    cols["partition"] = log.part[b]
    cols["batch_items"] = log.items[b]
    cols["size"] = arrivals.size
    if arrivals.length is not None:
        cols["length"] = arrivals.length
    cols["latency"] = cols["end"] - arrival
    return cols


def assemble(design, plan, workload, arrivals, host, log, *, host_stages, seed: int, warmup: float,
             engine: str, capacity: float, want_series: bool, t_start: float, notes: list[str]) -> SimResult:
    sc = design.scenario
    kind = workload.kind
    offline = kind == WorkloadKind.OFFLINE
    closed = arrivals.closed_loop
    cols = records(arrivals, host, log, host_shift=closed)
    n = len(cols["arrival"])
    first = 0 if offline else min(n - 1, int(round(warmup * n)))
    arrival, end, lat = cols["arrival"], cols["end"], cols["latency"]
    end_sorted = np.sort(end)
    t0, t1 = stats.window(arrival, end, first, offline, closed)
    span = max(t1 - t0, 1e-12)

    latency, ci, k = stats.latency_stats(cols, first, design.sla_percentile, engine)
    if offline:
        throughput = n / span
    elif closed:
        throughput = (n - first) / span
    else:
        throughput = float(np.count_nonzero((end >= t0) & (end <= t1))) / span
        ci["throughput_rps"] = stats.throughput_ci(arrival, end_sorted, first, k)

    in_win = (arrival >= t0) & (arrival <= t1)
    mean_in_system = stats.overlap(arrival, end, t0, t1) / span
    lam = float(np.count_nonzero(in_win)) / span
    w = float(lat[in_win].mean()) if in_win.any() else 0.0
    little = {"L": mean_in_system, "lambda_rps": lam, "W_s": w,
              "rel_error": abs(mean_in_system - lam * w) / mean_in_system if mean_in_system > 0 else 0.0}

    measured = slice(first, n)
    viol = float(np.mean(lat[measured] > design.sla_s))
    sla_key = f"p{round(design.sla_percentile * 100, 4):g}"
    sla = SlaOutcome(latency_ms=design.sla_s * 1e3, percentile=design.sla_percentile * 100,
                     met=bool(latency[sla_key] <= design.sla_s * 1e3), latency_at_rate_ms=latency[sla_key])

    util: dict[str, float] = {}
    breakdown: dict[str, float] = {}
    for stage, name, k_srv in zip(host_stages, host.names, host.servers):
        s, e, en = cols[f"{name}_start"], cols[f"{name}_end"], cols[f"{name}_enter"]
        breakdown[f"{name}_fixed"] = stage.fixed_s * 1e3
        breakdown[f"{name}_wait"] = float(np.mean((s - en)[measured])) * 1e3
        breakdown[name] = float(np.mean((e - s)[measured])) * 1e3
        # a capped pool's servers stay busy beyond a request's own time there (hoststages.own_service_ratio)
        util[name] = stats.overlap(s, e, t0, t1) / (span * k_srv) / own_service_ratio(stage) if k_srv else 0.0
    ready, bstart, formed = cols["ready"][measured], cols["batch_start"][measured], cols["batch_formed"][measured]
    bwait = np.maximum(0.0, np.minimum(formed, bstart) - ready)
    breakdown["batching_wait"] = float(bwait.mean()) * 1e3
    acc = design.accelerator
    breakdown[f"{acc}_queue"] = float((bstart - ready - bwait).mean()) * 1e3
    breakdown[f"{acc}_service"] = float((cols["end"] - cols["batch_start"])[measured].mean()) * 1e3

    parts = design.gpu.partitions
    in_b = (log.start >= t0) & (log.start <= t1)
    by_part = stats.quantile_table({"latency": lat[measured], "partition": cols["partition"][measured]},
                                   "latency", "partition", (0.99,), engine)[1:]
    lat_p = {g: (mu, q[0]) for g, _, mu, q in by_part}
    plist, busy = [], []
    for index, part in enumerate(parts):
        on_part = log.part == index
        busy_fraction = stats.overlap(log.start[on_part], log.end[on_part], t0, t1) / span
        busy.append(busy_fraction)
        util[f"{design.accelerator}:{part.label}"] = busy_fraction
        measured_batches = in_b & on_part
        caps = plan.caps[index]
        plist.append(SimulatedPartition(
            label=part.label, partition=part.name, batch_max=caps[0] if len(caps) == 1 else caps,
            batches=int(measured_batches.sum()), requests=int(log.nreq[measured_batches].sum()),
            mean_batch_items=float(log.items[measured_batches].mean()) if measured_batches.any() else 0.0,
            mean_service_ms=float((log.end[measured_batches] - log.start[measured_batches]).mean() * 1e3)
            if measured_batches.any() else 0.0,
            utilization=busy_fraction, latency_mean_ms=lat_p.get(index, (float("nan"),))[0] * 1e3,
            latency_p99_ms=lat_p.get(index, (0, float("nan")))[1] * 1e3))
    util[design.accelerator] = float(np.mean(busy))
    hist = np.bincount(log.items[in_b]) if in_b.any() else np.zeros(1, dtype=int)
    histogram = {int(s): int(c) for s, c in enumerate(hist) if c}

    slope, _ = stats.growth(arrival, end_sorted, t0, t1) if not (offline or closed) else (0.0, 0.0)
    stable, reason = stats.stability(arrival, end_sorted, t0, t1, not (offline or closed), arrivals.rate_rps,
                                     capacity)
    mlperf = _mlperf(kind, sc.model, latency, throughput, stable, cols)
    series = stats.timeseries(cols, end_sorted, engine) if want_series else None
    batching = SimulatedBatching(policy=design.gpu.policy.value, time_queue_ms=plan.tq * 1e3,
                                 batch_max=[caps[0] if len(caps) == 1 else caps for caps in plan.caps],
                                 bucket_width=plan.width,
                                 merge=plan.merge, knee_rule=design.gpu.knee_rule)
    return SimResult(
        name=sc.name, workload=kind.value, seed=seed, n_requests=n, n_measured=n - first, warmup_requests=first,
        sim_time_s=float(end.max()), rate_rps=arrivals.rate_rps, capacity_rps=capacity, stable=stable,
        unstable_reason=reason, queue_growth_rps=slope, throughput_rps=throughput,
        latency_ms=LatencySummary(**{key: latency[key] for key in LatencySummary.model_fields}),
        ci=LatencyHalfWidths(**{key: ci[key] for key in LatencySummary.model_fields}, sla=ci[sla_key],
                             throughput_rps=ci.get("throughput_rps")),
        sla=sla, sla_violation_rate=viol, mean_in_system=mean_in_system, little=little, utilization=util,
        breakdown_ms=breakdown, batch_size_histogram=histogram, batching=batching, partitions=plist,
        mlperf=mlperf, timeseries=series, stats_engine=engine, wall_s=time.perf_counter() - t_start,
        notes=list(dict.fromkeys(notes)), records=SimRecords(cols, first))


def _mlperf(kind, model: str, latency: dict, throughput: float, stable: bool, cols) -> dict | None:
    if kind == WorkloadKind.MLPERF_SERVER:
        bound = mlperf_bound_ms(model)
        return {"scenario": "Server", "metric": "p99 latency", "p99_ms": latency["p99"], "bound_ms": bound,
                "passed": bool(stable and latency["p99"] <= bound)}
    if kind == WorkloadKind.SINGLE_STREAM:
        p90 = float(np.quantile(cols["latency"], 0.9)) * 1e3
        return {"scenario": "SingleStream", "metric": "p90 latency", "p90_ms": p90}
    if kind == WorkloadKind.MULTI_STREAM:
        return {"scenario": "MultiStream", "metric": "p99 latency", "p99_ms": latency["p99"]}
    if kind == WorkloadKind.OFFLINE:
        return {"scenario": "Offline", "metric": "samples/s",
                "samples_per_s": throughput * float(np.mean(cols["size"]))}
    return None
