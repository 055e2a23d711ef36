"""Scale-out: a design search of 22,944 designs plus the simulator's check of the top 50, on the local executor
(1 and 2 processes) and on a Ray cluster on this machine with 1 and 2 worker nodes (one CPU each, a head with none).

Prints designs/s, the Ray overhead per task (no-op tasks on one node, and the difference to one local process per
chunk), and the time projected on N nodes from the measured per-chunk costs. Every run must give the same answer as
the first (the check is part of the benchmark). Starts and stops its own loopback cluster (engine.executors.ray_node).

    .venv/bin/python benchmarks/scale_out.py [--confirm 50] [--sim-requests 10000] [--quick]
"""

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.analytic import Context  # noqa: E402
from engine.executors import LocalExecutor, make_executor  # noqa: E402
from engine.executors.ray_node import LocalRayCluster  # noqa: E402
from engine.search import expand, parse_space, search  # noqa: E402
from engine.search.run import MAX_CHUNK, PARALLEL_FROM  # noqa: E402
from engine.store import Store  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--confirm", type=int, default=50, help="designs the simulator checks")
ap.add_argument("--sim-requests", type=int, default=10_000, help="simulated requests per checked design")
ap.add_argument("--noop-tasks", type=int, default=200, help="empty tasks timed for Ray's per-task overhead")
ap.add_argument("--quick", action="store_true", help="a 5,736-design space (a smoke run of this script)")
args = ap.parse_args()

BATCHING = ["none", "preba", "work-conserving", {"policy": "fixed", "max_batch": 8, "max_queue_delay_ms": 2},
            {"policy": "fixed", "max_batch": 32, "max_queue_delay_ms": 2}]
space = {"name": "scale-out", "base": {"model": "resnet50", "gpu": {"sku": "A100-SXM4-80GB"},
                                       "workload": {"arrival": {"rate_rps": 2000}}},
         "layouts": "all", "preprocessing": ["cpu", "dpu", "gpu", "none"],
         "rpc": ["grpc", "grpc-bypass", "lynx-snic", "splitrpc-pnic", "splitrpc-snic", "local"],
         "batching": BATCHING[:1] if args.quick else BATCHING[:4], "max_designs": 30_000}
TIMINGS = {"wall_s", "analytic_s", "designs_per_s", "workers"}


def _noop(_shared, chunk):
    return chunk


def chunks_for(n: int, workers: int) -> int:
    """The number of chunks engine.search.run._sweep cuts n designs into for `workers` workers."""
    size = n if n < PARALLEL_FROM else max(1, min(MAX_CHUNK, math.ceil(n / (4 * workers))))
    return math.ceil(n / size)


def run(label: str, executor, grid, ctx, rows: list, reference: list):
    t0 = time.perf_counter()
    marks = {}
    res = search(grid, ctx.fresh(), executor=executor, confirm_top=args.confirm, sim_requests=args.sim_requests,
                 progress=lambda f, msg: marks.setdefault("sim", time.perf_counter()) if "simulat" in msg else None)
    wall = time.perf_counter() - t0
    confirm_s = wall - (marks.get("sim", t0 + wall) - t0)
    answer = res.model_dump(exclude=TIMINGS)
    same = "reference" if not reference else ("same" if answer == reference[0] else "DIFFERENT")
    if not reference:
        reference.append(answer)
    rows.append(dict(label=label, workers=executor.parallel_for(10**6), wall=wall, analytic=res.analytic_s,
                     confirm=confirm_s, dps=res.size / res.analytic_s, answer=same))
    print(f"  {label}: {wall:.1f} s ({same})", flush=True)
    return res


with tempfile.TemporaryDirectory() as tmp:
    ctx = Context.from_store(Store(Path(tmp) / "k.duckdb"))
    grid = expand(parse_space(space), ctx.book)
    n = grid.size
    print(f"{n:,} designs ({' x '.join(map(str, grid.shape))}), simulator check of the top {args.confirm} "
          f"({args.sim_requests:,} requests each)", flush=True)
    rows: list = []
    reference: list = []
    run("local, 1 process", LocalExecutor(1), grid, ctx, rows, reference)
    run("local, 2 processes", LocalExecutor(2), grid, ctx, rows, reference)
    with LocalRayCluster(workers=1, log_dir=Path(tmp) / "ray") as cluster:
        t0 = time.perf_counter()
        ray_exec = make_executor("ray", address=cluster.address)
        ray_exec.connect()
        cluster.wait_for_cpus(1)
        startup = time.perf_counter() - t0
        ray_exec.map(_noop, None, list(range(4)))  # the worker process and the function, once
        t0 = time.perf_counter()
        ray_exec.map(_noop, None, list(range(args.noop_tasks)))
        noop = (time.perf_counter() - t0) / args.noop_tasks
        run("ray, 1 worker node", ray_exec, grid, ctx, rows, reference)
        cluster.add_node()
        cluster.wait_for_cpus(2)
        run("ray, 2 worker nodes", ray_exec, grid, ctx, rows, reference)
        ray_exec.shutdown()

local1, ray1 = rows[0], rows[2]
chunks1 = chunks_for(n, 1)
per_chunk = local1["analytic"] / chunks1  # compute of one analytic chunk
per_check = local1["confirm"] / args.confirm  # one simulated design
derived = (ray1["wall"] - local1["wall"]) / (chunks1 + args.confirm)
overhead = max(noop, derived)
driver = max(0.0, local1["wall"] - local1["analytic"] - local1["confirm"])

print()
print(f"| executor | workers | search s | analytic s | designs/s | top-{args.confirm} check s | answer |")
print("|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['label']} | {r['workers']} | {r['wall']:.1f} | {r['analytic']:.1f} | {r['dps']:,.0f} | "
          f"{r['confirm']:.1f} | {r['answer']} |")
print()
shown = f"{derived * 1e3:.1f} ms" if derived > 0 else "below the noise (the Ray run was the faster)"
print(f"Ray cluster start (head + 1 node, joined): {startup:.1f} s; Ray overhead per task: {noop * 1e3:.1f} ms "
      f"(empty tasks, one node), {shown} (1-node Ray minus 1 local process, per chunk or check)")
print(f"load average at the end (1, 5, 15 min): {', '.join(f'{x:.1f}' for x in os.getloadavg())} on "
      f"{os.cpu_count()} cores")
print(f"per-chunk cost: {per_chunk * 1e3:.0f} ms per analytic chunk of {math.ceil(n / chunks1)} designs, "
      f"{per_check:.2f} s per simulated design")
print()
print("| nodes (1 CPU each) | chunks | projected search s |")
print("|---|---|---|")
for nodes in (1, 2, 4, 8, 16, 32, 64):
    chunks = chunks_for(n, nodes)
    chunk_cost = per_chunk * chunks1 / chunks  # the same designs in smaller chunks
    t = driver + math.ceil(chunks / nodes) * (chunk_cost + overhead) + math.ceil(args.confirm / nodes) * (
        per_check + overhead)
    print(f"| {nodes} | {chunks} | {t:.1f} |")
print("projection: driver work + rounds of chunks x (chunk cost + overhead) + rounds of checks x (check + overhead); "
      "a CPU per node, perfect balance")
