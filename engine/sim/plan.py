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

from engine.vocab import BatchingPolicy
from engine.analytic.gpu import KNEE_PERCENTILE, KNEE_RULE
from engine.profiles import ProfileError

AUDIO_BUCKET_S = 2.5  # PREBA section 4.3
TOKEN_BUCKET = 64.0  # text models (assumption: PREBA buckets audio only)
NO_CAP = 1 << 30


class GpuPlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    caps: list[list[int]]  # [partition][length bucket] -> Batch_max in items
    rcap: int  # most requests per batch
    tq: float  # Time_queue (s)
    width: float  # length-bucket width (0: one bucket)
    merge: bool
    notes: tuple[str, ...] = ()


def bucket_width(design, ctx) -> float:
    unit = "s"
    if ctx is not None and design.scenario.model in ctx.book.models.index:
        unit = str(ctx.book.models.loc[design.scenario.model].get("input_unit") or "s")
    return TOKEN_BUCKET if unit == "tokens" else AUDIO_BUCKET_S


def gpu_plan(design, ctx=None, lengths: Optional[np.ndarray] = None) -> GpuPlan:
    parts = design.gpu.partitions
    policy = design.gpu.policy
    caps = [[p.max_batch] for p in parts]
    if policy == BatchingPolicy.NONE:
        return GpuPlan(caps=caps, rcap=1, tq=0.0, width=0.0, merge=False)
    if policy == BatchingPolicy.WORK_CONSERVING:
        return GpuPlan(caps=caps, rcap=NO_CAP, tq=0.0, width=0.0, merge=False)
    tq = design.gpu.time_queue_s
    if policy != BatchingPolicy.PREBA or lengths is None:
        return GpuPlan(caps=caps, rcap=NO_CAP, tq=tq, width=0.0, merge=False)
    width = bucket_width(design, ctx)
    nb = int(np.max(lengths) // width) + 1
    if ctx is None:
        return GpuPlan(caps=[c * nb for c in caps], rcap=NO_CAP, tq=tq, width=width, merge=True,
                       notes=("PREBA buckets without a profile book: Batch_max of the design in every bucket",))
    return GpuPlan(caps=preba_caps(design, ctx, nb, width), rcap=NO_CAP, tq=tq, width=width, merge=True,
                   notes=(f"PREBA: {nb} length buckets of {width:g}, Batch_max per bucket from the knee at the "
                          "bucket's longest input; merging of neighbouring buckets",))


def preba_caps(design, ctx, n_buckets: int, width: float) -> list[list[int]]:
    """Batch_max(partition, bucket): the utilisation knee at the bucket's upper edge (PREBA 4.3)."""
    sc, book = design.scenario, ctx.book
    src = book._source(sc.model, sc.gpu.sku, design.gpu.partitions[0].name, sc.precision, None, False)
    lengths = book.lengths(sc.model, *src)
    cache: dict[str, list[int]] = {}
    out = []
    for p in design.gpu.partitions:
        if p.name not in cache:
            row = []
            for j in range(n_buckets):
                at = float(min(max((j + 1) * width, lengths[0]), lengths[-1]))
                try:
                    k = book.knee(sc.model, sc.gpu.sku, p.name, KNEE_RULE, percentile=KNEE_PERCENTILE,
                                  input_len=at, precision=sc.precision).batch
                except ProfileError:
                    k = p.max_batch
                row.append(max(1, int(k)))
            cache[p.name] = row
        out.append(cache[p.name])
    return out
