"""The estimator's honest error: leave-one-out over the store's curves, and MLPerf H100 from other GPUs.

Writes data/estimator_loo.csv (one row per held-out series; the engine quotes its medians next to every
estimate) and prints:
- the calibration fitted on every curve (efficiency by GPU family and operator class; in-sample error);
- the leave-one-out medians and 90th percentiles of |relative error| of batch-1 latency and saturated
  throughput, overall, by GPU and by model family (goal: median <= 25 % and <= 15 %);
- MLPerf Offline throughput on H100 SXM and PCIe predicted from A100/A30/T4 only.

    .venv/bin/python benchmarks/estimator_loo.py [--no-write]
"""

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from engine.estimator.crossgpu import cross_gpu_table  # noqa: E402
from engine.estimator.estimate import Estimator  # noqa: E402
from engine.estimator.loo import LOO_TABLE, leave_one_out, summary  # noqa: E402
from engine.store import Store  # noqa: E402

MLPERF = ROOT.parent / "shared" / "data" / "seed_sources" / "mlperf_single_accelerator.csv"

ap = argparse.ArgumentParser()
ap.add_argument("--no-write", action="store_true", help="print only; leave data/estimator_loo.csv as it is")
args = ap.parse_args()
pd.set_option("display.width", 160)

store = Store()
est = Estimator.from_store(store)
t0 = time.perf_counter()
cal = est.calibration
print(f"calibration on {len(cal.curves)} curves, {cal.n_points} points: {time.perf_counter() - t0:.1f} s; "
      f"in-sample median |error| {cal.median_abs_rel_error:.1%}")
for fam, e in cal.families.items():
    effs = ", ".join(f"{c.value} {v:.2f}" for c, v in e.compute.items())
    print(f"  {fam:7s} compute efficiency: {effs}; memory {e.memory:.2f}; kernel floors "
          f"{e.matrix_floor_s * 1e6:.1f} / {e.vector_floor_s * 1e6:.1f} us")

t0 = time.perf_counter()
table = leave_one_out(est, progress=lambda m: print(f"  held out {m}", file=sys.stderr))
print(f"\nleave-one-out: {len(table)} series, {time.perf_counter() - t0:.0f} s")
domain = store.table("models").set_index("name")["domain"]
table["domain"] = table["model"].map(domain)
fmt = {c: "{:.1%}".format for c in ("batch1_median", "batch1_p90", "sat_median", "sat_p90")}
print(summary(table).to_string(index=False, formatters=fmt))
print(summary(table, "sku").to_string(index=False, formatters=fmt))
print(summary(table, "domain").to_string(index=False, formatters=fmt))
print(summary(table, "model").to_string(index=False, formatters=fmt))
if not args.no_write:
    table.drop(columns=["domain"]).to_csv(LOO_TABLE, index=False, float_format="%.6g")
    print(f"wrote {LOO_TABLE.relative_to(ROOT)}")

if MLPERF.exists():
    x = cross_gpu_table(est, pd.read_csv(MLPERF))
    print("\nMLPerf Offline throughput, H100 predicted from A100/A30/T4 (samples/s):")
    print(x.to_string(index=False, float_format=lambda v: f"{v:,.3g}"))
    print(f"median |error| {x['rel_error'].abs().median():.1%}")
else:
    print(f"\n{MLPERF} not found: the MLPerf cross-GPU check needs ../shared beside the repository")
