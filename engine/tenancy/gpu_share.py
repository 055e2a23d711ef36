"""Spatial sharing of a whole GPU by GPU% (CUDA MPS active-thread percentage), and oversubscription.

GPU runtime primitives seed (Dhakal et al.):
- Sec IV-A: "GPU%" is CUDA_MPS_ACTIVE_THREAD_PERCENTAGE; 50% of a 40-SM T4 is at most 20 SMs, so a
  share runs on s = GPU%/100 of the SMs. The ProfileBook answers partition 'mps:N' with the slice
  law at that s (or with measured mps points where the store has them).
- Sec III-2 and IV-C (Fig 2a): latency falls steeply at low GPU% and, past a "knee" GPU%, barely
  at all; compute-heavy models and bigger batches have higher knees.
- Sec IV-A and VI-C (Fig 12): shares may add up to more than 100% ("over-subscription"); beyond
  100% throughput does not increase but latency climbs.
Latencies in these results are milliseconds, shares are GPU% (0-100].
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from engine.profiles.tails import PERCENTILES
from engine.tenancy.errors import TenancyError, gpu_pct, non_negative, positive, whole

#: A product default, not a seed figure: the seed calls the knee the GPU% "after which we see
#: diminishing returns" (Sec III-2) without a number; "slight" is read as under 10%.
KNEE_GAIN_THRESHOLD = 0.10
DEFAULT_STEP_PCT = 5  # the GPU% grid; the seed's Fig 2a and Fig 9 use 10-25% steps
#: the most instances one oversubscription sweep adds: it builds 1..n tenants (quadratic work), and 500 covers
#: the Tenancy panel's 200% at a 1% share (engine.studies.tenancy) with room to spare
MAX_OVERSUBSCRIBED_INSTANCES = 500


class GpuSharePoint(BaseModel):
    """One batch's latency on one GPU% share."""

    model_config = ConfigDict(frozen=True)

    gpu_pct: int
    mean_ms: float
    tail_ms: float  # at the curve's percentile
    throughput_items_per_s: float  # batches back to back on this share
    provenance: str  # measured | published | derived (slice law)


class RefusedShare(BaseModel):
    """A GPU% the profile book would not answer for (e.g. the batch is beyond the derived range)."""

    model_config = ConfigDict(frozen=True)

    gpu_pct: int
    reason: str


class GpuShareCurve(BaseModel):
    """Latency vs GPU% of one (model, GPU, batch), ascending in GPU%."""

    model_config = ConfigDict(frozen=True)

    model: str
    sku: str
    mig_profile: Optional[str] = None  # the MIG slice the shares divide (None: the whole GPU)
    batch: int
    percentile: int
    input_len: Optional[float]
    points: tuple[GpuSharePoint, ...]
    refused: tuple[RefusedShare, ...]
    reference: Optional[str]  # the curve the slice law scaled, when derived
    fit_rms_rel_error: Optional[float]
    sources: tuple[str, ...]

    def at(self, pct: float) -> GpuSharePoint:
        for p in self.points:
            if p.gpu_pct == pct:
                return p
        raise TenancyError(f"gpu_pct {pct!r} is not on the curve of {self.model} on {self.sku}; "
                           f"GPU% on it: {', '.join(str(p.gpu_pct) for p in self.points)}")

    def rows(self) -> list[dict]:
        return [p.model_dump() for p in self.points]


class KneeGpuPct(BaseModel):
    """The knee GPU% of a curve: past it, more GPU% cuts latency by at most `threshold` (a fraction)."""

    model_config = ConfigDict(frozen=True)

    gpu_pct: int
    latency_ms: float  # mean latency at the knee
    best_gpu_pct: int  # where the curve's lowest latency is
    best_latency_ms: float
    remaining_gain: float  # (latency at knee - lowest latency beyond it) / latency at knee
    threshold: float
    rule: str


def share_grid(step: int = DEFAULT_STEP_PCT) -> tuple[int, ...]:
    """GPU% values step, 2 step, ... up to 100, always ending at 100 (MPS takes whole percentages)."""
    step = whole("step", step)
    if step > 100:
        raise TenancyError(f"step must be at most 100, got {step}")
    grid = list(range(step, 101, step))
    return tuple(grid if grid[-1] == 100 else grid + [100])


def latency_vs_gpu_pct(book, model: str, sku: str, batch: int = 8, step: int = DEFAULT_STEP_PCT,
                       percentile: int = 99, input_len: Optional[float] = None, precision: Optional[str] = None,
                       framework: Optional[str] = None, mig_profile: Optional[str] = None) -> GpuShareCurve:
    """Mean and tail latency (ms) of one batch at each GPU% of `share_grid(step)`.

    Each share is the book's partition f"mps:{pct}" (or f"{mig_profile}/mps:{pct}": MPS inside one MIG
    slice, the share taken of that slice's SMs): measured points if the store has them, else the
    slice law t(b; s) = t_fixed + b / (s T) with s = the share's SMs over the reference's (DESIGN.md
    section 5; seed Sec IV-A).
    Shares the book refuses (the batch lies beyond what the reference curve supports at that share)
    are listed in `refused`, never extrapolated.
    """
    whole("batch", batch)
    if percentile not in PERCENTILES:
        raise TenancyError(f"percentile must be one of {', '.join(map(str, PERCENTILES))}, got {percentile!r}")
    book.gpu(sku)  # an unknown GPU is a ProfileError naming the valid ones, before any share
    if mig_profile:
        book.sm_count(sku, mig_profile)  # likewise an unknown (or non-MIG) slice
    points, refused, last = [], [], None
    for pct in share_grid(step):
        try:
            part = f"{mig_profile}/mps:{pct}" if mig_profile else f"mps:{pct}"
            p = book.predict(model, sku, part, batch, input_len=input_len, precision=precision, framework=framework)
        except ValueError as e:  # ProfileError, or the slice law refusing a one-point reference
            refused.append(RefusedShare(gpu_pct=pct, reason=str(e)))
            continue
        last = p
        points.append(GpuSharePoint(gpu_pct=pct, mean_ms=p.mean_s * 1e3, tail_ms=p.tail_s[percentile] * 1e3,
                                    throughput_items_per_s=p.throughput, provenance=p.provenance))
    if last is None:
        raise TenancyError(f"no GPU% share of {sku} answers for {model} at batch {batch}: {refused[-1].reason}")
    return GpuShareCurve(model=model, sku=sku, mig_profile=mig_profile, batch=batch, percentile=percentile,
                         input_len=last.input_len,
                         points=tuple(points), refused=tuple(refused), reference=last.reference,
                         fit_rms_rel_error=last.fit_rms_rel_error, sources=last.sources)


def knee_index(latency_ms: Sequence[float], threshold: float = KNEE_GAIN_THRESHOLD) -> int:
    """Index of the knee of latencies ordered by ascending GPU%.

    Seed Sec III-2 / IV-C: the knee is the GPU% "after which we see diminishing returns in the latency".
    Here: the first share p whose remaining gain, (t(p) - min over q >= p of t(q)) / t(p), is at most
    `threshold`; every larger share then gains less too, measured or derived, monotone or not.
    """
    threshold = non_negative("threshold", threshold)
    if threshold >= 1:
        raise TenancyError(f"threshold must be a fraction in [0, 1), got {threshold!r}")
    t = np.asarray(latency_ms, dtype=float)
    if t.size == 0 or not np.all(t > 0):
        raise TenancyError(f"a knee needs one or more positive latencies, got {list(latency_ms)!r}")
    best_after = np.minimum.accumulate(t[::-1])[::-1]
    gain = (t - best_after) / t
    return int(np.argmax(gain <= threshold + 1e-12))  # the last point always qualifies (gain 0)


def knee_gpu_pct(curve: GpuShareCurve, threshold: float = KNEE_GAIN_THRESHOLD) -> KneeGpuPct:
    """The knee GPU% of a latency-vs-GPU% curve (mean latency, as the seed's Fig 2a)."""
    t = [p.mean_ms for p in curve.points]
    i = knee_index(t, threshold)
    j = i + int(np.argmin(t[i:]))
    return KneeGpuPct(gpu_pct=curve.points[i].gpu_pct, latency_ms=t[i], best_gpu_pct=curve.points[j].gpu_pct,
                      best_latency_ms=t[j], remaining_gain=(t[i] - t[j]) / t[i], threshold=threshold,
                      rule=f"smallest GPU% past which more GPU% cuts mean latency by at most {threshold:.0%} "
                           "(GPU runtime primitives seed, Sec III-2 and IV-C)")


# -- oversubscription --------------------------------------------------------------------------


class Tenant(BaseModel):
    """One model instance on a shared GPU: its GPU%, batch and latency when the GPU is not oversubscribed."""

    model_config = ConfigDict(frozen=True)

    name: str
    gpu_pct: float
    batch: int
    latency_ms: float


class TenantShare(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    gpu_pct: float
    latency_ms: float  # with time-slicing when the total exceeds 100%
    throughput_items_per_s: float


class Oversubscription(BaseModel):
    """What a set of tenants gets from one GPU."""

    model_config = ConfigDict(frozen=True)

    total_pct: float
    slowdown: float  # max(1, total / 100)
    tenants: tuple[TenantShare, ...]
    throughput_items_per_s: float
    cap_items_per_s: float  # this mix's throughput per GPU% x 100: what no total can exceed


def oversubscribe(tenants: Sequence[Tenant]) -> Oversubscription:
    """Latency and throughput of tenants whose GPU% may add up to more than 100.

    Seed Sec VI-C (Fig 12): past 100% "throughput does not increase ... but the latency climbs". Model:
    the GPU time-slices oversubscribed tenants, so every latency stretches by total/100 and the sum of
    the tenants' throughputs (items/s) stays at the 100% level. Latency in ms.
    """
    if not tenants:
        raise TenancyError("oversubscription needs at least one tenant")
    for k, t in enumerate(tenants):
        gpu_pct(f"tenants[{k}].gpu_pct", t.gpu_pct)
        positive(f"tenants[{k}].latency_ms", t.latency_ms)
        whole(f"tenants[{k}].batch", t.batch)
    total = sum(t.gpu_pct for t in tenants)
    slowdown = max(1.0, total / 100.0)
    shares = tuple(TenantShare(name=t.name, gpu_pct=t.gpu_pct, latency_ms=t.latency_ms * slowdown,
                               throughput_items_per_s=t.batch / (t.latency_ms * slowdown) * 1e3) for t in tenants)
    alone = sum(t.batch / t.latency_ms * 1e3 for t in tenants)
    return Oversubscription(total_pct=total, slowdown=slowdown, tenants=shares,
                            throughput_items_per_s=sum(s.throughput_items_per_s for s in shares),
                            cap_items_per_s=alone * 100.0 / total)


class OversubscriptionRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    instances: int
    total_pct: float
    latency_ms: float  # mean, per instance
    throughput_items_per_s: float  # all instances together


class OversubscriptionSweep(BaseModel):
    """Seed Fig 12: more and more instances at one GPU% each, past 100% in total."""

    model_config = ConfigDict(frozen=True)

    model: str
    sku: str
    batch: int
    gpu_pct_each: int
    rows: tuple[OversubscriptionRow, ...]
    cap_items_per_s: float

    def table(self) -> list[dict]:
        return [r.model_dump() for r in self.rows]


def oversubscription_sweep(curve: GpuShareCurve, gpu_pct_each: int, max_instances: int) -> OversubscriptionSweep:
    """1..max_instances copies of the curve's model, each at `gpu_pct_each` (a GPU% on the curve)."""
    whole("max_instances", max_instances)
    if max_instances > MAX_OVERSUBSCRIBED_INSTANCES:
        raise TenancyError(f"max_instances must be at most {MAX_OVERSUBSCRIBED_INSTANCES} (the limit of one "
                           f"oversubscription sweep), got {max_instances!r}")
    point = curve.at(gpu_pct_each)
    rows = []
    for n in range(1, max_instances + 1):
        o = oversubscribe([Tenant(name=f"{curve.model}#{k}", gpu_pct=point.gpu_pct, batch=curve.batch,
                                  latency_ms=point.mean_ms) for k in range(n)])
        rows.append(OversubscriptionRow(instances=n, total_pct=o.total_pct, latency_ms=o.tenants[0].latency_ms,
                                        throughput_items_per_s=o.throughput_items_per_s))
    return OversubscriptionSweep(model=curve.model, sku=curve.sku, batch=curve.batch, gpu_pct_each=point.gpu_pct,
                                 rows=tuple(rows), cap_items_per_s=o.cap_items_per_s)
