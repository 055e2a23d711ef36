"""Turn one run's arrays (workload, host stages, GPU batch log) into per-request records and a SimResult."""

from __future__ import annotations

import time

import numpy as np

from engine.sim import stats
from engine.sim.hoststages import own_service_ratio
from engine.sim.quantiles import narrow
from engine.results import LatencySummary, SimulatedBatching, SimulatedPartition, SlaOutcome
from engine.sim.result import LatencyHalfWidths, SimRecords, SimResult
from engine.sim.workload import mlperf_bound_ms
from engine.profiles.tails import percentile_key
from engine.vocab import WorkloadKind


def records(arrivals, host, log, host_shift: bool) -> dict[str, np.ndarray]:
    """Per-request columns (s). host_shift: the host times are offsets from each request's arrival."""
    arrival = log.arrival if log.arrival is not None else arrivals.t
    batch = log.request_batch
    cols = {"arrival": arrival}
    for name, enter, start, end in zip(host.names, host.enter, host.start, host.end):
        if host_shift:
            enter, start, end = enter + arrival, start + arrival, end + arrival
        cols[f"{name}_enter"], cols[f"{name}_start"], cols[f"{name}_end"] = enter, start, end  # not copied
    cols["ready"] = log.ready if log.ready is not None else host.ready
    cols["batch"] = batch
    cols["batch_formed"] = log.formed[batch]
    cols["batch_start"] = log.start[batch]
    cols["end"] = log.end[batch]
    cols["partition"] = log.partition[batch]
    cols["batch_items"] = log.items[batch]
    cols["size"] = arrivals.size
    if arrivals.length is not None:
        cols["length"] = arrivals.length
    cols["latency"] = cols["end"] - arrival
    return cols


def sorted_ends(log, end: np.ndarray) -> stats.EndTimes:
    """Every request's end time, sorted, read through counts (stats.EndTimes). Batched: the batches' ends sorted
    with each one's number of requests (a sort of far fewer batches than requests, and no array of a value per
    request: a batch's requests end together); else a merge sort of the request ends (in arrival order they are
    nearly sorted already, which it takes as runs). The same counts either way."""
    if 2 * len(log.end) > len(end):
        return stats.EndTimes(np.sort(end, kind="stable"))
    order = np.argsort(log.end, kind="stable")
    return stats.EndTimes(log.end[order], log.n_requests[order])


def assemble(design, plan, workload, arrivals, host, log, *, host_stages, seed: int, warmup: float,
             engine: str, capacity: float, want_series: bool, t_start: float, notes: list[str]) -> SimResult:
    scenario = design.scenario
    kind = workload.kind
    offline = kind == WorkloadKind.OFFLINE
    closed = arrivals.closed_loop
    cols = records(arrivals, host, log, host_shift=closed)
    n = len(cols["arrival"])
    first = 0 if offline else min(n - 1, int(round(warmup * n)))  # first measured request
    arrival, end, latency_s = cols["arrival"], cols["end"], cols["latency"]
    end_sorted = sorted_ends(log, end)
    t0, t1 = stats.window(arrival, end, first, offline, closed)
    span = max(t1 - t0, 1e-12)

    # a scratch array reused below (the same floats as the plain expressions, which make a new array each: a fresh
    # process pays for every page it touches first): the percentiles' partitioned copy, then differences
    scratch = np.empty(n)
    latency, ci, n_groups = stats.latency_stats(cols, first, design.sla_percentile, engine, scratch=scratch)
    if offline:
        throughput = n / span
    elif closed:
        throughput = (n - first) / span
    else:  # the requests that end in [t0, t1]
        throughput = float(end_sorted.count(t1, "right") - end_sorted.count(t0, "left")) / span
        ci["throughput_rps"] = stats.throughput_ci(arrival, end_sorted, first, n_groups)

    in_window = stats.between(arrival, t0, t1)  # a slice where arrivals are in time order, else a mask
    mean_in_system = stats.overlap(arrival, end, t0, t1, out=scratch) / span
    arrival_rate = float(len(arrival[in_window])) / span if isinstance(in_window, slice) else \
        float(np.count_nonzero(in_window)) / span
    window_latency = latency_s[in_window]
    mean_latency = float(window_latency.mean()) if len(window_latency) else 0.0
    del window_latency
    little = {"L": mean_in_system, "lambda_rps": arrival_rate, "W_s": mean_latency,
              "rel_error": (abs(mean_in_system - arrival_rate * mean_latency) / mean_in_system
                            if mean_in_system > 0 else 0.0)}

    measured, n_measured = slice(first, n), n - first
    # a count over the number measured: np.mean of the indicator's numbers (an exact integer sum, one rounding)
    violation_rate = float(np.count_nonzero(latency_s[measured] > design.sla_s)) / (n - first)
    sla_key = percentile_key(design.sla_percentile)
    sla = SlaOutcome(latency_ms=design.sla_s * 1e3, percentile=design.sla_percentile * 100,
                     met=bool(latency[sla_key] <= design.sla_s * 1e3), latency_at_rate_ms=latency[sla_key])

    util: dict[str, float] = {}
    breakdown: dict[str, float] = {}
    for stage, name, servers in zip(host_stages, host.names, host.servers):
        start, stop, enter = cols[f"{name}_start"], cols[f"{name}_end"], cols[f"{name}_enter"]
        breakdown[f"{name}_fixed"] = stage.fixed_s * 1e3
        breakdown[f"{name}_wait"] = float(np.mean(np.subtract(start[measured], enter[measured],
                                                               out=scratch[:n_measured]))) * 1e3
        breakdown[name] = float(np.mean(np.subtract(stop[measured], start[measured], out=scratch[:n_measured]))) * 1e3
        # a capped pool's servers stay busy beyond a request's own time there (hoststages.own_service_ratio)
        util[name] = (stats.overlap(start, stop, t0, t1, out=scratch) / (span * servers) / own_service_ratio(stage)
                      if servers else 0.0)
    ready, batch_start = cols["ready"][measured], cols["batch_start"][measured]
    formed = cols["batch_formed"][measured]
    # waiting for the batch's rule to be met (not for a free instance after it)
    batching_wait = np.minimum(formed, batch_start, out=scratch[:n_measured])
    np.subtract(batching_wait, ready, out=batching_wait)
    np.maximum(0.0, batching_wait, out=batching_wait)
    breakdown["batching_wait"] = float(batching_wait.mean()) * 1e3
    accelerator = design.accelerator
    queue_wait = np.subtract(batch_start, ready)  # the second scratch array, made only now
    np.subtract(queue_wait, batching_wait, out=queue_wait)
    breakdown[f"{accelerator}_queue"] = float(queue_wait.mean()) * 1e3
    np.subtract(cols["end"][measured], batch_start, out=queue_wait)  # now the service time
    breakdown[f"{accelerator}_service"] = float(queue_wait.mean()) * 1e3
    del scratch, batching_wait, queue_wait

    batch_in_window = (log.start >= t0) & (log.start <= t1)
    by_partition = stats.quantile_table({"latency": latency_s[measured], "partition": cols["partition"][measured]},
                                        "latency", "partition", (0.99,), engine, total=False)
    latency_of = {group: (mean, quantiles[0]) for group, _, mean, quantiles in by_partition}  # (mean, p99) s
    partitions, busy = [], []
    # each partition's batches as positions in the log (ascending: the columns' values in batch order, as a mask
    # gives them), found on a one-byte copy of the partition column: an unbatched run logs a batch per request
    partition_of = narrow(log.partition)
    for index, partition in enumerate(design.gpu.partitions):
        mine = np.flatnonzero(partition_of == index)
        utilisation = stats.overlap(log.start[mine], log.end[mine], t0, t1) / span
        busy.append(utilisation)
        util[f"{accelerator}:{partition.label}"] = utilisation
        counted = mine[batch_in_window[mine]]  # its batches started in the window
        batch_max = plan.batch_max[index]
        partitions.append(SimulatedPartition(
            label=partition.label, partition=partition.name,
            batch_max=batch_max[0] if len(batch_max) == 1 else batch_max, batches=len(counted),
            requests=int(log.n_requests[counted].sum()),
            mean_batch_items=float(log.items[counted].mean()) if len(counted) else 0.0,
            mean_service_ms=float((log.end[counted] - log.start[counted]).mean() * 1e3) if len(counted) else 0.0,
            utilization=utilisation, latency_mean_ms=latency_of.get(index, (float("nan"),))[0] * 1e3,
            latency_p99_ms=latency_of.get(index, (0, float("nan")))[1] * 1e3))
    util[accelerator] = float(np.mean(busy))
    counts = np.bincount(log.items[batch_in_window]) if batch_in_window.any() else np.zeros(1, dtype=int)
    histogram = {int(items): int(count) for items, count in enumerate(counts) if count}

    open_loop = not (offline or closed)
    slope, _ = stats.growth(arrival, end_sorted, t0, t1) if open_loop else (0.0, 0.0)
    stable, reason = stats.stability(arrival, end_sorted, t0, t1, open_loop, arrivals.rate_rps, capacity)
    mlperf = _mlperf(kind, scenario.model, latency, throughput, stable, cols)
    series = stats.timeseries(cols, end_sorted, engine) if want_series else None
    batching = SimulatedBatching(policy=design.gpu.policy.value, time_queue_ms=plan.time_queue_s * 1e3,
                                 batch_max=[caps[0] if len(caps) == 1 else caps for caps in plan.batch_max],
                                 bucket_width=plan.bucket_width, merge=plan.merge, knee_rule=design.gpu.knee_rule)
    return SimResult(
        name=scenario.name, workload=kind.value, seed=seed, n_requests=n, n_measured=n - first,
        warmup_requests=first, sim_time_s=float(end.max()), rate_rps=arrivals.rate_rps, capacity_rps=capacity,
        stable=stable, unstable_reason=reason, queue_growth_rps=slope, throughput_rps=throughput,
        latency_ms=LatencySummary(**{key: latency[key] for key in LatencySummary.model_fields}),
        ci=LatencyHalfWidths(**{key: ci[key] for key in LatencySummary.model_fields}, sla=ci[sla_key],
                             throughput_rps=ci.get("throughput_rps")),
        sla=sla, sla_violation_rate=violation_rate, mean_in_system=mean_in_system, little=little,
        utilization=util, breakdown_ms=breakdown, batch_size_histogram=histogram, batching=batching,
        partitions=partitions, mlperf=mlperf, timeseries=series, stats_engine=engine,
        wall_s=time.perf_counter() - t_start, notes=list(dict.fromkeys(notes)), records=SimRecords(cols, first))


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
