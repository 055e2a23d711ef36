"""Analytic engine against the simulator: mean and p99 latency of both on a grid of scenarios.

    .venv/bin/python -m engine.sim.compare [--requests 40000] [--quick] [--models fixed|variable|all] [--capacity]

Prints one row per (scenario, utilisation): analytic and simulated mean and p99 (with its 95 %
half-width) and the relative errors (analytic - sim) / sim; then the median and largest |error|
per batching policy. Utilisation is the offered rate over the analytic capacity (0.3, 0.6, 0.85 by
default). `--models variable` runs the variable-length models (BERT-large over 64-384 tokens,
Jasper over log-normal audio), `all` both sets; `--capacity` adds, per scenario, the analytic
capacity against the highest rate the simulator holds without its stability tests tripping
(engine.sim.stats.stability), found by bisection.
"""

from __future__ import annotations

import argparse
import itertools
import math
from typing import Optional

import pandas as pd

LAYOUTS = {"full": None, "7x1g": ["1g.5gb"] * 7, "3g+2g+1g+1g": ["3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"]}
BATCHING = ("none", "fixed", "preba", "work-conserving")
SCHEDULERS = ("fifs", "round-robin")
UTILS = (0.3, 0.6, 0.85)
# variable-length models: a batch costs as its longest member (engine.analytic.lengths)
VARIABLE = (
    ("bert-large/64-384tok", {"model": "bert-large", "gpu": {"sku": "A100-SXM4-40GB"},
                              "preprocessing": {"device": "none"},
                              "workload": {"input_len": {"kind": "uniform", "low": 64, "high": 384}}}),
    ("jasper/lognormal-s", {"model": "jasper", "gpu": {"sku": "A100-SXM4-80GB"}, "preprocessing": {"device": "none"},
                            "workload": {"input_len": {"kind": "lognormal", "mu": 1.9, "sigma": 0.5}}}),
)
VARIABLE_BATCHING = ("none", "fixed", "work-conserving")


def grid(quick: bool = False) -> list[dict]:
    """Scenario dicts of the comparison grid (ResNet-50 on an A100-40GB, CPU preprocessing, gRPC)."""
    out = []
    layouts = ["7x1g", "3g+2g+1g+1g"] if quick else list(LAYOUTS)
    for lay, bat, sch in itertools.product(layouts, BATCHING, SCHEDULERS):
        if lay == "full" and sch != "fifs":
            continue
        sc = {"name": f"{lay} {bat} {sch}", "model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB"},
              "batching": {"policy": bat}, "scheduler": {"policy": sch}}
        if LAYOUTS[lay] is not None:
            sc["gpu"]["layout"] = LAYOUTS[lay]
        out.append(sc)
    return out


def variable_grid(quick: bool = False) -> list[dict]:
    """Scenario dicts of the variable-length models, one per batching policy (first-idle-first-serve)."""
    out = []
    for (label, base), bat in itertools.product(VARIABLE, ("work-conserving",) if quick else VARIABLE_BATCHING):
        out.append({**base, "name": f"{label} {bat} fifs", "batching": {"policy": bat}})
    return out


def scenarios_for(models: str, quick: bool = False) -> list[dict]:
    """The grid for --models fixed (ResNet-50), variable or all."""
    return (grid(quick) if models in ("fixed", "all") else []) + (variable_grid(quick) if models in ("variable", "all")
                                                                  else [])


def held_capacity(design, ctx, n_requests: int = 30_000, seed: int = 3, steps: int = 8) -> tuple[float, float]:
    """(lo, hi): the simulator holds `lo` req/s and not `hi` (bisection from 0.5x to 2x the analytic capacity).

    "Holds" is the simulator's own stability verdict (engine.sim.stats.stability): no queue growth over the
    second half of the run and as many completions as arrivals.
    """
    from engine.analytic import capacity
    from engine.sim.run import simulate_design

    cap = capacity(design)[0]
    lo, hi = 0.5 * cap, 2.0 * cap
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        r = simulate_design(design, n_requests, rate=mid, seed=seed, ctx=ctx, stats="numpy")
        lo, hi = (mid, hi) if r.stable else (lo, mid)
    return lo, hi


def capacity_table(ctx, scenarios: list[dict], n_requests: int = 30_000) -> pd.DataFrame:
    """Analytic capacity against the rate the simulator holds, per scenario."""
    from engine.analytic import build_design, capacity
    from engine.scenario import load_scenario

    rows = []
    for data in scenarios:
        design = build_design(load_scenario(data, ctx.book), ctx)
        cap = capacity(design)[0]
        lo, hi = held_capacity(design, ctx, n_requests)
        rows.append({"scenario": data["name"], "analytic_rps": cap, "sim_holds_rps": lo, "sim_fails_rps": hi,
                     "error": cap / lo - 1})
    return pd.DataFrame(rows)


def compare(ctx, scenarios: list[dict], utils=UTILS, n_requests: int = 40_000, seed: int = 1,
            workers: Optional[int] = None) -> pd.DataFrame:
    from engine.analytic import at_rate, build_design, capacity
    from engine.scenario import load_scenario
    from engine.sim.sweep import sweep

    rows = []
    for data in scenarios:
        design = build_design(load_scenario(data, ctx.book), ctx)
        cap = capacity(design)[0]
        rates = [u * cap for u in utils]
        sims = sweep(design, rates, n_requests, seed=seed, ctx=ctx, workers=workers)
        for u, r, s in zip(utils, rates, sims):
            point = at_rate(design, r)
            a, a_mean = point.latency_s["p99"] * 1e3, point.latency_s["mean"] * 1e3
            p99, mean = s.latency_ms.p99, s.latency_ms.mean
            rows.append({"scenario": data["name"], "util": u, "rate_rps": r, "analytic_mean_ms": a_mean,
                         "sim_mean_ms": mean, "mean_error": (a_mean - mean) / mean if math.isfinite(a_mean) else math.inf,
                         "analytic_p99_ms": a, "sim_p99_ms": p99, "sim_ci_ms": s.ci.p99,
                         "error": (a - p99) / p99 if math.isfinite(a) else math.inf, "stable": s.stable})
    return pd.DataFrame(rows)


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Median and largest |relative error| of the analytic p99 and mean, by scheduler and batching policy."""
    parts = df["scenario"].str.split()
    df = df.assign(scheduler=parts.str[2], policy=parts.str[1], p99=df["error"].abs(), mean=df["mean_error"].abs())
    stats = {"p99": ["median", "max", "count"], "mean": ["median", "max"]}
    by = df.groupby(["scheduler", "policy"]).agg(stats)
    total = df.groupby("scheduler").agg(stats)
    total.index = pd.MultiIndex.from_tuples([(s, "all") for s in total.index], names=["scheduler", "policy"])
    return pd.concat([by, total]).sort_index()


def main(argv=None) -> int:
    from engine.analytic import Context
    from engine.store import Store

    ap = argparse.ArgumentParser(prog="python -m engine.sim.compare")
    ap.add_argument("--requests", type=int, default=40_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="two layouts only (one batching policy per variable model)")
    ap.add_argument("--models", choices=("fixed", "variable", "all"), default="fixed",
                    help="ResNet-50 (fixed-size inputs), the variable-length models, or both")
    ap.add_argument("--capacity", action="store_true", help="also the rate the simulator holds, by bisection")
    ap.add_argument("--utils", default=",".join(str(u) for u in UTILS), help="comma-separated loads, e.g. 0.3,0.5")
    args = ap.parse_args(argv)
    ctx = Context.from_store(Store())
    scenarios = scenarios_for(args.models, args.quick)
    utils = tuple(float(u) for u in args.utils.split(","))
    df = compare(ctx, scenarios, utils=utils, n_requests=args.requests, seed=args.seed)
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(df.drop(columns=["rate_rps"]).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
        print()
        print(summary(df).to_string(float_format=lambda x: f"{x:.3f}"))
        if args.capacity:
            print()
            print(capacity_table(ctx, scenarios).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
