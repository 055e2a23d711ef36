"""Multi-Model: how many instances of one model, at which GPU% each, meet a deadline at the most throughput.

GPU runtime primitives seed, Sec V-D: `Multi-Model(DNN-model, available-GPU%, deadline)` takes the
model's latency-vs-GPU% profile (Fig 2a, Fig 9), the unused GPU% and the deadline, and returns the
number of instances and the GPU% of each. Several instances near the knee out-serve one instance on
the whole GPU (Sec VI-B, Table IV: about 2x). Here every instance runs the same batch; an instance
meets the deadline when its tail latency (the curve's percentile) is within it, and n x GPU% never
exceeds the available GPU% (no oversubscription: Sec VI-C). Latencies in ms, shares in GPU%.
"""

from __future__ import annotations

import math
from typing import Optional

from pydantic import BaseModel, ConfigDict

from engine.tenancy.errors import gpu_pct, positive, whole
from engine.tenancy.gpu_share import DEFAULT_STEP_PCT, GpuShareCurve, latency_vs_gpu_pct



class MultiModelOption(BaseModel):
    """n instances, each at one GPU% running batches of the curve's size."""

    model_config = ConfigDict(frozen=True)

    instances: int
    gpu_pct_each: int
    total_pct: float
    mean_ms: float
    tail_ms: float  # per instance, at the plan's percentile
    throughput_items_per_s: float  # all instances, batches back to back


class MultiModelPlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: str
    sku: str
    batch: int
    percentile: int
    deadline_ms: float
    available_pct: float
    rate_rps: Optional[float]
    max_instances: Optional[int]
    best: Optional[MultiModelOption]  # most throughput within deadline and available GPU%
    for_rate: Optional[MultiModelOption]  # least total GPU% whose throughput covers rate_rps
    single: Optional[MultiModelOption]  # one instance on the largest share that fits: the seed's baseline
    options: tuple[MultiModelOption, ...]  # per feasible GPU%, the most instances that fit
    reason: str  # why there is no plan (or no plan for the rate); "" when both exist

    @property
    def speedup(self) -> Optional[float]:
        """Throughput of the best plan over one instance on the largest share (seed Table IV)."""
        if self.best is None or self.single is None:
            return None
        return self.best.throughput_items_per_s / self.single.throughput_items_per_s

    def table(self) -> list[dict]:
        return [o.model_dump() for o in self.options]


def _option(curve: GpuShareCurve, n: int, i: int) -> MultiModelOption:
    p = curve.points[i]
    return MultiModelOption(instances=n, gpu_pct_each=p.gpu_pct, total_pct=float(n * p.gpu_pct), mean_ms=p.mean_ms,
                            tail_ms=p.tail_ms, throughput_items_per_s=n * p.throughput_items_per_s)


def plan_multimodel(curve: GpuShareCurve, deadline_ms: float, available_pct: float = 100.0,
                    rate_rps: Optional[float] = None, max_instances: Optional[int] = None) -> MultiModelPlan:
    """Choose (instances, GPU% each) from a latency-vs-GPU% curve (seed Sec V-D, Multi-Model).

    Feasible: tail latency <= deadline_ms, and n x GPU% <= available_pct (<= 100), and n <= max_instances
    (e.g. what fits in memory, see engine.tenancy.paramshare). `best` maximises total throughput
    n x batch / mean latency (items/s), ties going to less GPU% then fewer instances; `for_rate` is the
    feasible choice with the least total GPU% whose throughput reaches rate_rps (items/s).
    """
    deadline_ms = positive("deadline_ms", deadline_ms)
    available_pct = gpu_pct("available_pct", available_pct)
    if rate_rps is not None:
        rate_rps = positive("rate_rps", rate_rps)
    if max_instances is not None:
        max_instances = whole("max_instances", max_instances)
    cap = max_instances if max_instances is not None else math.inf
    feasible: list[MultiModelOption] = []
    options: list[MultiModelOption] = []
    single: Optional[MultiModelOption] = None
    for i, p in enumerate(curve.points):
        if p.tail_ms > deadline_ms or p.gpu_pct > available_pct:
            continue
        n_max = math.floor(available_pct / p.gpu_pct)
        n_max -= n_max * p.gpu_pct > available_pct  # a quotient rounded up to a whole number
        n_max = int(min(cap, n_max))
        feasible += [_option(curve, n, i) for n in range(1, n_max + 1)]
        options.append(_option(curve, n_max, i))
        single = _option(curve, 1, i)  # points ascend in GPU%: the last feasible is the largest share
    best = max(feasible, key=lambda o: (o.throughput_items_per_s, -o.total_pct, -o.instances), default=None)
    covering = [o for o in feasible if rate_rps is not None and o.throughput_items_per_s >= rate_rps]
    for_rate = min(covering, key=lambda o: (o.total_pct, o.instances, o.tail_ms), default=None)
    reason = ""
    if best is None:
        fastest = min(curve.points, key=lambda p: p.tail_ms)
        usable = [p for p in curve.points if p.gpu_pct <= available_pct]
        reason = (f"no GPU% share meets the deadline of {deadline_ms:g} ms at batch {curve.batch}: the lowest "
                  f"p{curve.percentile} latency is {fastest.tail_ms:.3f} ms at {fastest.gpu_pct}%"
                  if usable else f"no GPU% on the curve fits in the available {available_pct:g}%")
    elif rate_rps is not None and for_rate is None:
        reason = (f"no plan within the deadline reaches {rate_rps:g} items/s; the most is "
                  f"{best.throughput_items_per_s:,.1f} items/s ({best.instances} x {best.gpu_pct_each}%)")
    return MultiModelPlan(model=curve.model, sku=curve.sku, batch=curve.batch, percentile=curve.percentile,
                          deadline_ms=deadline_ms, available_pct=available_pct, rate_rps=rate_rps,
                          max_instances=max_instances, best=best, for_rate=for_rate, single=single,
                          options=tuple(options), reason=reason)


def multi_model(book, model: str, sku: str, deadline_ms: float, batch: int = 8, available_pct: float = 100.0,
                rate_rps: Optional[float] = None, max_instances: Optional[int] = None,
                step: int = DEFAULT_STEP_PCT, percentile: int = 99,
                input_len: Optional[float] = None) -> MultiModelPlan:
    """Multi-Model for a (model, GPU, batch) from the profile book (see plan_multimodel)."""
    positive("deadline_ms", deadline_ms)  # before the curve, so bad input is named first
    gpu_pct("available_pct", available_pct)
    curve = latency_vs_gpu_pct(book, model, sku, batch=batch, step=step, percentile=percentile, input_len=input_len)
    return plan_multimodel(curve, deadline_ms, available_pct, rate_rps, max_instances)
