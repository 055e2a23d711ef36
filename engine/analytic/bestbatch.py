"""Partitions compared at the batch each can best use under the SLA (issue 12 item 4).

Batch_max (the utilisation knee) is a latency choice, not a throughput cap: a
whole GPU held at its knee looks slower than seven 1g slices that each run at
theirs. Here every partition, and the whole GPU the layout is cut from, runs at
the batch that gives it the most items/s while one batch's service at the SLA
percentile plus the wait for the batch ahead of it (one mean service time) fits
in the SLA. A layout whose slices together beat the whole GPU at its best batch
contradicts every public MLPerf MIG result and is flagged.
"""

from typing import Optional

import numpy as np
from pydantic import BaseModel, ConfigDict

from engine.accelerator_side import Partition

#: a layout's aggregate may exceed the whole GPU by this fraction before it is flagged (rounding of batches)
FLAG_TOLERANCE = 0.0


class BestUse(BaseModel):
    """One partition at its best batch under the SLA."""

    model_config = ConfigDict(frozen=True)

    label: str
    batch: int  # 0 when not even batch 1 fits the SLA
    items_per_s: float


class MigVsWhole(BaseModel):
    """A MIG layout's slices at their best batches against the whole GPU at its best batch."""

    model_config = ConfigDict(frozen=True)

    partitions: tuple[BestUse, ...]
    aggregate_items_per_s: tuple[float, ...]  # per GPU
    whole: BestUse
    ratio: Optional[float]  # largest per-GPU aggregate over the whole GPU (None if the whole GPU meets no SLA)
    exceeds_whole: bool


def best_use(label: str, mean_s: np.ndarray, tail_s: np.ndarray, sla_s: float) -> BestUse:
    """The batch b (1..len) with the most items/s, b / mean_s[b-1], among those with
    tail_s[b-1] + mean_s[b-1] <= sla_s (seconds); batch 0 and 0 items/s if none fits."""
    b = np.arange(1, len(mean_s) + 1)
    ok = (np.asarray(tail_s) + np.asarray(mean_s)) <= sla_s
    if not ok.any():
        return BestUse(label=label, batch=0, items_per_s=0.0)
    rate = np.where(ok, b / np.asarray(mean_s), -1.0)
    i = int(np.argmax(rate))
    return BestUse(label=label, batch=int(b[i]), items_per_s=float(rate[i]))


def compare_with_whole(partitions: tuple[Partition, ...], whole: Partition, sla_s: float) -> MigVsWhole:
    """Each partition and the whole GPU at its best batch under `sla_s`; per-GPU aggregates and their ratio."""
    uses = tuple(best_use(p.label, p.mean_s, p.tail_s, sla_s) for p in partitions)
    per_gpu: dict[int, float] = {}
    for p, u in zip(partitions, uses):
        per_gpu[p.gpu_index] = per_gpu.get(p.gpu_index, 0.0) + u.items_per_s
    w = best_use("whole GPU", whole.mean_s, whole.tail_s, sla_s)
    agg = tuple(per_gpu[g] for g in sorted(per_gpu))
    ratio = max(agg) / w.items_per_s if w.items_per_s > 0 else None
    return MigVsWhole(partitions=uses, aggregate_items_per_s=agg, whole=w, ratio=ratio,
                      exceeds_whole=ratio is not None and ratio > 1.0 + FLAG_TOLERANCE)


def flag_note(check: MigVsWhole) -> Optional[str]:
    """The evaluation's note for a layout whose slices together beat the whole GPU, else None."""
    if not check.exceeds_whole:
        return None
    return (f"the MIG slices together serve {check.ratio:.2f} x the whole GPU at its best batch under the SLA "
            f"({max(check.aggregate_items_per_s):,.0f} vs {check.whole.items_per_s:,.0f} items/s at batch "
            f"{check.whole.batch}): every public MLPerf MIG result has all slices below the whole GPU, so this "
            "layout's advantage is an artefact of the profiles (derived, extrapolated or estimated slices), not a finding")


def comparison_note(check: MigVsWhole) -> Optional[str]:
    """The evaluation's note comparing the layout with its whole GPU at each one's best batch under the SLA."""
    if check.ratio is None:
        return None
    return (f"at the batch each can best use under the SLA, the MIG slices of one GPU serve {check.ratio:.2f} x the "
            f"whole GPU ({max(check.aggregate_items_per_s):,.0f} vs {check.whole.items_per_s:,.0f} items/s, whole "
            f"GPU at batch {check.whole.batch}); Batch_max (the knee) is a latency choice, not this throughput cap")
