"""The GPU side at many arrival rates at once: sla_bounded_rate's scan (engine.analytic.operating_point) asks for up
to ~50 rates before refining, and where the side's wait model is the pooled gather-and-queue one (or every
instance is busy) the scalar step (engine.analytic.rates.compute_gpu_point) runs here with the rates as an array
axis, from the pieces in engine.analytic.gather_scan; equal to the scalar step to about 1e-14 relative."""

from __future__ import annotations

import numpy as np

from engine.analytic import gather_scan
from engine.analytic.preba_chain import partition_backlog_table
from engine.analytic.batch_mix import GPU_SCV, partition_groups
from engine.analytic.made import made
from engine.analytic.rates import GpuPoint, compute_gpu_point, gpu_capacity_rps
from engine.accelerator_side import GpuSide
from engine.policy_rules import WaitModel, rule_for, scheduler_rule_for
from engine.vocab import SchedulerPolicy


def prefetch_gpu_points(gpu: GpuSide, scheduler: SchedulerPolicy, lams, q_mean: float, q_pmf: np.ndarray,
                        p: float) -> None:
    """Work out the side's state at every rate of `lams` (requests/s) it does not remember yet in one numpy pass
    (engine.analytic.gather_scan), where its wait model is the pooled gather-and-queue one (scans_as_array);
    gpu_point then finds them remembered. Nothing happens for other models: gpu_point works them out one by one."""
    if not scans_as_array(gpu, scheduler):
        return
    keys = [("point", scheduler, float(lam), q_mean, q_pmf.tobytes(), p) for lam in lams]
    gpu.remember_many(keys, lambda todo: gather_points(gpu, scheduler, np.array([float(lams[i]) for i in todo]),
                                                        q_mean, q_pmf, p))


def scans_as_array(gpu: GpuSide, scheduler: SchedulerPolicy) -> bool:
    """Whether compute_gpu_point takes _saturated_wait or _gather_and_queue_wait at every rate (the branches
    gather_points vectorises)."""
    rule = rule_for(gpu.policy)
    if not rule.batches:
        return False
    if len(gpu.partitions) > 1:
        return True
    tq = gpu.time_queue_s
    if tq > 0 and rule.length_buckets and partition_backlog_table(gpu.partitions[0]) is not None:
        return False
    return rule.wait_model == WaitModel.GATHER_AND_QUEUE or (rule.wait_model == WaitModel.TIMER_CHAIN and tq <= 0)


def gather_points(gpu: GpuSide, scheduler: SchedulerPolicy, lam: np.ndarray, q_mean: float, q_pmf: np.ndarray,
                   p: float) -> list[GpuPoint]:
    """compute_gpu_point at each rate of `lam` (requests/s) for a side _scans_as_array accepts: batch_mix,
    all_busy_regime, _saturated_wait or _gather_and_queue_wait and _batched_point, each with the rates as an
    array axis (rows: distinct partitions, columns: rates; engine.analytic.gather_scan for the pieces)."""
    pooled = scheduler_rule_for(scheduler).pooled
    cap = gpu_capacity_rps(gpu, q_mean, q_pmf, scheduler)
    parts = gpu.partitions
    n, tq = len(parts), gpu.time_queue_s
    lam_items = lam * q_mean
    reps, counts = partition_groups(parts)
    big = np.array([float(part.max_batch) for part in reps])[:, None]
    cnt = np.array(counts, dtype=float)[:, None]
    b_lo = np.minimum(big, 1 + lam_items[None, :] * tq / (1 if pooled else n))

    def batches(level: np.ndarray) -> np.ndarray:
        return np.maximum(b_lo, 1 + level[None, :] * (big - 1))

    def items_capacity(level: np.ndarray) -> np.ndarray:
        x = batches(level)
        return sum(cnt[t] * x[t] / gather_scan.service_at(part, x[t]) for t, part in enumerate(reps))

    zeros = np.zeros(len(lam))
    saturated = items_capacity(zeros) <= lam_items
    dead = saturated & (items_capacity(zeros + 1.0) <= lam_items)
    lo, hi = zeros.copy(), zeros + 1.0
    for _ in range(24 if saturated.any() else 0):  # batch_mix's bisection on the fill level, every rate at once
        mid = (lo + hi) / 2
        ok = items_capacity(mid) >= lam_items
        lo, hi = np.where(ok, lo, mid), np.where(ok, mid, hi)
    bt = batches(np.where(saturated, hi, 0.0))
    svc_t = np.array([gather_scan.service_at(part, bt[t]) for t, part in enumerate(reps)])
    rates_t = bt / svc_t
    share_t = cnt * rates_t / (cnt * rates_t).sum(axis=0) if pooled else np.broadcast_to(cnt / n, bt.shape)
    util_t = np.minimum(1.0, lam_items * share_t / (cnt * rates_t))
    kinds = [next(kind for kind, rep in enumerate(reps) if rep.name == part.name) for part in parts]
    b_mean, svc_mean = (share_t * bt).sum(axis=0), (share_t * svc_t).sum(axis=0)
    # all_busy_regime (pooled instance_wait: the partitions' full-batch rates pooled into n servers)
    max_b = np.array([part.max_batch for part in parts], dtype=float)
    full = max_b / np.array([part.service(part.max_batch) for part in parts])
    b_full = float(np.dot(full / full.sum(), max_b))
    w_full, w_full_q = _queue_vec(pooled, lam_items / b_full, n, 1.0 / b_full, np.broadcast_to(full / max_b, (len(lam), n)).T, p)
    busy_mean, busy_q = svc_mean / (n + 1) + w_full, p * svc_mean + w_full_q
    # _gather_and_queue_wait below saturation, _saturated_wait above
    form = np.minimum(tq, (b_mean - 1) / lam_items)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if tq > 0 and pooled:
            sigma = gather_scan.service_sigma_vec(reps, bt, share_t, p)
            wq, wqq = gather_scan.timeout_batch_wait_vec(svc_mean, sigma, n, tq, lam, p)
            wq, wqq = np.maximum(wq, w_full), np.maximum(wqq, w_full_q)
        else:
            wq, wqq = _queue_vec(pooled, lam_items / b_mean, n, 1.0 / b_mean, (rates_t / bt)[kinds], p)
        capped = wq > busy_mean
        wq, wqq = np.where(capped, busy_mean, wq), np.where(capped, busy_q, wqq)
        wq, wqq, form = np.where(saturated, busy_mean, wq), np.where(saturated, busy_q, wqq), np.where(saturated, 0.0,
                                                                                                        form)
        gather = np.where((b_mean > 1) & (form > 0), form * (b_mean + 1) / (2 * b_mean), 0.0)
        svc_req, svc_q = gather_scan.request_service_vec(reps, bt, share_t, p)
    out = []
    for r in range(len(lam)):
        if dead[r]:  # even Batch_max cannot keep up: as compute_gpu_point
            out.append(compute_gpu_point(gpu, scheduler, float(lam[r]), q_mean, q_pmf, p))
            continue
        out.append(made(GpuPoint,
            capacity_rps=cap, utilization=float(lam[r]) / cap, batch=tuple(float(bt[k, r]) for k in kinds),
            partition_utilization=tuple(float(util_t[k, r]) for k in kinds), batching_wait_mean_s=float(gather[r]),
            batching_wait_q_s=p * float(form[r]), queue_wait_mean_s=float(wq[r]), queue_wait_q_s=float(wqq[r]),
            service_mean_s=float(svc_req[r]), service_q_s=float(svc_q[r]), saturated=bool(saturated[r])))
    return out


def _queue_vec(pooled: bool, lam_jobs: np.ndarray, n: int, ca2, rates: np.ndarray, p: float):
    """instance_wait at each rate (columns): rates[j] the jobs/s partition j serves. Pooled: one G/G/c with the partitions'
    total capacity; else each partition a G/G/1 fed every n-th arrival (c_a^2 / n), the mean weighted by the equal
    shares 1/n and the quantile the worst partition's."""
    if pooled:
        return gather_scan.gg_c_wait_vec(lam_jobs, n / rates.sum(axis=0), n, ca2, GPU_SCV, p)
    waits = [gather_scan.gg_c_wait_vec(lam_jobs * (1 / n), 1 / rates[j], 1, np.asarray(ca2) / n, GPU_SCV, p)
             for j in range(n)]
    return sum((1 / n) * w[0] for w in waits), np.max([w[1] for w in waits], axis=0)
