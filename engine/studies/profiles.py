"""Tables the Profiles page and reports show: knees per series, and all partitions of a GPU side by side."""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict

from engine.profiles.curves import CurveKey, curve_from_points
from engine.profiles.knee import knee_curve, knee_utilization
from engine.profiles.service import ProfileBook, ProfileError, batch_provenance
from engine.vocab import KneeRule

SERIES = ["model", "sku", "partition", "precision", "framework", "input_len"]


def series_knees(points: pd.DataFrame, percentile: int = 95, threshold: float = 0.8) -> pd.DataFrame:
    """Batch_knee and Time_knee (ms) of every series in `points`, by both rules.

    Series with fewer than three batch sizes have no knee and are left out.
    """
    rows = []
    for key, g in points.groupby(SERIES, dropna=False, sort=True):
        if g["batch"].nunique() < 3 or g["batch"].duplicated().any():
            continue
        k = dict(zip(SERIES, key))
        k["input_len"] = None if pd.isna(k["input_len"]) else float(k["input_len"])
        curve = curve_from_points(CurveKey(**k), g)
        b = np.array(curve.batches)
        x, y = curve.throughput(b), curve.tail(b, percentile)
        for rule, i in ((KneeRule.UTILIZATION, knee_utilization(b, x, threshold)),
                        (KneeRule.CURVE, knee_curve(x, y))):
            rows.append({**k, "rule": rule.value, "batch_knee": int(b[i]), "time_knee_ms": float(y[i]) * 1e3,
                         "mean_ms": float(curve.mean_s[i]) * 1e3, "throughput": float(x[i]),
                         "percentile": percentile})
    return pd.DataFrame(rows, columns=SERIES + ["rule", "batch_knee", "time_knee_ms", "mean_ms", "throughput",
                                                "percentile"])


class PartitionView(BaseModel):
    """Every requested partition of one GPU for one model: curves, knees, limits and what could not be answered."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    model: str
    sku: str
    percentile: int
    curves: pd.DataFrame  # partition, batch, mean_ms, tail_ms, throughput, provenance
    summary: pd.DataFrame  # one row per partition
    unavailable: dict[str, str]  # partition -> why there is no curve


def _flags(book: ProfileBook, curve) -> tuple[str, ...]:
    """The data checks the curve (or, for a derived curve, its reference) fails."""
    if curve.reference is None:
        return curve.flags
    ref = curve.reference
    try:
        return book.curve(ref.model, ref.sku, ref.partition, ref.precision, ref.framework, ref.input_len).flags
    except ProfileError:
        return ()


def compare_partitions(book: ProfileBook, model: str, sku: str, partitions: Optional[list[str]] = None,
                       precision: Optional[str] = None, input_len: Optional[float] = None, percentile: int = 95,
                       threshold: float = 0.8, cross_gpu: bool = False) -> PartitionView:
    """Latency and throughput of `model` on each partition of `sku`: measured or published where profiled, else
    derived with the slice law, else estimated (engine.estimator, with its expected error)."""
    parts = partitions or book.partitions(sku)
    curve_rows, summary, missing = [], [], {}
    for part in parts:
        try:
            pred = book.predict(model, sku, part, 1, input_len=input_len, precision=precision, cross_gpu=cross_gpu)
            knees = {r: book.knee(model, sku, part, r, threshold=threshold, percentile=percentile,
                                  input_len=pred.input_len, precision=pred.precision, framework=pred.framework,
                                  cross_gpu=cross_gpu) for r in KneeRule}
            curve = book.curve(model, sku, part, pred.precision, pred.framework,
                               pred.input_len if not book.is_fixed_input(model) else None, cross_gpu)
        except ProfileError as e:
            missing[part] = str(e)
            continue
        grid = curve.grid(book.memory_limit(model, sku, part, pred.input_len))
        if curve.fit is None:
            grid = np.array([b for b in curve.batches if b <= grid[-1]])
        for b, m, t, x in zip(grid, curve.mean(grid), curve.tail(grid, percentile), curve.throughput(grid)):
            curve_rows.append({"partition": part, "batch": int(b), "mean_ms": m * 1e3, "tail_ms": t * 1e3,
                               "throughput": x, "provenance": batch_provenance(curve, int(b)),
                               "expected_rel_error": curve.expected_rel_error})
        u, c = knees[KneeRule.UTILIZATION], knees[KneeRule.CURVE]
        summary.append({
            "partition": part, "provenance": pred.provenance, "reference": pred.reference,
            "sm_ratio": pred.sm_ratio, "fit_rms_rel_error": pred.fit_rms_rel_error,
            "batch_range": f"{curve.min_batch}..{int(grid[-1])}", "memory_max_batch": pred.memory_max_batch,
            "batch1_ms": pred.mean_s * 1e3, "max_throughput": float(np.max(curve.throughput(grid))),
            "knee_util_batch": u.batch, "knee_util_ms": u.time_s * 1e3,
            "knee_curve_batch": c.batch, "knee_curve_ms": c.time_s * 1e3,
            "precision": pred.precision, "framework": pred.framework, "input_len": pred.input_len,
            "extrapolated_beyond_batch": curve.law_max_batch,
            "extrapolation_rel_uncertainty": curve.extrapolation_rel_uncertainty,
            "expected_rel_error": curve.expected_rel_error,
            "data_flags": "; ".join(_flags(book, curve)),
        })
    return PartitionView(model=model, sku=sku, percentile=percentile, curves=pd.DataFrame(curve_rows),
                         summary=pd.DataFrame(summary), unavailable=missing)
