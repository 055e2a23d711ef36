"""The batches a GPU side's partitions run at one arrival rate, and the queue of full batches when every instance
is busy: the pieces every wait model of engine.analytic.rates starts from, and that its array paths
(engine.analytic.rate_scan) and the latency bound (engine.analytic.sla_bound) read too.

- batch_mix: batches as large as the timeout lets them grow, grown further until the partitions carry the load
  (None when even Batch_max cannot keep up);
- all_busy_regime: every instance busy, the wait for the next to free plus the G/G/c queue of full batches
  (full_batches, side_full_batches);
- instance_wait: the wait for an instance, one pooled G/G/c or a G/G/1 per partition when arrivals are dealt
  evenly (round-robin);
- partition_groups, partition_kinds: identical partitions (same profile) grouped, so each is worked out once.
Times in s, rates in 1/s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from engine.accelerator_side import GpuSide
from engine.analytic.queueing import gg_c_wait
from engine.policy_rules import scheduler_rule_for
from engine.profiles.tails import DEFAULT_SCV
from engine.vocab import SchedulerPolicy

GPU_SCV = DEFAULT_SCV  # batch service-time jitter (the default cv, engine.profiles.tails)


@dataclass(frozen=True)
class BatchMix:
    """The batches at one rate: per distinct partition (reps, counts) its batch (items, bt), batch time (s,
    svc_t), share of the items (share_t); per partition its batch, busy fraction, share and items/s."""

    saturated: bool  # batches grew beyond the timeout size to keep up
    reps: list
    counts: list[int]
    bt: np.ndarray
    svc_t: np.ndarray
    share_t: np.ndarray
    batch: list[float]
    utils: tuple[float, ...]
    share: np.ndarray
    rates: np.ndarray
    b_mean: float  # mean batch (items) over the items' shares
    svc_mean: float  # mean batch time (s) over the items' shares


def batch_mix(gpu: GpuSide, pooled: bool, lam_items: float) -> Optional[BatchMix]:
    """The batch sizes at `lam_items` items/s, or None when even Batch_max cannot keep up.

    Batches are as large as the timeout lets them grow (1 + lambda x Time_queue, at most Batch_max); if the
    partitions cannot keep up at that size, every partition's batch grows by the same fill level f (0..1 of
    the way to Batch_max) until their capacity meets the load (bisection, 24 steps: 1 part in 16 million).
    """
    parts = gpu.partitions
    n = len(parts)
    tq = gpu.time_queue_s
    # identical partitions behave alike: work per distinct partition, weighted by how many there are
    reps, counts, kinds = partition_kinds(gpu)
    big = [float(part.max_batch) for part in reps]
    # one shared queue (first-idle, JSQ, ELSA) gathers all arrivals for the next batch; round-robin deals
    # each partition only its share
    share_n = 1 if pooled else n
    b_lo = [min(top, 1 + lam_items * tq / share_n) for top in big]

    def batches(level: float) -> list[float]:  # batch size of each partition type at fill level `level`
        return [max(low, 1 + level * (top - 1)) for low, top in zip(b_lo, big)]

    def items_capacity(level: float) -> float:  # sum(count x / t(x)) over the partition types, as a plain loop
        total = 0
        for count, low, top, part in zip(counts, b_lo, big, reps):
            x = max(low, 1 + level * (top - 1))
            total += count * x / part.service(x)
        return total

    saturated = items_capacity(0.0) <= lam_items
    fill = 0.0
    if saturated:
        if items_capacity(1.0) <= lam_items:
            return None
        lo, hi = 0.0, 1.0
        for _ in range(24):  # the fill level at which capacity meets the load (to 1 part in 16 million)
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if items_capacity(mid) >= lam_items else (mid, hi)
        fill = hi
    cnt = np.array(counts, dtype=float)
    bt = np.array(batches(fill))
    svc_t = np.array([part.service(x) for part, x in zip(reps, bt)])
    rates_t = bt / svc_t  # items/s one partition of each type does at its batch
    if pooled:
        share_t = cnt * rates_t / np.dot(cnt, rates_t)  # total share of each type
    else:
        share_t = cnt / n
    util_t = np.minimum(1.0, lam_items * share_t / (cnt * rates_t))
    return BatchMix(saturated=saturated, reps=reps, counts=counts, bt=bt, svc_t=svc_t, share_t=share_t,
                     batch=[float(bt[kind]) for kind in kinds], utils=tuple(float(util_t[kind]) for kind in kinds),
                     share=np.array([share_t[kind] / cnt[kind] for kind in kinds]),
                     rates=np.array([rates_t[kind] for kind in kinds]), b_mean=float(np.dot(share_t, bt)),
                     svc_mean=float(np.dot(share_t, svc_t)))


@dataclass(frozen=True)
class BusyRegime:
    """Waits (s) when every instance is busy: the queue of full batches (mean, p-quantile) and the wait for
    the next instance to free up plus that queue (mean, p-quantile)."""

    full_mean_s: float
    full_q_s: float
    mean_s: float
    q_s: float


def all_busy_regime(gpu: GpuSide, scheduler: SchedulerPolicy, mix: BatchMix, lam_items: float,
                     p: float) -> BusyRegime:
    """Every instance busy: a request waits for the next to free up, t/(c+1) on average and up to p t (t the
    mean batch time, c instances), plus the queue that builds as the load approaches what full batches carry
    (G/G/c on full batches with c_a^2 = 1/b, which grows without bound at capacity; instance_wait)."""
    n = len(gpu.partitions)
    b_full, full_rates = side_full_batches(gpu)
    w_full, w_full_q = instance_wait(scheduler, lam_items / b_full, n, mix.svc_mean, GPU_SCV, 1.0 / b_full,
                                     full_rates, mix.share, p)
    return BusyRegime(full_mean_s=w_full, full_q_s=w_full_q, mean_s=mix.svc_mean / (n + 1) + w_full,
                       q_s=p * mix.svc_mean + w_full_q)


def side_full_batches(gpu: GpuSide) -> tuple[float, np.ndarray]:
    """full_batches of the side's partitions, remembered by the side (a pure function of it)."""
    return gpu.remember(("full batches",), lambda: full_batches(gpu.partitions))


def full_batches(parts) -> tuple[float, np.ndarray]:
    """(the mean full batch, items, over the partitions' full-batch rates; each partition's full batches per s):
    what all_busy_regime reads of a side at every rate."""
    full = np.array([part.max_batch / part.service(part.max_batch) for part in parts])
    b_full = float(np.dot(full / full.sum(), [part.max_batch for part in parts]))
    return b_full, full / np.array([part.max_batch for part in parts])



def instance_wait(scheduler, lam_jobs, n, svc_mean, cs2, ca2, rates, share, p) -> tuple[float, float]:
    """Mean and p-quantile of the wait for an instance (pooled G/G/c, or per-partition G/G/1 when the scheduler
    deals arrivals evenly, as round-robin does)."""
    if not scheduler_rule_for(scheduler).pooled:
        # every n-th arrival goes to a partition: Erlang-n spaced, c_a^2 divided by n; partitions alike wait alike
        alike: dict = {}
        waits = [alike[(s, r)] if (s, r) in alike else alike.setdefault((s, r), gg_c_wait(lam_jobs * s, 1 / r, 1,
                                                                                           ca2 / n, cs2, p))
                 for s, r in zip(share, rates)]
        return float(np.dot(share, [w[0] for w in waits])), max(w[1] for w in waits)
    servers = n
    mean_s = n / float(np.sum(rates))  # pooled service time with the partitions' total capacity
    wq, wqq, _ = gg_c_wait(lam_jobs, mean_s, servers, ca2, cs2, p)
    return wq, wqq


def partition_kinds(gpu: GpuSide) -> tuple[list, list[int], list[int]]:
    """partition_groups of the side's partitions and each partition's index among the distinct ones (remembered)."""
    def make():
        reps, counts = partition_groups(gpu.partitions)
        return reps, counts, [next(kind for kind, rep in enumerate(reps) if rep.name == part.name)
                              for part in gpu.partitions]

    return gpu.remember(("kinds",), make)


def partition_groups(parts) -> tuple[list, list[int]]:
    """Distinct partitions (by profile) and how many of each."""
    reps, counts = [], []
    for pt in parts:
        for k, r in enumerate(reps):
            if r.name == pt.name:
                counts[k] += 1
                break
        else:
            reps.append(pt)
            counts.append(1)
    return reps, counts
