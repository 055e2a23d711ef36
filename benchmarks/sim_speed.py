"""Simulator speed, side by side in one run (DESIGN.md section 7):

(a) an idiomatic simpy model, one process per request (host stages as simpy Resources, a batcher
    process, one process per batch), of the same batcher-and-partitions pipeline, fed the same
    workload (arrival times, host service samples, batch service draws);
(b) the project's simulator (engine.sim) on that workload (benchmarks/sim_reference.py times it against plain
    heapq loops);
then the requests/s of each and the ratio, the wall time for 1M requests through the full pipeline,
and a 20-point latency-vs-load curve (parallel processes).
Goals: (b) >= 5x (a); 1M requests <= 5 s on 2 cores; a 20-point curve in about 2 s.

    .venv/bin/python benchmarks/sim_speed.py [--requests 100000] [--big 1000000] [--curve-requests 40000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import simpy

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SCENARIO = {"name": "bench", "model": "resnet50",
            "gpu": {"sku": "A100-SXM4-40GB", "layout": ["3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"]},
            "batching": {"policy": "fixed"}, "scheduler": {"policy": "fifs"}}
LOAD = 0.7  # offered rate over the analytic capacity


def idiomatic(arrival, host_fixed, host_svc, host_servers, caps, tq, service):
    """One simpy process per request; FIFS over a shared queue with fixed batching (the same rule as
    engine.sim.batcher: a batch leaves when an instance is free and Batch_max items wait or the oldest
    request has waited Time_queue). Returns each request's completion time."""
    env = simpy.Environment()
    pools = [simpy.Resource(env, capacity=k) for k in host_servers]
    idle = simpy.Store(env)
    for p in range(len(caps)):
        idle.put(p)
    queue: list = []
    signal = [env.event()]
    end = np.zeros(len(arrival))
    nb = [0]

    def request(i):
        for j, pool in enumerate(pools):
            if host_fixed[j] > 0:
                yield env.timeout(host_fixed[j])
            with pool.request() as req:
                yield req
                yield env.timeout(host_svc[j][i])
        done = env.event()
        queue.append((env.now, i, done))
        if not signal[0].triggered:
            signal[0].succeed()
        yield done
        end[i] = env.now

    def source():
        for i, t in enumerate(arrival):
            if t > env.now:
                yield env.timeout(t - env.now)
            env.process(request(i))

    def run_batch(p, batch):
        yield env.timeout(service.sample(p, len(batch), None, nb[0] - 1))
        for _, _, done in batch:
            done.succeed()
        yield idle.put(p)

    def batcher():
        while True:
            p = yield idle.get()
            while not queue:
                signal[0] = env.event()
                yield signal[0]
            while len(queue) < caps[p] and env.now < queue[0][0] + tq:
                signal[0] = env.event()
                yield env.any_of([signal[0], env.timeout(queue[0][0] + tq - env.now)])
            batch = queue[:caps[p]]
            del queue[:caps[p]]
            nb[0] += 1
            env.process(run_batch(p, batch))

    env.process(source())
    env.process(batcher())
    env.run()
    return end


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=100_000, help="requests for the side-by-side comparison")
    ap.add_argument("--big", type=int, default=1_000_000, help="requests for the full-pipeline wall time")
    ap.add_argument("--curve-requests", type=int, default=40_000, help="requests per point of the curve")
    args = ap.parse_args()

    from engine.analytic import Context, build_design, capacity
    from engine.scenario import load_scenario
    from engine.sim import simulate_design
    from engine.sim.gpu import GpuEngine, GpuRequests, GpuSpec
    from engine.sim.hoststages import pool_shape
    from engine.sim.plan import gpu_plan
    from engine.sim.service import GpuService
    from engine.sim.sweep import sweep
    from engine.store import Store

    with tempfile.TemporaryDirectory() as tmp:
        ctx = Context.from_store(Store(Path(tmp) / "k.duckdb"))
        design = build_design(load_scenario(SCENARIO, ctx.book), ctx)
        rate = LOAD * capacity(design)[0]
        n = args.requests
        print(f"pipeline: {SCENARIO['model']} on {' + '.join(SCENARIO['gpu']['layout'])}, fixed batching, FIFS, "
              f"host stages {', '.join(s.name for s in design.host_stages)}; {rate:,.0f} req/s ({LOAD:.0%} of capacity)")

        # (b) the project's simulator, whole run (workload, host stages, simpy GPU side, statistics)
        simulate_design(design, 2000, seed=1, rate=rate, ctx=ctx)  # warm imports
        t = time.perf_counter()
        res = simulate_design(design, n, seed=1, rate=rate, ctx=ctx, warmup=0.0)
        t_b = time.perf_counter() - t
        rec = res.records

        # (a) idiomatic model on the same workload: arrival times, host service samples, batch draws
        names = [s.name for s in design.host_stages]
        host_svc = [(rec[f"{m}_end"] - rec[f"{m}_start"]).tolist() for m in names]
        host_servers = [pool_shape(s)[0] for s in design.host_stages]
        plan = gpu_plan(design, ctx)
        svc = GpuService(design, n, np.random.default_rng(np.random.SeedSequence(1).spawn(4)[3]), None, ctx)
        t = time.perf_counter()
        end_a = idiomatic(rec["arrival"].tolist(), [s.fixed_s for s in design.host_stages], host_svc,
                          host_servers, [c[0] for c in plan.batch_max], plan.time_queue_s, svc)
        t_a = time.perf_counter() - t
        lat_a = (end_a - rec["arrival"]) * 1e3

        # the GPU side alone of (b) (event loops; simpy processes only where they interact), for reference
        eng = GpuEngine(GpuSpec(service=svc, plan=plan, scheduler="fifs", sla_s=design.sla_s),
                        GpuRequests(ready=rec["ready"], sizes=rec["size"]))
        t = time.perf_counter()
        eng.run()
        t_core = time.perf_counter() - t

        print(f"\n{'':32} {'wall s':>8} {'requests/s':>12} {'mean ms':>9} {'p99 ms':>9}")
        print(f"{'(a) idiomatic, process/request':32} {t_a:>8.2f} {n / t_a:>12,.0f} {lat_a.mean():>9.3f} "
              f"{np.quantile(lat_a, 0.99):>9.3f}")
        print(f"{'(b) engine.sim, whole run':32} {t_b:>8.2f} {n / t_b:>12,.0f} {res.latency_ms.mean:>9.3f} "
              f"{res.latency_ms.p99:>9.3f}")
        print(f"{'    of which the GPU side':32} {t_core:>8.2f} {n / t_core:>12,.0f}")
        print(f"ratio (b)/(a): {t_a / t_b:.1f}x (goal >= 5x)")

        t = time.perf_counter()
        big = simulate_design(design, args.big, seed=2, rate=rate, ctx=ctx)
        t_big = time.perf_counter() - t
        print(f"\n{args.big:,} requests through the full pipeline: {t_big:.2f} s ({args.big / t_big:,.0f} req/s; "
              f"{sum(big.batch_size_histogram.values()):,} batches measured; goal <= 5 s)")

        rates = list(np.linspace(0.05, 0.95, 20) * capacity(design)[0])
        t = time.perf_counter()
        curve = sweep(design, rates, args.curve_requests, seed=3, ctx=ctx)
        t_curve = time.perf_counter() - t
        print(f"20-point latency-vs-load curve, {args.curve_requests:,} requests per point: {t_curve:.2f} s "
              f"(goal about 2 s); p99 from {curve[0].latency_ms.p99:.1f} to {curve[-1].latency_ms.p99:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
