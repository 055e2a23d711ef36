"""The batching parameters the simulator runs with, from the design (one source of truth).

Batch_max per partition and Time_queue are the analytic design's (engine.analytic.gpu): the knee,
or the scenario's max_batch, and Time_knee / number of partitions for PREBA. The policies map to
the batcher's two knobs (items cap, request cap) and the timeout:
none -> one request per batch, no wait; work-conserving -> timeout 0; fixed and PREBA -> the
design's Time_queue. PREBA on a variable-length model adds length buckets (2.5 s of audio, PREBA
section 4.3; 64 tokens for text models, an assumption) with Batch_max(p, bucket) = the utilisation
knee at the bucket's longest input (clamped to the profiled lengths), and merging.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
from pydantic import BaseModel, ConfigDict

from engine.analytic.gpu import KNEE_PERCENTILE, KNEE_RULE
from engine.analytic.preba_buckets import bucket_width as _width_for_unit
from engine.policy_rules import rule_for
from engine.profiles import ProfileError

NO_CAP = 1 << 30


class GpuPlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    batch_max: list[list[int]]  # [partition][length bucket] -> Batch_max in items
    request_cap: int  # most requests per batch
    time_queue_s: float  # Time_queue
    bucket_width: float  # length-bucket width (0: one bucket)
    merge: bool  # PREBA: top a batch up from neighbouring buckets
    notes: tuple[str, ...] = ()


def bucket_width(design, ctx) -> float:
    unit = "s"
    if ctx is not None:
        unit = str(ctx.book.model_value(design.scenario.model, "input_unit") or "s")
    return _width_for_unit(unit)


def gpu_plan(design, ctx=None, lengths: Optional[np.ndarray] = None) -> GpuPlan:
    """The batching rules of the design's policy; PREBA's length buckets need the run's input lengths."""
    rule = rule_for(design.gpu.policy)  # engine.policy_rules: the same rule the analytic engine reads
    batch_max = [[partition.max_batch] for partition in design.gpu.partitions]
    request_cap = NO_CAP if rule.batches else 1
    time_queue_s = design.gpu.time_queue_s if rule.uses_time_queue else 0.0
    if not rule.length_buckets or lengths is None:
        return GpuPlan(batch_max=batch_max, request_cap=request_cap, time_queue_s=time_queue_s, bucket_width=0.0,
                       merge=False)
    width = bucket_width(design, ctx)
    n_buckets = int(np.max(lengths) // width) + 1
    if ctx is None:
        return GpuPlan(batch_max=[caps * n_buckets for caps in batch_max], request_cap=NO_CAP,
                       time_queue_s=time_queue_s, bucket_width=width, merge=True,
                       notes=("PREBA buckets without a profile book: Batch_max of the design in every bucket",))
    return GpuPlan(batch_max=preba_caps(design, ctx, n_buckets, width), request_cap=NO_CAP,
                   time_queue_s=time_queue_s, bucket_width=width, merge=True,
                   notes=(f"PREBA: {n_buckets} length buckets of {width:g}, Batch_max per bucket from the knee at "
                          "the bucket's longest input; merging of neighbouring buckets",))


def preba_caps(design, ctx, n_buckets: int, width: float) -> list[list[int]]:
    """Batch_max(partition, bucket): the utilisation knee at the bucket's upper edge (PREBA 4.3)."""
    scenario, book = design.scenario, ctx.book
    source = book._source(scenario.model, scenario.gpu.sku, design.gpu.partitions[0].name, scenario.precision,
                          None, False)
    lengths = book.lengths(scenario.model, *source)
    by_partition_name: dict[str, list[int]] = {}  # identical partitions share their row
    rows = []
    for partition in design.gpu.partitions:
        if partition.name not in by_partition_name:
            row = []
            for bucket in range(n_buckets):
                upper_edge = float(min(max((bucket + 1) * width, lengths[0]), lengths[-1]))
                try:
                    knee = book.knee(scenario.model, scenario.gpu.sku, partition.name, KNEE_RULE,
                                     percentile=KNEE_PERCENTILE, input_len=upper_edge,
                                     precision=scenario.precision).batch
                except ProfileError:
                    knee = partition.max_batch
                row.append(max(1, int(knee)))
            by_partition_name[partition.name] = row
        rows.append(by_partition_name[partition.name])
    return rows
