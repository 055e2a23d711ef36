"""Which latency profiles a design used, and the points behind each: measured, published or derived.

A partition with its own points uses them (kind measured or published, each with its source); one
without is derived with the slice law from a reference series, whose points are listed instead, with
the SM ratio and the fit error (engine.profiles.service).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Optional

import pandas as pd
from pydantic import BaseModel, ConfigDict

from engine.profiles import ProfileBook
from engine.profiles.curves import Curve, CurveKey
from engine.profiles.service import ProfileError


class ProfilePoint(BaseModel):
    """One stored latency point behind a profile."""

    model_config = ConfigDict(frozen=True)

    batch: int
    input_len: Optional[float]
    mean_ms: float
    kind: str  # measured | published | derived
    source: str
    measured_on: str


class ProfileUse(BaseModel):
    """The latency profile of one partition kind in a design, with where its numbers come from."""

    model_config = ConfigDict(frozen=True)

    partition: str  # as the design uses it: 'full', a MIG profile or 'mps:N'
    instances: int  # how many of the design's instances run on it
    provenance: str  # measured | published | derived
    series: str  # 'sku partition precision framework' of the curve used
    input_len: Optional[float]  # the profiled length priced (variable-length models)
    reference: Optional[str]  # derived: the series the slice law scaled
    sm_ratio: Optional[float]
    fit_rms_rel_error: Optional[float]
    cross_gpu: bool
    sources: tuple[str, ...]
    points: tuple[ProfilePoint, ...]  # the points of the curve itself, or of the reference when derived


def _label(key: CurveKey) -> str:
    return f"{key.sku} {key.partition} {key.precision} {key.framework}"


def _curve(book: ProfileBook, model: str, sku: str, partition: str, precision: Optional[str],
           length: Optional[float]) -> Curve:
    """The curve the GPU side prices a batch with: for variable-length models, the profiled length at or
    above the design's length (engine.analytic.gpu)."""
    if length is None:
        return book.curve(model, sku, partition, precision)
    pts = book.points
    lengths = sorted(float(v) for v in pts.loc[pts["model"] == model, "input_len"].dropna().unique())
    for at in (x for x in lengths if x >= length - 1e-9):
        try:
            return book.curve(model, sku, partition, precision, input_len=at)
        except ProfileError:
            continue  # not a length of this series; the next one up is
    raise ProfileError(f"{model} on {sku} {partition}: no profiled input length at or above {length:g}")


def _points(book: ProfileBook, model: str, key: CurveKey) -> tuple[ProfilePoint, ...]:
    p = book.points
    sel = p[(p["model"] == model) & (p["sku"] == key.sku) & (p["partition"] == key.partition)
            & (p["precision"] == key.precision) & (p["framework"] == key.framework)]
    sel = sel[sel["input_len"].isna()] if key.input_len is None else sel[sel["input_len"] == key.input_len]
    return tuple(ProfilePoint(batch=int(r["batch"]), input_len=None if pd.isna(r["input_len"]) else float(r["input_len"]),
                              mean_ms=float(r["mean_ms"]), kind=str(r["kind"]), source=str(r["source"]),
                              measured_on="" if pd.isna(r["measured_on"]) else str(r["measured_on"]))
                 for _, r in sel.sort_values("batch").iterrows())


def profiles_used(scenario, design, book: ProfileBook) -> tuple[ProfileUse, ...]:
    """One ProfileUse per partition kind of the design's GPUs (none for a backend without GPUs)."""
    gpu = getattr(scenario, "gpu", None)
    if gpu is None or design.gpu is None:
        return ()
    counts = Counter(p.name for p in design.gpu.partitions)
    out = []
    for name, n in counts.items():
        c = _curve(book, scenario.model, gpu.sku, name, scenario.precision, design.gpu.input_len)
        src = c.reference or c.key
        fit = c.fit.rms_rel_error if c.fit is not None else None
        out.append(ProfileUse(partition=name, instances=n, provenance=c.provenance, series=_label(c.key),
                              input_len=c.key.input_len, reference=_label(c.reference) if c.reference else None,
                              sm_ratio=c.sm_ratio, fit_rms_rel_error=fit if fit is None or math.isfinite(fit) else None,
                              cross_gpu=c.cross_gpu, sources=tuple(c.sources),
                              points=_points(book, scenario.model, src)))
    return tuple(out)
