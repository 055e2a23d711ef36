"""Statistics of a run from its per-request columns: percentiles (DuckDB's quantile_cont in numpy, the store's
DuckDB, or numpy's quantile), batch means confidence intervals, throughput, Little's law, utilisation,
breakdown, stability.

Measurement window: requests in arrival order after the warm-up; the window runs from the first
measured arrival to the last arrival (open loop), so the drain after the last arrival is left out.
Confidence intervals (95 %): the mean and throughput by batch means over 20 consecutive groups
(t(19) x the groups' standard deviation / sqrt(20)); a percentile by batch means on its exceedance
indicator, inverted through the quantile function, with 5-20 batches sized to the tail (quantile_ci).
Stability: decided from the run alone (stability): the number in system growing over the second half
of the window, or fewer completions than arrivals in it; the analytic capacity only gives context
(the least-squares slope of N(t) over the whole window is reported as queue_growth_rps).
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from engine.sim.quantiles import (OrderStatistics, group_quantiles, numpy_quantiles, quantile_cont,
                                  quantile_cont_partitioned, split_by)
from engine.sim.result import t975
from engine.store.summary import summarize
from engine.profiles.tails import percentile_key

GROUPS = 20
CHUNK = 1 << 15  # elements of a scratch chunk that stays in cache (256 KiB of doubles)


class EndTimes:
    """Every request's end time in sorted order, read through counts (what np.searchsorted of that array gives):
    the batches' end times sorted with each one's number of requests (a batch's requests end together, so no array
    of a value per request), or the request ends themselves, sorted."""

    __slots__ = ("ends", "ended")

    def __init__(self, ends: np.ndarray, requests: Optional[np.ndarray] = None):
        if requests is not None and not np.all(requests > 0):  # a batch of no requests ends none
            ends, requests = ends[requests > 0], requests[requests > 0]
        self.ends = ends  # sorted
        # requests ended by the i-th end (exclusive), or None: one request an end
        self.ended = None if requests is None else np.concatenate(([0], np.cumsum(requests)))

    def count(self, times, side: str = "right"):
        """Requests that ended at or before each time (side 'right'), or before it ('left')."""
        at = np.searchsorted(self.ends, times, side=side)
        return at if self.ended is None else self.ended[at]

    def last(self) -> float:
        """The latest end."""
        return float(self.ends[-1])


def end_times(end_sorted) -> EndTimes:
    """EndTimes, or the request ends themselves sorted (an array) read as one."""
    return end_sorted if isinstance(end_sorted, EndTimes) else EndTimes(np.asarray(end_sorted))


def between(values: np.ndarray, low: float, high: float):
    """Where low <= values <= high: a slice where the values are in order (arrival times), else a mask."""
    if len(values) and not np.all(values[1:] >= values[:-1]):
        return (values >= low) & (values <= high)
    return slice(int(np.searchsorted(values, low, side="left")), int(np.searchsorted(values, high, side="right")))


def quantile_table(cols: dict, value: str, by: Optional[str], qs: tuple[float, ...], engine: str,
                   total: bool = True):
    """[(group, n, mean, [quantiles...])], overall first (when `by` is given, only if `total`).

    engine: 'quantile_cont' (DuckDB's quantile_cont computed in numpy, engine.sim.quantiles), 'duckdb' (through
    the store's DuckDB: the same numbers) or 'numpy' (np.quantile). Means come from numpy in every engine."""
    values = cols[value]
    if engine in ("duckdb", "quantile_cont"):
        # DuckDB's parallel avg() can differ in the last bit between runs; means come from numpy so that one
        # seed gives one result exactly (quantiles are order statistics: exact either way)
        means = {None: float(values.mean())}
        counts = {None: len(values)}
        if by is not None:
            groups = cols[by]
            sums, group_counts = np.bincount(groups, weights=values), np.bincount(groups)
            present = np.flatnonzero(group_counts).tolist()
            means.update({group: float(sums[group] / group_counts[group]) for group in present})
            counts.update({group: int(group_counts[group]) for group in present})
        if engine == "quantile_cont":
            rows = [(None, counts[None], means[None], quantile_cont(values, qs))] if (total or by is None) else []
            if by is not None:
                rows += [(group, counts[group], means[group], quantiles)
                         for group, quantiles in group_quantiles(cols[by], values, qs)]
            return rows
        frame = summarize(cols, value, by, qs, total=by is not None and total)
        quantile_columns = [column for column in frame.columns if column.startswith("q")]
        rows = []
        for index, (_, row) in enumerate(frame.iterrows()):
            key = None if (by is None or (total and index == 0)) else int(row["grp"])
            rows.append((key, int(row["n"]), means[key], [float(row[column]) for column in quantile_columns]))
        return rows
    rows = [(None, len(values), float(values.mean()), list(np.quantile(values, qs)))] if (total or by is None) else []
    if by is not None:
        for group, chunk in split_by(cols[by], values):
            rows.append((group, len(chunk), float(chunk.mean()), list(np.quantile(chunk, qs))))
    return rows


def overlap(start: np.ndarray, end: np.ndarray, t0: float, t1: float, out: Optional[np.ndarray] = None) -> float:
    """Total time the intervals [start, end] spend inside [t0, t1].

    One full-length array (the clipped ends, from which the clipped starts are taken away a cache-sized chunk at
    a time) where the plain expression makes three: the same differences, summed as one array, so the same sum.
    out: a scratch array at least as long to hold it (else a new one)."""
    inside = np.clip(end, t0, t1, out=None if out is None else out[:len(end)])
    for at in range(0, len(inside), CHUNK):
        inside[at:at + CHUNK] -= np.clip(start[at:at + CHUNK], t0, t1)
    return float(np.sum(inside))


def window(arrival: np.ndarray, end: np.ndarray, first: int, offline: bool, closed: bool) -> tuple[float, float]:
    """The measurement window (t0, t1): from the first measured arrival to the last arrival (open loop), the
    last completion (closed loop), or the whole run (offline)."""
    if offline:
        return 0.0, float(end.max())
    t0 = float(arrival[first])
    t1 = float(end[-1]) if closed else float(arrival[-1])
    if t1 <= t0:
        t1 = float(end.max())
    return t0, t1


def latency_stats(cols: dict, first: int, sla_pct: float, engine: str, scratch: Optional[np.ndarray] = None):
    """latency_ms, ci (ms) and the number of batches of the mean's interval, from the measured requests.
    scratch: an array at least as long as them for the copy the percentiles partition (else a new one).

    The mean's 95 % half-width is batch means over GROUPS consecutive groups; each percentile's is
    quantile_ci's (batch means of the exceedance indicator, inverted through the quantile function).
    """
    measured = cols["latency"][first:]
    n_measured = len(measured)
    # at least 40 requests a group, else fewer groups (1: no interval)
    n_groups = GROUPS if n_measured >= 40 * GROUPS else max(2, n_measured // 40) if n_measured >= 80 else 1
    qs = tuple(dict.fromkeys((0.5, 0.95, 0.99, round(sla_pct, 6))))
    if engine == "quantile_cont":  # quantile_table's numbers, keeping the partitioned copy for the intervals
        copy = measured.copy() if scratch is None else scratch[:n_measured]
        if scratch is not None:
            copy[...] = measured
        mean, (quantiles, ordered) = float(measured.mean()), quantile_cont_partitioned(copy, qs, overwrite=True)
    else:
        _, _, mean, quantiles = quantile_table({"latency": measured}, "latency", None, qs, engine)[0]
        ordered = None  # the column itself: quantile_cis copies it (it partitions `ordered` in place)
    names = ["mean"] + [percentile_key(q) for q in qs]
    latency = dict(zip(names, [mean * 1e3] + [quantile * 1e3 for quantile in quantiles]))
    ci: dict[str, Optional[float]] = {name: None for name in names}
    if n_groups > 1:
        means = np.array([group.mean() for group in np.array_split(measured, n_groups)])
        ci["mean"] = float(t975(n_groups - 1) * means.std(ddof=1) / math.sqrt(n_groups)) * 1e3
        for name, half_width in zip(names[1:], quantile_cis(measured, qs, quantiles, ordered)):
            ci[name] = half_width * 1e3
    return latency, ci, n_groups


MIN_QUANTILE_BATCHES = 5
EXCEEDANCES_PER_BATCH = 360  # expected requests beyond the quantile in each batch (at least)


def quantile_batches(n: int, p: float) -> int:
    """Batches for a p-quantile's interval: as many as leave each batch EXCEEDANCES_PER_BATCH requests on the
    far side of the quantile on average, between MIN_QUANTILE_BATCHES and GROUPS.

    Why: in heavy traffic the requests beyond a high quantile come in clusters (one long queue excursion
    holds many of them), so a batch's exceedance count is far from normal unless the batch spans many
    clusters; with 20 batches of 9,000 requests, M/M/3 at rho 0.95 covered its exact p99 16 times in 20,
    with 5 batches 20 in 20 (benchmarks/ci_coverage.py). Schmeiser (1982, Operations Research 30(3),
    "Batch size effects in the analysis of simulation output") shows few large batches lose little.
    """
    tail = n * min(p, 1 - p)
    return int(min(GROUPS, max(MIN_QUANTILE_BATCHES, tail // EXCEEDANCES_PER_BATCH)))


def quantile_ci(x: np.ndarray, p: float, estimate: float) -> float:
    """95 % half-width of the p-quantile of a dependent sequence x (same unit as x), or nan when too short.

    Method: batch means on the indicator 1{x_i <= estimate} give a confidence interval p -+ h for the
    distribution function at the estimate (batch means: Asmussen and Glynn, Stochastic Simulation, 2007,
    section IV.5; Student t with batches - 1 degrees of freedom); inverting it through the empirical
    quantile function gives [Q(p - h), Q(p + h)] (the distribution-function inversion interval for a
    quantile, Asmussen and Glynn section III.4a; for dependent sequences Heidelberger and Lewis, Operations
    Research 32(1), 1984). The interval is asymmetric; the half-width reported is its longer side, so
    estimate -+ half-width contains it. The former interval, the spread of 20 batch quantiles, is far too
    narrow in heavy traffic, where one batch's queue excursion holds much of the tail (the pooled quantile
    then moves much more than the batch quantiles' average): it held the exact p99 of M/M/3 at rho 0.95 in
    6 runs of 20 (200,000 customers each; benchmarks/ci_coverage.py holds 20 of 20 with this method).
    """
    return quantile_cis(x, (p,), (estimate,))[0]


def quantile_cis(x: np.ndarray, ps, estimates, ordered: Optional[OrderStatistics] = None) -> list[float]:
    """quantile_ci of several quantiles of one sequence, their interval ends read as np.quantile would (the same
    order statistics, so the same numbers) from one scratch copy. ordered: the order statistics of the same
    values already selected (the estimates'), whose copy is partitioned further in place, each end within the
    stretch between positions already in place; x's own order makes the batches."""
    n = len(x)
    ends: list[tuple[int, float, float]] = []  # (which, p - h, p + h)
    for which, (p, estimate) in enumerate(zip(ps, estimates)):
        n_batches = quantile_batches(n, p)
        if n < 2 * n_batches:
            continue
        # each batch's share at or below: a count over its length (np.mean's numbers: an exact sum, one rounding)
        below = np.array([np.count_nonzero(batch <= estimate) / len(batch) for batch in np.array_split(x, n_batches)])
        half_width = float(t975(n_batches - 1) * below.std(ddof=1) / math.sqrt(n_batches))  # of the probability
        half_width = max(half_width, 1.0 / n)  # at least one order statistic either side
        ends.append((which, max(0.0, p - half_width), min(1.0, p + half_width)))
    out = [math.nan] * len(ps)
    if ends:
        # a partially sorted copy is the caller's own scratch: partitioned further in place, not copied again
        order = ordered if ordered is not None else OrderStatistics(x.copy())
        values = numpy_quantiles(order, [q for _, low, high in ends for q in (low, high)])
        for index, (which, _, _) in enumerate(ends):
            low, high = values[2 * index], values[2 * index + 1]
            out[which] = max(estimates[which] - low, high - estimates[which])
    return out


def throughput_ci(arrival: np.ndarray, end_sorted: EndTimes | np.ndarray, first: int, n_groups: int) -> Optional[float]:
    """95 % half-width of the throughput (req/s): batch means over n_groups spans of the measured arrivals."""
    end_sorted = end_times(end_sorted)
    if n_groups < 2:
        return None
    bounds = first + (np.arange(n_groups + 1) * (len(arrival) - 1 - first)) // n_groups
    edges = arrival[bounds]
    span = np.diff(edges)
    if np.any(span <= 0):
        return None
    done = np.diff(end_sorted.count(edges))
    rates = done / span
    return float(t975(n_groups - 1) * rates.std(ddof=1) / math.sqrt(n_groups))


def growth(arrival: np.ndarray, end_sorted: EndTimes | np.ndarray, t0: float, t1: float) -> tuple[float, float]:
    """(least-squares slope of the number in system over [t0, t1] in requests/s, its rise over the window)."""
    end_sorted = end_times(end_sorted)
    times = np.linspace(t0, t1, 41)
    in_system = np.searchsorted(arrival, times, side="right") - end_sorted.count(times)
    if t1 <= t0:
        return 0.0, 0.0
    slope = float(np.polyfit(times - t0, in_system, 1)[0])
    return slope, slope * (t1 - t0)


def stability(arrival: np.ndarray, end_sorted: EndTimes | np.ndarray, t0: float, t1: float, open_loop: bool,
              rate: float, capacity: float) -> tuple[bool, Optional[str]]:
    """The run's own verdict: (stable, which test tripped and by how much, or None).

    Two tests on the measurement window [t0, t1], each with a tolerance of max(20 requests, 2 % of the
    arrivals it looks at), so a stationary queue's fluctuations do not trip them:
    - queue growth: the number in system rises over the second half of the window (least-squares
      slope of N(t) there times its length), where a queue that is still filling after the warm-up
      has settled if it ever will;
    - throughput: fewer requests complete in the window than arrive in it (completed vs offered).
    The analytic capacity is not a test (it can be wrong, which is what the simulator is for); it is
    quoted in the reason for context. The run always goes to its last request, so nothing says it stopped.
    """
    end_sorted = end_times(end_sorted)
    if not open_loop or t1 <= t0:
        return True, None
    reasons = []
    mid = 0.5 * (t0 + t1)
    slope, rise = growth(arrival, end_sorted, mid, t1)
    half = int(np.searchsorted(arrival, t1, side="right") - np.searchsorted(arrival, mid, side="left"))
    if rise > max(20.0, 0.02 * half):
        reasons.append(f"queue growth: the number in system rose by {rise:,.0f} requests over the second half "
                       f"of the run ({slope:,.1f} requests/s)")
    offered = int(np.searchsorted(arrival, t1, side="right") - np.searchsorted(arrival, t0, side="left"))
    done = int(end_sorted.count(t1, "right") - end_sorted.count(t0, "left"))
    if offered - done > max(20.0, 0.02 * offered):
        reasons.append(f"throughput: {done:,} requests completed against {offered:,} offered in the measurement "
                       f"window ({done / offered:.1%})")
    if not reasons:
        return True, None
    context = f"offered {rate:,.0f} req/s; analytic capacity {capacity:,.0f} req/s" if capacity > 0 else \
        f"offered {rate:,.0f} req/s"
    return False, "; ".join(reasons) + f" ({context})"


def timeseries(cols: dict, end_sorted: EndTimes | np.ndarray, engine: str, bins: int = 100) -> dict[str, list[float]]:
    """Per time bin (by arrival): arrival rate, completion rate, mean and p99 latency, number in system."""
    end_sorted = end_times(end_sorted)
    arrival = cols["arrival"]
    t_end = float(arrival[-1]) if arrival[-1] > 0 else end_sorted.last()
    edges = np.linspace(0.0, t_end, bins + 1)
    width = edges[1] - edges[0] if t_end > 0 else 1.0
    bin_of = (np.minimum(bins - 1, (arrival / width).astype(np.int64)) if t_end > 0
              else np.zeros(len(arrival), dtype=np.int64))
    table = quantile_table({"latency": cols["latency"], "bin": bin_of}, "latency", "bin", (0.99,), engine,
                           total=False)
    p99 = np.full(bins, np.nan)
    mean = np.full(bins, np.nan)
    for index, _, bin_mean, quantiles in table:
        p99[index], mean[index] = quantiles[0] * 1e3, bin_mean * 1e3
    arrivals = np.bincount(bin_of, minlength=bins) / width
    done = np.diff(end_sorted.count(edges)) / width
    in_system = np.searchsorted(arrival, edges[1:], side="right") - end_sorted.count(edges[1:])
    return {"t_s": edges[1:].tolist(), "arrivals_rps": arrivals.tolist(), "throughput_rps": done.tolist(),
            "mean_ms": mean.tolist(), "p99_ms": p99.tolist(), "in_system": in_system.astype(float).tolist()}


def wait_percentiles(cols: dict, first: int, sla_pct: float) -> dict[str, float]:
    """Mean and percentiles (ms) of the measured requests' time spent waiting, not being served: the waits
    for every host stage's pool (start - enter) and for the GPU (batch start - ready, batching included).
    With no host stages it is the queueing-theory wait in queue, W = T - S."""
    wait = cols["batch_start"][first:] - cols["ready"][first:]
    for name in cols:
        if name.endswith("_enter"):
            stage = name[: -len("_enter")]
            wait = wait + (cols[f"{stage}_start"] - cols[name])[first:]
    qs = tuple(dict.fromkeys((0.5, 0.95, 0.99, round(sla_pct, 6))))
    out = {"mean": float(wait.mean()) * 1e3}
    out.update({percentile_key(q): float(quantile) * 1e3 for q, quantile in zip(qs, np.quantile(wait, qs))})
    return out
