"""The least hardware for a load (issue 20's 'done when'): ResNet-50 and BERT-large at three rates each, across
A100 and H100, every winner confirmed by the simulator; then the README walkthrough's design (step 2: the
default question on a DPU) exported and every file read back and checked.

Prints one line per (model, rate, GPU type) with the GPUs, layout, host and TCO, the simulator's verdict on the
winner, and the export's file list with its checks. Wall time depends on load; the figures do not (seeded).

    .venv/bin/python benchmarks/sizing_matrix.py [--requests 20000] [--gpus A100-SXM4-80GB,H100-SXM5-80GB]
"""

import argparse
import copy
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.analytic import Context  # noqa: E402
import yaml  # noqa: E402

from engine.deploy import pbtxt  # noqa: E402
from engine.deploy.export import export_design, write_export  # noqa: E402
from engine.presets import DEFAULT_SCENARIO  # noqa: E402
from engine.deploy.sizing import size  # noqa: E402
from engine.store import Store  # noqa: E402

#: the two models of the issue, each at its MLPerf Server bound, and three rates from one GPU's worth to a rack's
CASES = (
    ({"model": "resnet50", "gpu": {"sku": "A100-SXM4-80GB"}, "preprocessing": {"device": "dpu"},
      "workload": {"sla": {"latency_ms": 15}}}, (1_000.0, 10_000.0, 40_000.0)),
    ({"model": "bert-large", "gpu": {"sku": "A100-SXM4-80GB"}, "workload": {"sla": {"latency_ms": 130}}},
     (100.0, 1_000.0, 4_000.0)),
)

ap = argparse.ArgumentParser()
ap.add_argument("--requests", type=int, default=20_000, help="simulated requests confirming each winner")
ap.add_argument("--gpus", default="A100-SXM4-80GB,H100-SXM5-80GB")
args = ap.parse_args()
skus = args.gpus.split(",")

with tempfile.TemporaryDirectory() as tmp:
    ctx = Context.from_store(Store(Path(tmp) / "k.duckdb"))
    for scenario, rates in CASES:
        for rate in rates:
            t0 = time.perf_counter()
            r = size(scenario, ctx, rate, skus, n_requests=args.requests, seed=0)
            print(f"\n{r.model} at {rate:,.0f} req/s, SLA p{r.percentile:g} <= {r.sla_ms:g} ms "
                  f"({time.perf_counter() - t0:.0f} s)")
            for a in r.answers:
                if a.status != "ok":
                    print(f"  {a.sku}: {a.status}: {a.reason}")
                    continue
                print(f"  {a.sku}: {a.gpus} GPU(s) = {a.servers} x {a.gpus_per_server} x [{a.layout_label}], "
                      f"{a.host_cores} host cores per server; p{r.percentile:g} {a.latency_at_rate_ms:.1f} ms; "
                      f"TCO ${a.tco_usd:,.0f}")
            c = r.confirmation
            if c is None:
                print("  no winner to confirm")
            else:
                sim = "unstable" if c.simulated_ms is None else f"{c.simulated_ms:.1f} +-{c.ci_ms or 0:.1f} ms"
                print(f"  simulator on one {c.sku} server ({c.n_requests:,} requests): {sim} vs analytic "
                      f"{c.analytic_ms:.1f} ms, SLA {c.sla_ms:g} ms: {'met' if c.met else 'NOT met'}")

    walkthrough = copy.deepcopy(DEFAULT_SCENARIO)
    walkthrough["preprocessing"] = {"device": "dpu"}
    export = export_design(walkthrough, ctx)  # raises ExportError if any file fails its check
    out = Path(tmp) / "deploy"
    written = write_export(export, out)
    same = 0
    for path in written:  # read back from disk with the library each consumer uses
        rel = path.relative_to(out).as_posix()
        text = path.read_text()
        if rel.endswith(".yaml"):
            same += yaml.safe_load(text) == export.objects[rel]
        elif rel.endswith(".pbtxt"):
            same += pbtxt.loads(text) == export.objects[rel]
    print(f"\nREADME walkthrough design (step 2, DPU) exported: {len(written)} files, {same} YAML/pbtxt files "
          f"read back equal to what was generated")
    for path in sorted(written):
        print(f"  {path.relative_to(out)}")
