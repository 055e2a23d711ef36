"""Latency curves: one (model, GPU, partition, precision, framework, input length) series.

A Curve holds mean and tail latency (seconds) at each profiled batch size and
answers for any batch in its range, interpolated in log(batch); a derived
curve (slice law) answers on 1..max_batch. Outside the range it refuses.
"""

from typing import Optional

import numpy as np
from pydantic import BaseModel, ConfigDict

from engine.profiles.interp import OutOfRange, interp_log_batch
from engine.rows import as_records, missing
from engine.profiles.slicelaw import SliceFit, slice_latency
from engine.profiles.tails import PERCENTILES, jitter_factor


class CurveKey(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: str
    sku: str
    partition: str
    precision: str
    framework: str
    input_len: Optional[float] = None


class Curve(BaseModel):
    """Mean and tail latency vs batch for one series, with its provenance."""

    model_config = ConfigDict(frozen=True)

    key: CurveKey
    provenance: str  # measured | published | derived | derived-extrapolated | estimated (mixed: 'published')
    batches: tuple[int, ...]  # profiled batches, or the derived range's end points
    mean_s: tuple[float, ...]
    tails_s: dict[int, tuple[float, ...]]  # percentile -> latency at each batch; only those published
    sources: tuple[str, ...]
    # derived curves only
    reference: Optional[CurveKey] = None
    sm_ratio: Optional[float] = None
    fit: Optional[SliceFit] = None
    cross_gpu: bool = False
    tail_ratio: dict[int, float] = {}  # derived: the reference's published tail/mean ratio (median)
    # derived-extrapolated only: the end of the law's support (reference max batch x SM share) and the
    # relative uncertainty of service times beyond it (slicelaw.extrapolation_uncertainty)
    law_max_batch: Optional[int] = None
    extrapolation_rel_uncertainty: Optional[float] = None
    # data checks that failed (point_flags): a series with p99 below its mean has its published tails set aside
    # (the jitter model answers from the mean); a largest batch whose throughput falls is never a knee
    flags: tuple[str, ...] = ()
    falling_top: bool = False
    # estimated curves only (engine.estimator): the median |relative error| to expect, and how it was made
    expected_rel_error: Optional[float] = None
    note: str = ""

    @property
    def extrapolated(self) -> bool:
        return self.law_max_batch is not None and self.max_batch > self.law_max_batch

    @property
    def min_batch(self) -> int:
        return self.batches[0]

    @property
    def max_batch(self) -> int:
        return self.batches[-1]

    def mean(self, batch) -> np.ndarray:
        """Mean service time (s) at `batch`; raises OutOfRange outside the curve."""
        b = np.atleast_1d(np.asarray(batch, dtype=float))
        if self.fit is not None:
            if np.any(b < self.min_batch) or np.any(b > self.max_batch):
                bad = b[(b < self.min_batch) | (b > self.max_batch)][0]
                raise OutOfRange(f"batch {bad:g} is outside the derived range {self.min_batch}..{self.max_batch}")
            return slice_latency(self.fit, b, self.sm_ratio)
        return interp_log_batch(self.batches, self.mean_s, b)

    def tail(self, batch, percentile: float) -> np.ndarray:
        """Tail latency (s): published percentile where present, else the jitter model.

        A derived curve keeps its reference's published tail-to-mean ratio.
        """
        if percentile in self.tails_s:
            return interp_log_batch(self.batches, self.tails_s[percentile], batch)
        if percentile in self.tail_ratio:
            return self.mean(batch) * self.tail_ratio[percentile]
        return self.mean(batch) * jitter_factor(percentile)

    def tail_source(self, percentile: float) -> str:
        if percentile in self.tails_s:
            return "published"
        if percentile in self.tail_ratio:
            return "reference's published tail/mean ratio"
        return "jitter model (log-normal, cv 5%)"

    def grid(self, max_batch: Optional[int] = None) -> np.ndarray:
        """Every integer batch the curve answers for (capped at `max_batch`)."""
        hi = self.max_batch if max_batch is None else min(self.max_batch, max_batch)
        return np.arange(self.min_batch, hi + 1)

    def throughput(self, batch) -> np.ndarray:
        """Items per second when batches of this size run back to back."""
        return np.asarray(batch, dtype=float) / self.mean(batch)


TAIL_BELOW_MEAN = "p99 below the mean"
THROUGHPUT_FALLS = "throughput falls at the largest batch"


def p99_below_mean(points) -> bool:
    """Whether a series publishes a p99 latency below its mean at some batch (ms): only a distribution with 1 %
    of requests far beyond the rest could do that, so the published mean and tails disagree (e.g. the DLE
    TF1 BERT tables on A100-40GB, whose mean is above p90 at every batch). `points`: rows (dicts) or a DataFrame."""
    rows = as_records(points)
    return bool(rows) and all("p99_ms" in r and not missing(r["p99_ms"]) for r in rows) and \
        any(float(r["p99_ms"]) < float(r["mean_ms"]) for r in rows)


def tails_below_mean(points) -> list[int]:
    """The published percentiles not to use: all of them when p99 is below the mean (they disagree with the
    mean the engine prices batches at; the jitter model answers from the mean instead), else none."""
    return list(PERCENTILES) if p99_below_mean(points) else []


def _by_batch(points) -> list[dict]:
    return sorted(as_records(points), key=lambda r: r["batch"])


def throughput_falls_at_top(points) -> bool:
    """Whether a series' throughput (items/s, batch / mean) is lower at its largest batch than at the one before."""
    g = _by_batch(points)
    if len(g) < 2:
        return False
    x = [float(r["batch"]) / float(r["mean_ms"]) for r in g[-2:]]
    return bool(x[-1] < x[-2])


def point_flags(points) -> list[str]:
    """The data checks one series fails, in words (tools/curate_profiles.py writes them into the rows' notes)."""
    flags = [TAIL_BELOW_MEAN] if p99_below_mean(points) else []
    return flags + ([THROUGHPUT_FALLS] if throughput_falls_at_top(points) else [])


def curve_from_points(key: CurveKey, points) -> Curve:
    """Build a Curve from latency-point rows of one series (dicts, or a DataFrame), ms -> s, with its data
    checks."""
    g = _by_batch(points)
    batches = [r["batch"] for r in g]
    if len(set(batches)) < len(batches):
        raise ValueError(f"series {key} has repeated batch sizes")
    suspect = set(tails_below_mean(g))
    tails = {}
    for q in PERCENTILES:
        col = f"p{q}_ms"
        if g and all(col in r and not missing(r[col]) for r in g) and q not in suspect:
            tails[q] = tuple(float(r[col]) / 1e3 for r in g)
    kinds = {r["kind"] for r in g}
    provenance = "measured" if kinds == {"measured"} else "published" if "published" in kinds else sorted(kinds)[0]
    return Curve(key=key, provenance=provenance, batches=tuple(int(b) for b in batches),
                 mean_s=tuple(float(r["mean_ms"]) / 1e3 for r in g), tails_s=tails,
                 sources=tuple(dict.fromkeys(r["source"] for r in g)), flags=tuple(point_flags(g)),
                 falling_top=throughput_falls_at_top(g))
