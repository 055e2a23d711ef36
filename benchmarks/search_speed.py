"""Design-search speed: every maximal MIG layout of an A100 x preprocessing x RPC path x batching.

Prints designs per second of engine.search.search (build, evaluate_design with SLA-bounded throughput
and cost, best designs, Pareto fronts) in one process and in a pool of worker processes, each from a
fresh Context (nothing memoised), and the simulator check of the top 3 candidates separately.

    .venv/bin/python benchmarks/search_speed.py [--gpu A100-SXM4-80GB] [--model resnet50] [--workers 2]
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.analytic import Context  # noqa: E402
from engine.search import expand, parse_space, search  # noqa: E402
from engine.store import Store  # noqa: E402

GOAL_PER_PROCESS = 2000  # designs/s with their SLA-bounded rate (issue 19)

ap = argparse.ArgumentParser()
ap.add_argument("--gpu", default="A100-SXM4-80GB")
ap.add_argument("--model", default="resnet50")
ap.add_argument("--rate", type=float, default=1000.0)
ap.add_argument("--workers", type=int, default=2)
args = ap.parse_args()

space = {"name": "benchmark", "base": {"model": args.model, "gpu": {"sku": args.gpu},
                                       "workload": {"arrival": {"rate_rps": args.rate}}},
         "layouts": "all", "preprocessing": ["cpu", "none"], "rpc": ["grpc", "splitrpc-pnic"],
         "batching": ["preba", {"policy": "fixed", "max_batch": 16, "max_queue_delay_ms": 2}]}

with tempfile.TemporaryDirectory() as tmp:
    db = Path(tmp) / "k.duckdb"
    book_ctx = Context.from_store(Store(db))
    t0 = time.perf_counter()
    grid = expand(parse_space(space), book_ctx.book)
    t_expand = time.perf_counter() - t0
    timings = {}
    for workers in sorted({1, args.workers}):
        ctx = Context.from_store(Store(db), book=book_ctx.book)  # fresh memo: a cold sweep
        t0 = time.perf_counter()
        res = search(grid, ctx, workers=workers, confirm_top=0)
        timings[workers] = (time.perf_counter() - t0, res)
    t0 = time.perf_counter()
    confirmed = search(grid, Context.from_store(Store(db), book=book_ctx.book), workers=args.workers,
                       confirm_top=3, sim_requests=100_000)
    t_confirm = time.perf_counter() - t0 - confirmed.analytic_s

print(f"designs: {grid.size:,} ({' x '.join(map(str, grid.shape))}: layouts x preprocessing x rpc x batching x "
      f"scheduler) of {args.model} on {args.gpu} at {args.rate:,.0f} req/s; space expanded in {t_expand:.2f} s; "
      f"{len(set(grid.twins())):,} evaluated, the others twins of one (the same slices at other positions: its "
      "answers); designs/s counts every design of the space")
for workers, (wall, res) in timings.items():
    print(f"search, {workers} process(es): {wall:.2f} s = {res.size / wall:,.0f} designs/s "
          f"(analytic sweep {res.designs_per_s:,.0f} designs/s" + (f"; goal >= {GOAL_PER_PROCESS:,} per process, "
                                                                   "issue 19)" if workers == 1 else ")"))
print(f"simulator check of the top 3 candidates (100,000 requests each): {t_confirm:.2f} s")
res = timings[args.workers][1]
for name, i in (("best SLA-bounded throughput", res.best_throughput), ("best queries per dollar", res.best_value)):
    if i is not None:
        d = res.designs[i]
        print(f"{name}: {d.label}: {d.sla_bounded_rps:,.0f} req/s, {d.queries_per_usd:,.0f} queries/$")
print("fronts: " + ", ".join(f"{f.name} {len(f.indices)} designs" for f in res.fronts))
