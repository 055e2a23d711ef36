"""Latency and utilisation of a prepared design's GPU side at one arrival rate (the fast inner loop).

Approximations (documented so their error can be measured against the simulator):
- Host stages (RPC, preprocessing, DPU...) are G/G/c queues: engine.analytic.host_point.
- The GPU with batching: at a given rate, batches are as large as the timeout
  lets them grow (1 + lambda x Time_queue, at most Batch_max). If the partitions
  cannot keep up at that size, batches grow until the partitions' capacity
  equals the load (dynamic batching keeps every instance busy); if even
  Batch_max cannot keep up, the design is unstable. Below saturation, batches
  queue for instances as a G/G/c queue with c_a^2 = 1/b (a batch of b Poisson
  arrivals is Erlang-b spaced). In the saturated regime a request waits for the
  next free instance, about t(b)/(c+1) on average and up to t(b).
- One instance under a timer (fixed, PREBA): an embedded Markov chain at batch
  starts (engine.analytic.timerqueue.timer_batch_queue) gives the batch sizes
  (the arrivals in the timeout window, cut at Batch_max) and the wait before
  service, the instance's busy periods included.
- Round-robin splits the load evenly over partitions (each a G/G/1); first-idle,
  ELSA and join-shortest-queue are treated as one pooled queue (their
  differences are the simulator's job).
- A request's tail latency adds the stages' excesses over their means in
  quadrature: q_p = sum(means) + sqrt(sum((q_i - m_i)^2)); exact when one stage
  dominates the variability, an approximation otherwise.
"""

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
from pydantic import BaseModel, ConfigDict

from engine.analytic.queueing import (BatchingQueue, bulk_service_queue, mg1_wait_quantile, timeout_batch_wait,
                                      wait_quantile)
from engine.analytic.service_laws import (size_law, batch_tables, job_law, mean_job, normal_quantile,
                                         request_service_quantile, request_weighted_service)
from engine.analytic.batch_mix import GPU_SCV, BatchMix, BusyRegime, all_busy_regime, batch_mix, instance_wait
from engine.analytic.preba_chain import backlog_chain_queue, full_batch_s, partition_backlog_table, preba_states
from engine.analytic.timerqueue import timer_batch_queue
from engine.analytic.made import made
from engine.profiles.tails import lognormal_sigma_for_ratio, lognormal_sigmas_for_ratios
from engine.accelerator_side import GpuSide
from engine.policy_rules import WaitModel, rule_for, scheduler_rule_for
from engine.vocab import SchedulerPolicy

class GpuPoint(BaseModel):
    model_config = ConfigDict(frozen=True)

    capacity_rps: float  # at Batch_max
    utilization: float
    batch: tuple[float, ...]  # items per batch on each partition
    partition_utilization: tuple[float, ...]
    batching_wait_mean_s: float
    batching_wait_q_s: float
    queue_wait_mean_s: float
    queue_wait_q_s: float
    service_mean_s: float
    service_q_s: float
    saturated: bool  # batches grew beyond the timeout size to keep up


def gpu_capacity_rps(gpu: GpuSide, q_mean: float, q_pmf: np.ndarray,
                     scheduler: SchedulerPolicy = SchedulerPolicy.FIFS) -> float:
    """Most requests/s the partitions sustain (each at its Batch_max, or each query alone without batching).

    Remembered by the GPU side (a pure function of it), so designs sharing the side compute it once.
    """
    return gpu.remember(("capacity", q_mean, q_pmf.tobytes(), scheduler),
                        lambda: _gpu_capacity_rps(gpu, q_mean, q_pmf, scheduler))


def _gpu_capacity_rps(gpu: GpuSide, q_mean: float, q_pmf: np.ndarray, scheduler: SchedulerPolicy) -> float:
    """gpu_capacity_rps, computed.

    A scheduler that deals arrivals evenly (round-robin) gives every partition the same share, so the slowest
    one saturates first: its rate times the number of partitions.
    """
    pooled = scheduler_rule_for(scheduler).pooled
    if not rule_for(gpu.policy).batches:
        rates = [1.0 / mean_job(part, q_pmf)[0] for part in gpu.partitions]
        return float(sum(rates) if pooled else len(rates) * min(rates))
    items = [part.max_batch / full_batch_s(part) for part in gpu.partitions]
    total = sum(items) if pooled else len(items) * min(items)
    return total / q_mean


def gpu_point(gpu: GpuSide, scheduler: SchedulerPolicy, lam: float, q_mean: float, q_pmf: np.ndarray,
              p: float) -> GpuPoint:
    """The GPU partitions at `lam` requests/s (remembered by the side: designs that share it, e.g. a sweep's
    preprocessing devices and hosts, share the answer at each rate)."""
    return gpu.remember(("point", scheduler, lam, q_mean, q_pmf.tobytes(), p),
                        lambda: compute_gpu_point(gpu, scheduler, lam, q_mean, q_pmf, p))


def compute_gpu_point(gpu: GpuSide, scheduler: SchedulerPolicy, lam: float, q_mean: float, q_pmf: np.ndarray,
                      p: float) -> GpuPoint:
    """gpu_point, computed (not remembered): the batching policy's rule (engine.policy_rules) picks the wait
    model's step.

    Without batching every query runs alone (_unbatched_point). With batching: the batch sizes at which the
    partitions carry the load (batch_mix), the all-busy regime's wait (all_busy_regime), then the wait of the
    policy's model: one work-conserving instance (_bulk_service_wait), one instance under a timer
    (_timer_chain_wait), every instance busy (_saturated_wait), else gathering plus a queue of batches
    (_gather_and_queue_wait); _batched_point assembles the answer.
    """
    rule = rule_for(gpu.policy)
    pooled = scheduler_rule_for(scheduler).pooled
    cap = gpu_capacity_rps(gpu, q_mean, q_pmf, scheduler)
    if not rule.batches:
        return _unbatched_point(gpu, scheduler, pooled, lam, q_mean, q_pmf, p, cap)
    instances = len(gpu.partitions)
    lam_items = lam * q_mean
    tq = gpu.time_queue_s
    if instances == 1 and tq > 0 and rule.length_buckets and partition_backlog_table(gpu.partitions[0]) is not None:
        return _preba_backlog_point(gpu.partitions[0], lam, lam_items, tq, p, cap)
    mix = batch_mix(gpu, pooled, lam_items)
    if mix is None:  # even Batch_max cannot keep up
        parts = gpu.partitions
        return made(GpuPoint,
            capacity_rps=cap, utilization=lam / cap, batch=tuple(float(part.max_batch) for part in parts),
            partition_utilization=tuple(1.0 for _ in parts), batching_wait_mean_s=math.inf,
            batching_wait_q_s=math.inf, queue_wait_mean_s=math.inf, queue_wait_q_s=math.inf,
            service_mean_s=float(np.mean([part.service(part.max_batch) for part in parts])), service_q_s=math.inf,
            saturated=True)
    busy = all_busy_regime(gpu, scheduler, mix, lam_items, p)
    if instances == 1 and rule.wait_model == WaitModel.BULK_SERVICE:
        wait = _bulk_service_wait(gpu.partitions[0], mix, busy, lam_items, p)
    elif instances == 1 and tq > 0 and rule.wait_model == WaitModel.TIMER_CHAIN:
        wait = _timer_chain_wait(gpu.partitions[0], lam_items, tq, p)
    elif mix.saturated:
        wait = _saturated_wait(mix, busy)
    else:
        wait = _gather_and_queue_wait(gpu, scheduler, pooled, mix, busy, lam, lam_items, p)
    return _batched_point(cap, lam, mix, wait, p)


def _preba_backlog_point(part, lam: float, lam_items: float, tq: float, p: float, cap: float) -> GpuPoint:
    """PREBA with length buckets on one instance (engine.analytic.preba_chain.preba_backlog_queue): batches grow cheaper
    with the backlog they are cut from, so the chain gives the waits, the batch sizes and the service time of a
    request's batch at every load up to the pure-bucket capacity. The wait splits as for the timer chain: the
    isolated timer batch's gathering (uniform over Time_queue), the rest a wait for the instance with an
    exponential tail and an atom at 0 (wait_quantile)."""
    cap_items = max(1, int(part.max_batch))
    queue = backlog_chain_queue(lam_items, tq, part.derived(("preba-states", cap_items, p),
                                                            lambda: preba_states(part, cap_items, p)), p)
    if queue is None:
        return made(GpuPoint,
            capacity_rps=cap, utilization=lam / cap, batch=(float(cap_items),), partition_utilization=(1.0,),
            batching_wait_mean_s=math.inf, batching_wait_q_s=math.inf, queue_wait_mean_s=math.inf,
            queue_wait_q_s=math.inf, service_mean_s=full_batch_s(part), service_q_s=math.inf, saturated=True)
    wq = max(0.0, queue.wait_mean_s - queue.gather_mean_s)
    b_mean = float(np.dot(np.arange(1, cap_items + 1), queue.batch_pmf))
    return made(GpuPoint,
        capacity_rps=cap, utilization=lam / cap, batch=(b_mean,), partition_utilization=(min(1.0, lam / cap),),
        batching_wait_mean_s=queue.gather_mean_s, batching_wait_q_s=p * tq, queue_wait_mean_s=wq,
        queue_wait_q_s=wait_quantile(wq, queue.p_wait, p), service_mean_s=queue.service_mean_s,
        service_q_s=queue.service_q_s, saturated=False)


def _unbatched_point(gpu: GpuSide, scheduler: SchedulerPolicy, pooled: bool, lam: float, q_mean: float,
                     q_pmf: np.ndarray, p: float, cap: float) -> GpuPoint:
    """WaitModel.UNBATCHED: each query runs alone. The wait for an instance is a pooled G/G/c (or per-partition
    G/G/1 when arrivals are dealt evenly, instance_wait) of jobs with the query-size mixture's mean and SCV; on one
    instance an M/G/1 whose p-quantile the Cramer-Lundberg root gives (mg1_wait_quantile). Times in s."""
    parts = gpu.partitions
    n = len(parts)
    jobs = [mean_job(part, q_pmf) for part in parts]
    rates = np.array([1 / job[0] for job in jobs])
    share = rates / rates.sum() if pooled else np.full(n, 1 / n)
    m1 = float(np.dot(share, [job[0] for job in jobs]))
    m2 = float(np.dot(share, [job[1] for job in jobs]))
    scv = max(m2 / (m1 * m1) - 1, 0.0) + GPU_SCV
    utils = tuple(float(lam * part_share * job[0]) for part_share, job in zip(share, jobs))
    wq, wqq = instance_wait(scheduler, lam, n, m1, scv, 1.0, rates, share, p)
    if n == 1:
        # one instance: M/G/1, whose tail the Cramer-Lundberg root gives (an exponential fitted to the mean
        # wait put the p99 of nearly fixed service 10-18 % above the simulator)
        wqq = mg1_wait_quantile(lam, *job_law(parts[0], q_pmf, p), p)
    # each query runs alone: the mixture over query sizes and partitions, with each batch's own spread
    svc_q = request_service_quantile([(part, q_pmf, part_share) for part, part_share in zip(parts, share)], p,
                                     size_biased=False)
    return made(GpuPoint, capacity_rps=cap, utilization=lam / cap, batch=tuple(q_mean for _ in parts),
                    partition_utilization=utils, batching_wait_mean_s=0.0, batching_wait_q_s=0.0,
                    queue_wait_mean_s=wq, queue_wait_q_s=wqq, service_mean_s=m1, service_q_s=svc_q,
                    saturated=False)


@dataclass(frozen=True)
class _Wait:
    """A request's wait (s) before service: for an instance (mean, p-quantile), the batch's gathering time
    `form_s` (uniform wait 0..form_s), the mean batch (items) and, where a chain gave it, the batch-size law."""

    mean_s: float
    q_s: float
    form_s: float
    b_mean: float
    bulk: Optional[np.ndarray] = None  # P(batch = k), k = 1..Batch_max
    gather_mean_s: Optional[float] = None  # the timer chain's mean gathering wait (else gather_wait_mean)


def _bulk_service_wait(part, mix: BatchMix, busy: BusyRegime, lam_items: float, p: float) -> _Wait:
    """WaitModel.BULK_SERVICE, one work-conserving instance: the bulk-service queue (bulk_service_queue) gives
    the waits and the batch-size law at any load."""
    # one instance taking whatever waits when it frees, at any load: a G/G/1 of single requests misses the
    # batches that form whenever a request waits; the all-busy regime overstates the wait near capacity by
    # about 10 %
    wq, wqq, bulk = _bulk_wait(part, lam_items, p)
    if mix.saturated:
        # always busy: the wait is mostly the residual of the batch in service, bounded by its length, not
        # the exponential tail of a queue (which put this p99 25-58 % above the simulator)
        wqq = busy.q_s
    return _Wait(mean_s=wq, q_s=wqq, form_s=0.0, b_mean=mix.b_mean, bulk=bulk)


def _timer_chain_wait(part, lam_items: float, tq: float, p: float) -> _Wait:
    """WaitModel.TIMER_CHAIN, one instance under a timer of Time_queue `tq` s: the embedded chain at batch starts
    (timer_batch_queue) gives the batch sizes (the arrivals in the timeout window, cut at Batch_max) and the
    wait before service, the instance's busy periods included."""
    # FIXED only for now: the chain costs ~1-2 s per rate, which made a PREBA search of every maximal layout
    # take minutes instead of seconds; PREBA keeps the gathering + full-batch queue model until the chain is
    # fast enough for sweeps (issue 19). The sum of a gathering time capped at Time_queue and a queue of full
    # batches put the mean 10-13 % above the simulator when Time_queue is long against the service time
    # (BERT-large, 61 ms against 14-56 ms)
    timer = _timer_wait(part, lam_items, tq, p)
    bulk = timer.batch_pmf
    gather = min(timer.gather_mean_s, timer.wait_mean_s)
    # the part of the wait beyond an isolated timer batch's is the wait for the instance; its tail
    # exponential with an atom at 0 for the batches the instance is free for (wait_quantile)
    wq = timer.wait_mean_s - gather if timer.stable else math.inf
    wqq = wait_quantile(wq, timer.p_wait, p)
    return _Wait(mean_s=wq, q_s=wqq, form_s=tq, b_mean=float(np.dot(np.arange(1, len(bulk) + 1), bulk)),
                 bulk=bulk, gather_mean_s=gather)


def _saturated_wait(mix: BatchMix, busy: BusyRegime) -> _Wait:
    """Every instance busy (batches grew beyond the timeout size): the all-busy regime's wait, nothing more."""
    # a request waits for the next instance to free up and leaves in the batch it takes then; the batch fills
    # during that same wait, so gathering it costs nothing more (counting (b - 1) / lambda again put the
    # analytic mean 20-30 % above the simulator for long batches)
    return _Wait(mean_s=busy.mean_s, q_s=busy.q_s, form_s=0.0, b_mean=mix.b_mean)


def _gather_and_queue_wait(gpu: GpuSide, scheduler: SchedulerPolicy, pooled: bool, mix: BatchMix,
                           busy: BusyRegime, lam: float, lam_items: float, p: float) -> _Wait:
    """WaitModel.GATHER_AND_QUEUE below saturation: a batch gathers for min(Time_queue, (b - 1) / lambda) s, then
    waits for an instance: under a pooled timer timeout_batch_wait (at least the full-batch queue), else a
    G/G/c of batches with c_a^2 = 1/b (a batch of b Poisson arrivals is Erlang-b spaced; instance_wait); never more
    than the all-busy regime's wait."""
    n = len(gpu.partitions)
    tq = gpu.time_queue_s
    b_mean = mix.b_mean
    form = min(tq, (b_mean - 1) / lam_items) if lam_items > 0 else 0.0  # time to gather a batch
    lam_b = lam_items / b_mean
    batch_rates = mix.rates / np.array(mix.batch)
    if tq > 0 and pooled:
        # a timer releases each batch and latecomers join a waiting batch: batches never queue behind
        # one another, so a G/G/c queue of batches (which nears saturation with the instances) overstates
        # the wait 5-10x at 85 % load on one instance
        wq, wqq = timeout_batch_wait(mix.svc_mean, _service_sigma(mix.reps, mix.bt, mix.share_t, p), n, tq, lam, p)
        # near capacity waiting batches fill to Batch_max and the next one opens behind them: the queue of
        # full batches (G/G/c, as in the saturated regime) takes over
        wq, wqq = max(wq, busy.full_mean_s), max(wqq, busy.full_q_s)
    else:
        wq, wqq = instance_wait(scheduler, lam_b, n, mix.svc_mean, GPU_SCV, 1.0 / b_mean, batch_rates, mix.share, p)
    # near saturation a batcher takes everything waiting when an instance frees, so the wait never
    # exceeds the all-busy regime's (keeps the curve continuous across the regime change)
    if wq > busy.mean_s:
        wq, wqq = busy.mean_s, busy.q_s
    return _Wait(mean_s=wq, q_s=wqq, form_s=form, b_mean=b_mean)


def _batched_point(cap: float, lam: float, mix: BatchMix, wait: _Wait, p: float) -> GpuPoint:
    """The GpuPoint of a batching policy: the request's service time with its batch drawn size-biased (larger
    batches hold more requests: request_weighted_service, request_service_quantile), the gathering wait (the
    chain's, else gather_wait_mean) and the queue wait, in s."""
    # each partition's batch-size law once, for both the mean and the quantile (both take a law as the batch)
    sizes = [wait.bulk] if wait.bulk is not None else [size_law(part, x) for part, x in zip(mix.reps, mix.bt)]
    svc_req = float(np.dot(mix.share_t, [request_weighted_service(part, x) for part, x in zip(mix.reps, sizes)]))
    svc_q = request_service_quantile(list(zip(mix.reps, sizes, mix.share_t)), p)
    batch = mix.batch
    if wait.bulk is not None:
        batch = [float(np.dot(np.arange(1, len(wait.bulk) + 1), wait.bulk))]
    gather = wait.gather_mean_s if wait.gather_mean_s is not None else gather_wait_mean(wait.form_s, wait.b_mean)
    return made(GpuPoint, capacity_rps=cap, utilization=lam / cap, batch=tuple(float(x) for x in batch),
                    partition_utilization=mix.utils, batching_wait_mean_s=gather, batching_wait_q_s=p * wait.form_s,
                    queue_wait_mean_s=wait.mean_s, queue_wait_q_s=wait.q_s, service_mean_s=svc_req,
                    service_q_s=svc_q, saturated=mix.saturated)


def gather_wait_mean(form: float, b_mean: float) -> float:
    """Mean wait (s) of a request while its batch gathers: the batch's first request waits the whole gathering
    time `form`, the b - 1 later ones (Poisson arrivals, so uniform over it) form / 2 on average:
    (form + (b - 1) form / 2) / b = form (b + 1) / (2 b)."""
    if b_mean <= 1 or form <= 0:
        return 0.0
    return form * (b_mean + 1) / (2 * b_mean)


def _bulk_wait(part, lam_items: float, p: float) -> tuple[float, float, np.ndarray]:
    """(mean wait, p-quantile of the wait, batch-size law) of one work-conserving instance (bulk_service_queue);
    the wait's tail exponential, as for the other queues (wait_quantile)."""
    cap = max(1, int(part.max_batch))
    z = normal_quantile(p)
    means, tails = batch_tables(part, cap)
    q = bulk_service_queue(lam_items, means, lognormal_sigmas_for_ratios(tails / means, z))
    return q.wait_mean_s, wait_quantile(q.wait_mean_s, q.p_wait, p), q.batch_pmf


def _timer_wait(part, lam_items: float, tq: float, p: float) -> BatchingQueue:
    """timer_batch_queue for one instance with Time_queue `tq` at `lam_items` items/s, its batch times log-normal
    with the partition's mean and p-quantile tables (as _bulk_wait)."""
    cap = max(1, int(part.max_batch))
    z = normal_quantile(p)
    means, tails = batch_tables(part, cap)
    return timer_batch_queue(lam_items, tq, means, lognormal_sigmas_for_ratios(tails / means, z))


def _service_sigma(reps, bt: np.ndarray, share_t: np.ndarray, p: float) -> float:
    """Log-sd of the batch service time from the partitions' tail-to-mean ratios at their batches (the
    simulator draws a batch's time log-normal; a variable-length model's tail holds its lengths' spread)."""
    z = normal_quantile(p)
    ratio = float(np.dot(share_t, [pt.tail(x) / pt.service(x) for pt, x in zip(reps, bt)]))
    return lognormal_sigma_for_ratio(ratio, z)
