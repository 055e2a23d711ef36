"""Same search, two commits: every design's answers compared, and the CPU time of each sweep.

Archives BASE (a commit, default HEAD~1) into a temporary folder, runs the search_speed space (or --space wide:
a slice of every layout x 4 preprocessing devices x 6 RPC presets x 4 batchings x 2 schedulers) with one worker
in that tree and in this one, each in its own process from a fresh Context, and prints the largest relative
difference of every per-design number, whether the best designs and the fronts agree, and designs/s from
time.process_time() (CPU time: a shared machine's wall time is noisy), every design of the space counted, with how many
were evaluated (the others are twins of one: the same MIG slices at other positions, which take its answers).
With --repeat N the two trees run N times each, alternately (base, this, base, this...), and the median CPU time of
each is printed with the load average: on a busy machine a single pair of runs is off by tens of percent.

    .venv/bin/python benchmarks/search_answers.py [--base COMMIT] [--space speed|wide] [--repeat N]
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RUN = r'''
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from engine.analytic import Context
from engine.catalog import enumerate_layouts
from engine.search import expand, parse_space, search
from engine.store import Store
space = json.loads(sys.argv[3])
ctx = Context.from_store(Store(Path(sys.argv[2])))
if space["layouts"] == "slice":
    space["layouts"] = [l.labels() for l in enumerate_layouts(ctx.book.catalog.gpu("A100-SXM4-80GB"))][::20]
grid = expand(parse_space(space), ctx.book)
ctx = ctx.fresh()
import gc; gc.collect()  # the store's build leaves garbage behind: not the sweep's to collect
import scipy.optimize, scipy.special  # a once-per-process import, not the sweep's: a tree that loads it lazily
# (inside the sweep) and one that loads it with the engine are timed alike
t0 = time.process_time()
res = search(grid, ctx, workers=1, confirm_top=0)
cpu = time.process_time() - t0
evaluated = len(set(grid.twins())) if hasattr(grid, "twins") else grid.size  # a base before twins: every design
print(json.dumps({"cpu": cpu, "n": grid.size, "evaluated": evaluated, "rows": [r.model_dump() for r in res.designs],
                  "best": [res.best_throughput, res.best_value], "fronts": [list(f.indices) for f in res.fronts]}))
'''

SPACES = {
    "speed": {"name": "b", "base": {"model": "resnet50", "gpu": {"sku": "A100-SXM4-80GB"},
                                    "workload": {"arrival": {"rate_rps": 1000.0}}},
              "layouts": "all", "preprocessing": ["cpu", "none"], "rpc": ["grpc", "splitrpc-pnic"],
              "batching": ["preba", {"policy": "fixed", "max_batch": 16, "max_queue_delay_ms": 2}]},
    "wide": {"name": "b", "base": {"model": "resnet50", "gpu": {"sku": "A100-SXM4-80GB"},
                                   "workload": {"arrival": {"rate_rps": 3000.0}}},
             "layouts": "slice", "preprocessing": ["cpu", "dpu", "gpu", "none"],
             "rpc": ["grpc", "grpc-bypass", "lynx-snic", "splitrpc-pnic", "splitrpc-snic", "local"],
             "batching": ["preba", {"policy": "fixed", "max_batch": 8, "max_queue_delay_ms": 2},
                          {"policy": "fixed", "max_batch": 32, "max_queue_delay_ms": 5}, "work-conserving"],
             "scheduler": ["fifs", "round-robin"]},
}


def _run(tree: Path, db: Path, space: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", RUN, str(tree), str(db), json.dumps(space)], cwd=tree,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _rel(a, b) -> float:
    if a == b:
        return 0.0
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    return abs(a - b) / max(abs(a), abs(b))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default="HEAD~1")
    ap.add_argument("--space", choices=sorted(SPACES), default="speed")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each tree, alternating; the median CPU is printed")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        base.mkdir()
        archive = subprocess.run(["git", "archive", args.base], cwd=ROOT, capture_output=True, check=True).stdout
        (Path(tmp) / "base.tar").write_bytes(archive)
        with tarfile.open(Path(tmp) / "base.tar") as tar:
            tar.extractall(base)
        runs = [(_run(base, Path(tmp) / "base.duckdb", SPACES[args.space]),
                 _run(ROOT, Path(tmp) / "this.duckdb", SPACES[args.space])) for _ in range(max(1, args.repeat))]
    before, after = runs[0]
    before["cpu"] = statistics.median(b["cpu"] for b, _ in runs)
    after["cpu"] = statistics.median(a["cpu"] for _, a in runs)
    worst: dict[str, tuple[float, int]] = {}
    for x, y in zip(before["rows"], after["rows"]):
        for key, v in x.items():
            if isinstance(v, (float, int)) and not isinstance(v, bool) or v is None:
                d = _rel(v, y[key])
            else:
                d = 0.0 if v == y[key] else math.inf
            if d > worst.get(key, (0.0, -1))[0]:
                worst[key] = (d, x["index"])
    print(f"{args.space}: {before['n']:,} designs; CPU {before['cpu']:.2f} s -> {after['cpu']:.2f} s: "
          f"{before['n'] / before['cpu']:,.0f} -> {after['n'] / after['cpu']:,.0f} designs/s (goal 2,000, issue 19); "
          f"designs evaluated {before['evaluated']:,} -> {after['evaluated']:,} (the rest twins of one: the same MIG "
          "slices at other positions, engine.search.space.DesignGrid.twins)")
    if len(runs) > 1:
        print(f"  median of {len(runs)} alternating runs each; CPU s base {[round(b['cpu'], 2) for b, _ in runs]}, "
              f"this {[round(a['cpu'], 2) for _, a in runs]}; load average {os.getloadavg()[0]:.2f}")
    for key in ("sla_bounded_rps", "capacity_rps", "p99_ms", "sla_latency_ms", "tco_usd", "capex_usd", "opex_usd",
                "queries_per_usd", "queries_per_joule"):
        d, i = worst.get(key, (0.0, -1))
        print(f"  {key:18s} max relative difference {d:.3g}" + (f" (design #{i})" if d else ""))
    others = sorted(k for k, (d, _) in worst.items() if d and k not in ("sla_bounded_rps", "capacity_rps", "p99_ms",
                    "sla_latency_ms", "tco_usd", "capex_usd", "opex_usd", "queries_per_usd", "queries_per_joule"))
    print(f"  other fields differing: {others or 'none'}")
    print(f"  best designs: {'same' if before['best'] == after['best'] else 'DIFFERENT'}; fronts: "
          + ", ".join("same" if a == b else f"DIFFERENT (only before {sorted(set(a) - set(b))}, only after "
                      f"{sorted(set(b) - set(a))})" for a, b in zip(before["fronts"], after["fronts"])))


if __name__ == "__main__":
    main()
