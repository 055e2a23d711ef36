"""Coverage of the simulator's 95 % confidence interval for the p99 sojourn time (engine.sim.stats.quantile_ci).

For M/M/1 at rho 0.9, M/M/3 at rho 0.95 and M/M/7 at rho 0.85 (synthetic exponential service of 1 ms on
1, 3 or 7 partitions under first-idle-first-serve, host stages left out, no batching), runs the simulator
for 20 seeds of 200,000 customers each (10 % warm-up) and counts the runs whose interval p99 -+ half-width
holds the exact p99 (engine.analytic.queueing.mmc_sojourn_quantile: Erlang C wait mixture plus exponential
service). A 95 % interval should hold it about 19 times in 20; the goal is at least 17.

    .venv/bin/python benchmarks/ci_coverage.py [--seeds 20] [--requests 200000] [--case M/M/3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CASES = {"M/M/1": (1, 0.9), "M/M/3": (3, 0.95), "M/M/7": (7, 0.85)}
MEAN_MS = 1.0
GOAL = 17


def design_for(ctx, servers: int):
    """A design whose GPU side is `servers` identical partitions (first-idle-first-serve, no batching)."""
    from engine.analytic import build_design
    from engine.scenario import load_scenario

    gpu = {"sku": "A100-SXM4-40GB"} | ({"layout": ["1g.5gb"] * servers} if servers > 1 else {})
    data = {"model": "resnet50", "gpu": gpu, "batching": {"policy": "none"}, "preprocessing": {"device": "none"}}
    return build_design(load_scenario(data, ctx.book), ctx)


def coverage(ctx, servers: int, rho: float, seeds: int = 20, n_requests: int = 200_000) -> dict:
    """Runs whose p99 interval holds the exact M/M/c p99, out of `seeds`, with the runs' p99s and half-widths."""
    from engine.analytic.queueing import mmc_sojourn_quantile
    from engine.sim import ServiceSpec, simulate_design

    mu = 1.0 / MEAN_MS  # per ms
    exact = mmc_sojourn_quantile(rho * servers * mu, mu, servers, 0.99)
    design = design_for(ctx, servers)
    service = ServiceSpec(kind="exponential", mean_ms=MEAN_MS, host="none")
    held, p99s, widths = 0, [], []
    for seed in range(seeds):
        r = simulate_design(design, n_requests, seed=seed, rate=rho * servers / (MEAN_MS / 1e3), ctx=ctx,
                            service=service, stats="numpy")
        p99, hw = r.latency_ms.p99, r.ci.p99
        held += abs(p99 - exact) <= hw
        p99s.append(p99)
        widths.append(hw)
    return {"held": held, "seeds": seeds, "exact_ms": exact, "p99_ms": p99s, "half_width_ms": widths}


def main(argv=None) -> int:
    from engine.analytic import Context
    from engine.store import Store

    ap = argparse.ArgumentParser(prog="benchmarks/ci_coverage.py")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--case", choices=list(CASES), action="append", help="one case (repeatable); default all")
    args = ap.parse_args(argv)
    ctx = Context.from_store(Store())
    ok = True
    for name in args.case or list(CASES):
        servers, rho = CASES[name]
        t0 = time.perf_counter()
        c = coverage(ctx, servers, rho, args.seeds, args.requests)
        mean_hw = sum(c["half_width_ms"]) / len(c["half_width_ms"])
        print(f"{name} rho {rho}: exact p99 {c['exact_ms']:.3f} ms; interval held it {c['held']}/{c['seeds']} "
              f"(mean half-width {mean_hw:.2f} ms, {mean_hw / c['exact_ms']:.1%} of p99; "
              f"{time.perf_counter() - t0:.0f} s)", flush=True)
        ok &= c["held"] >= GOAL * c["seeds"] / 20
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
