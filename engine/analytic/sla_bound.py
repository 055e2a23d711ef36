"""A proven lower bound on a design's SLA-percentile latency, at every rate or at given rates, worked out without the
accelerator's state: sla_bounded_rate skips the rates (or the whole scan) where the bound already misses the SLA.
Times in s, rates in requests/s.

engine.analytic.operating_point.sla_latency is mean + sign(s) sqrt(|s|), s = sum e_i |e_i| over the components'
excesses e_i over their means (_quantile), which is at least mean + sqrt(sum_P e_i^2) - sum_N |e_i| for any subset P
of the components with e_i >= 0 and N those with e_i < 0 (sqrt(a - b) >= sqrt(a) - sqrt(b) for a >= b >= 0). Each
component (mean W, quantile Q) is then replaced by a floor (a, b) with W + sqrt((Q - W)^2 + R) >= a + sqrt(b^2 + R)
when Q >= W and Q + sqrt(R) >= a + sqrt(b^2 + R) when Q < W, for every R >= 0, so that the bound is
sum a + sqrt(sum b^2):
- a host stage's fixed time: (fixed, 0); its service: its mean, or its quantile when lognormal_quantile puts that
  below the mean, and its positive excess (both known); its G/G/c wait at a given rate: (min(W, Q), max(Q - W, 0)),
  at any rate (0, 0);
- the accelerator's queue wait under a pooled timer (below saturation and above it): at least the queue of full
  batches' (batch_mix.all_busy_regime), as a host wait; elsewhere (0, 0);
- the accelerator's batching wait: (0, 0), except where its quantile is known to be
  at least c > 0 (W + sqrt((c - W)^2 + R) grows with W up to c, and c + sqrt(R) >= sqrt(c^2 + R)): (0, c). One
  instance under a timer (rates._timer_chain_wait) has c = p Time_queue at every rate; below saturation the
  gather-and-queue model has c = p min(Time_queue, (b - 1) / lambda) with every batch b >= min(Batch_max,
  1 + lambda Time_queue / n) (n = 1 pooled, else the partitions: batch_mix.batch_mix), so c >= p min(Time_queue / n,
  (min Batch_max - 1) / lambda);
- the accelerator's request service: its mean is a share-weighted mean of the partitions' batch times mean_s, its
  quantile that of a mixture of log-normals whose p-quantiles are each at least min(tail, mean) exp(-sigma^2 / 2)
  of a batch size (engine.profiles.tails.lognormal_sigmas_for_ratios: the tail itself, the default jitter's
  quantile when the tail is below the mean, above the mean when the ratio is too large for the small root), so
  (the least of those over every partition's tables, 0).
No bound (0) at a percentile of 0.5 or below, or for PREBA's backlog chain on one instance (its batches cost less
than the tables say: engine.analytic.preba).
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from engine.analytic.design import Design
from engine.analytic.gather_scan import gg_c_wait_vec, service_at
from engine.analytic.preba_chain import partition_backlog_table
from engine.analytic.batch_mix import GPU_SCV, partition_groups, side_full_batches
from engine.policy_rules import WaitModel, rule_for, scheduler_rule_for
from engine.profiles.tails import DEFAULT_SIGMA, lognormal_quantile

BOUND_MARGIN = 1e-9  # relative: the bound's sums run in another order, the mixture quantile's root is found to 1e-10
SATURATION_MARGIN = 1e-9  # relative: a rate this close to the timer-sized batches' capacity may count as saturated


def sla_latency_lower_bound(design: Design) -> float:
    """The lower bound (s) on the SLA-percentile latency at every rate (the module's, host waits at 0 and the
    batching wait counted only where it holds at every rate): where it exceeds the SLA no rate meets it, and
    sla_bounded_rate returns 0 without scanning (the answer its scan gives then, at a few ms a design)."""
    return float(_bounds(design, None)[0])


def sla_latency_lower_bounds(design: Design, rates: np.ndarray, waits: Optional[list] = None) -> np.ndarray:
    """The lower bound (s) on the SLA-percentile latency at each of `rates` (requests/s, > 0): the host waits as
    they are there (host_waits' at these rates, if already worked out), the batching wait where it is known below
    saturation."""
    rates = np.asarray(rates, dtype=float)
    return _bounds(design, rates, host_waits(design, rates) if waits is None else waits)


def host_waits(design: Design, rates: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """(mean wait, p-quantile of the wait) in s of each host stage at each of `rates`: host_point's G/G/c
    (Allen-Cunneen mean, exponential tail; gather_scan.gg_c_wait_vec), a stage without service waiting 0 below its
    capacity and forever at it. The scan's latencies (operating_point._scan_latencies) and the bound share them."""
    out = []
    with np.errstate(invalid="ignore"):
        for stage in design.host_stages:
            if stage.service_s <= 0:
                wait = np.where(rates / stage.capacity_rps < 1, 0.0, math.inf)
                out.append((wait, wait))
            else:
                servers = max(stage.capacity_rps * stage.service_s, 1e-9)
                out.append(gg_c_wait_vec(rates, stage.service_s, servers, 1.0, stage.scv, design.sla_percentile))
    return out


def _bounds(design: Design, rates: Optional[np.ndarray], waits: Optional[list] = None) -> np.ndarray:
    p = design.sla_percentile
    gpu = design.gpu
    rule = rule_for(gpu.policy)
    parts = gpu.partitions
    shape = (1,) if rates is None else rates.shape
    one, tq = len(parts) == 1, gpu.time_queue_s
    if p <= 0.5 or (one and tq > 0 and rule.length_buckets and partition_backlog_table(parts[0]) is not None):
        return np.zeros(shape)
    total, positive = np.zeros(shape), np.zeros(shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        for k, s in enumerate(design.host_stages):
            total += s.fixed_s
            if s.service_s > 0:
                e = lognormal_quantile(s.service_s, s.scv, p) - s.service_s
                total += s.service_s + min(e, 0.0)
                positive += max(e, 0.0) ** 2
            if waits is not None:
                wait, wait_q = waits[k]
                total += np.minimum(wait, wait_q)
                positive += np.where(np.isfinite(wait_q - wait), np.maximum(wait_q - wait, 0.0), 0.0) ** 2
        total += gpu.remember(("service floor",), lambda: _service_floor(parts))
        if rule.batches and tq > 0:
            if one and rule.wait_model == WaitModel.TIMER_CHAIN:
                positive += (p * tq) ** 2
            elif rates is not None and not (one and rule.wait_model == WaitModel.BULK_SERVICE):
                # pure in the side and the rates: designs sharing a side (hosts, RPC paths, preprocessing) scan
                # the same rates when the accelerator is their bottleneck, so the side remembers them
                key = (design.scheduler, design.q_mean, p, rates.tobytes())
                positive += (p * gpu.remember(("gathering floor",) + key, lambda: _gathering_floor(design, rates))) ** 2
                if scheduler_rule_for(design.scheduler).pooled:
                    wait, wait_q = gpu.remember(("full batch queue",) + key, lambda: _full_batch_queue(design, rates))
                    total += np.minimum(wait, wait_q)
                    positive += np.where(np.isfinite(wait_q - wait), np.maximum(wait_q - wait, 0.0), 0.0) ** 2
    return total + np.sqrt(positive)


def _service_floor(parts) -> float:
    """The floor (s) on the accelerator's request service quantile: the least mean or tail of any batch of any
    partition, times exp(-sigma^2 / 2) (the module's docstring); remembered by the side."""
    return min((min(float(np.min(part.mean_s)), float(np.min(part.tail_s))) for part in parts),
               default=0.0) * math.exp(-DEFAULT_SIGMA ** 2 / 2)


def _full_batch_queue(design: Design, rates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, p-quantile) in s of the queue of full batches at each rate, a pooled G/G/c with the partitions'
    full-batch rates (batch_mix.all_busy_regime's w_full): under a pooled timer the accelerator's queue wait is at
    least this below saturation (rates._gather_and_queue_wait takes the larger, or the all-busy regime's wait,
    which holds it) and above (the all-busy regime's wait)."""
    gpu = design.gpu
    n = len(gpu.partitions)
    b_full, full_rates = side_full_batches(gpu)
    return gg_c_wait_vec(rates * design.q_mean / b_full, n / float(np.sum(full_rates)), n, 1.0 / b_full, GPU_SCV,
                         design.sla_percentile)


def _gathering_floor(design: Design, rates: np.ndarray) -> np.ndarray:
    """A floor (s) on the gather-and-queue model's gathering time at each rate: min(Time_queue / n, (min Batch_max -
    1) / lambda) where the partitions at their timer-sized batches carry more than the load (batch_mix.batch_mix's
    test, with SATURATION_MARGIN), else 0 (saturated: no gathering time)."""
    gpu = design.gpu
    tq = gpu.time_queue_s
    pooled = scheduler_rule_for(design.scheduler).pooled
    share_n = 1 if pooled else len(gpu.partitions)
    lam_items = rates * design.q_mean
    reps, counts = partition_groups(gpu.partitions)
    capacity = np.zeros(rates.shape)
    for part, count in zip(reps, counts):
        b_lo = np.minimum(float(part.max_batch), 1 + lam_items * tq / share_n)
        capacity += count * b_lo / service_at(part, b_lo)
    big = min(float(part.max_batch) for part in reps)
    form = np.minimum(tq / share_n, (big - 1) / lam_items)
    return np.where(capacity > lam_items * (1 + SATURATION_MARGIN), form, 0.0)
