"""What the Profiles page shows of the estimator: its calibration, its leave-one-out error, and estimates of an
uploaded ONNX model on every GPU and slice of the catalogue (issue 13)."""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict

from engine.estimator.estimate import EstimateError
from engine.estimator.loo import LOO_TABLE, summary
from engine.profiles.service import ProfileBook


class LooReport(BaseModel):
    """The committed leave-one-out table's summaries (benchmarks/estimator_loo.py writes the table)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    overall: pd.DataFrame
    by_gpu: pd.DataFrame
    by_model: pd.DataFrame


class CalibrationReport(BaseModel):
    """The fit the estimator uses now: efficiency by GPU family and operator class, and its in-sample error."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    table: pd.DataFrame  # one row per GPU family
    in_sample_median: float
    curves: int


def loo_report() -> LooReport:
    """Median and 90th-percentile errors overall, by GPU and by model (empty tables without the file)."""
    loo = pd.read_csv(LOO_TABLE) if LOO_TABLE.exists() else pd.DataFrame(
        columns=["sku", "model", "batch1_err", "sat_err"])
    return LooReport(overall=summary(loo), by_gpu=summary(loo, "sku"), by_model=summary(loo, "model"))


def calibration_report(book: ProfileBook) -> CalibrationReport:
    """The calibration over the store's current curves (fitted on first use: seconds)."""
    cal = book.estimator.calibration
    rows = [{"family": fam, **{f"{c.value} efficiency": v for c, v in e.compute.items() if c.value != "memory"},
             "memory bandwidth efficiency": e.memory, "matrix kernel floor (us)": e.matrix_floor_s * 1e6,
             "vector kernel floor (us)": e.vector_floor_s * 1e6} for fam, e in cal.families.items()]
    return CalibrationReport(table=pd.DataFrame(rows), in_sample_median=cal.median_abs_rel_error,
                             curves=len(cal.curves))


def estimate_everywhere(book: ProfileBook, model: str, rows, precision: str = "fp16",
                        input_len: Optional[float] = None) -> pd.DataFrame:
    """An uploaded model's estimate on every GPU and partition of the catalogue: batch-1 latency, the best
    throughput and its batch, the memory limit, or why it cannot run there."""
    est = book.estimator.with_model(model, rows)
    out = []
    for gpu in book.catalog.gpus:
        for part in ["full"] + [p.name for p in gpu.profiles if "+me" not in p.name]:
            base = {"gpu": gpu.sku, "partition": part}
            try:
                e = est.estimate(model, gpu.sku, part, precision, input_len=input_len)
            except EstimateError as err:
                out.append({**base, "note": str(err)})
                continue
            x = np.array(e.throughput)
            out.append({**base, "batch1_ms": e.mean_s[0] * 1e3, "max_throughput": float(x.max()),
                        "best_batch": e.batches[int(x.argmax())], "memory_max_batch": e.memory_max_batch,
                        "expected_rel_error": e.expected_rel_error, "calibrated_on": e.calibrated_on, "note": ""})
    return pd.DataFrame(out)
