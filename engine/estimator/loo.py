"""Leave-one-out error of the estimator: fit without a (model, GPU) curve, predict it, compare (issue 13).

For every (model, GPU) pair with published or measured points, every point of that pair is held out, the
roofline is calibrated on the rest, and each held-out series (precision, framework, input length) is
predicted at its own batches with its own harness where other curves share it (the median harness where
none does). Two errors per series, relative to the published figure:
- batch-1 latency: at the smallest batch published (1 in all but a few series);
- saturated throughput: the largest batch / latency over the series' batches.
`benchmarks/estimator_loo.py` writes the table to data/estimator_loo.csv; the engine reads its medians
as the error it quotes next to every estimate.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

import numpy as np

from engine.estimator.calibrate import calibrate
from engine.estimator.roofline import batch_latency_s

if TYPE_CHECKING:
    import pandas as pd

LOO_TABLE = Path(__file__).resolve().parents[2] / "data" / "estimator_loo.csv"
COLUMNS = ("model", "sku", "family", "precision", "framework", "input_len", "batch1", "batch1_err",
           "sat_throughput", "sat_err", "harness_known")


def series_errors(estimator, held: pd.DataFrame, cal) -> list[dict]:
    """Errors of each series in `held` (one (model, GPU) pair's points) under calibration `cal`."""
    rows = []
    for (prec, fw, length), s in held.groupby(["precision", "framework", held["input_len"].fillna(-1)]):
        s = s.sort_values("batch")
        sku, model = s["sku"].iloc[0], s["model"].iloc[0]
        spec = estimator.spec(sku, s["partition"].iloc[0], prec)
        ops = estimator.table(model)
        eff, _ = cal.efficiency(spec.family)
        key = s["harness"].iloc[0]
        har = cal.harness(key)
        input_len = None if length == -1 else float(length)
        pred = np.array([batch_latency_s(ops, spec, eff, har, float(b), input_len) for b in s["batch"]])
        obs = s["mean_ms"].to_numpy(dtype=float) / 1e3
        b = s["batch"].to_numpy(dtype=float)
        sat_obs, sat_pred = float(np.max(b / obs)), float(np.max(b / pred))
        rows.append(dict(model=model, sku=sku, family=spec.family, precision=prec, framework=fw,
                         input_len=input_len, batch1=int(b[0]), batch1_err=float(pred[0] / obs[0] - 1),
                         sat_throughput=sat_obs, sat_err=float(sat_pred / sat_obs - 1),
                         harness_known=key in cal.harnesses))
    return rows


def leave_one_out(estimator, progress: Optional[Callable[[str], None]] = None) -> pd.DataFrame:
    """The leave-one-out table: one row per held-out series (see the module docstring)."""
    pts, tables, specs = estimator.calibration_inputs(estimator.points)
    pairs = sorted(set(zip(pts["model"], pts["sku"])))
    rows = []
    for i, (model, sku) in enumerate(pairs):
        if progress:
            progress(f"{i + 1}/{len(pairs)} {model} @ {sku}")
        held = (pts["model"] == model) & (pts["sku"] == sku)
        cal = calibrate(pts[~held], tables, specs)
        rows.extend(series_errors(estimator, pts[held], cal))
    import pandas as pd  # heavy (~0.3 s to import): loaded where a DataFrame is made, not by `evaluate`
    return pd.DataFrame(rows, columns=list(COLUMNS))


def summary(table: pd.DataFrame, by: Optional[str] = None) -> pd.DataFrame:
    """Median and 90th-percentile |relative error| of batch-1 latency and saturated throughput."""
    t = table.assign(b1=table["batch1_err"].abs(), sat=table["sat_err"].abs())
    groups = [("all", t)] if by is None else list(t.groupby(by))
    import pandas as pd  # heavy (~0.3 s to import): loaded where a DataFrame is made, not by `evaluate`
    return pd.DataFrame([dict(group=g, series=len(d), batch1_median=d["b1"].median(), batch1_p90=d["b1"].quantile(0.9),
                              sat_median=d["sat"].median(), sat_p90=d["sat"].quantile(0.9)) for g, d in groups])


def expected_errors(path: Path = LOO_TABLE) -> dict[str, float]:
    """The median |error| of saturated throughput and batch-1 latency (the larger) by GPU family and overall,
    from the committed leave-one-out table; empty when it is missing."""
    if not path.exists():
        return {}
    import pandas as pd  # heavy (~0.3 s to import): loaded where a DataFrame is made, not by `evaluate`
    t = pd.read_csv(path)
    out = {"all": float(max(t["batch1_err"].abs().median(), t["sat_err"].abs().median()))}
    for fam, d in t.groupby("family"):
        out[str(fam)] = float(max(d["batch1_err"].abs().median(), d["sat_err"].abs().median()))
    return out
