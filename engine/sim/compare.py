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

from engine.analytic import Context, at_rate, build_design, capacity
from engine.scenario import load_scenario
from engine.sim.run import simulate_design
from engine.sim.sweep import sweep
from engine.store import Store

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
VARIABLE_BATCHING = ("none", "fixed", "preba", "work-conserving")


def grid(quick: bool = False) -> list[dict]:
    """Scenario dicts of the comparison grid (ResNet-50 on an A100-40GB, CPU preprocessing, gRPC)."""
    scenarios = []
    layouts = ["7x1g", "3g+2g+1g+1g"] if quick else list(LAYOUTS)
    for layout, batching, scheduler in itertools.product(layouts, BATCHING, SCHEDULERS):
        if layout == "full" and scheduler != "fifs":  # one partition: nothing to schedule
            continue
        scenario = {"name": f"{layout} {batching} {scheduler}", "model": "resnet50",
                    "gpu": {"sku": "A100-SXM4-40GB"}, "batching": {"policy": batching},
                    "scheduler": {"policy": scheduler}}
        if LAYOUTS[layout] is not None:
            scenario["gpu"]["layout"] = LAYOUTS[layout]
        scenarios.append(scenario)
    return scenarios


def variable_grid(quick: bool = False, policies: Optional[tuple[str, ...]] = None) -> list[dict]:
    """Scenario dicts of the variable-length models, one per batching policy (first-idle-first-serve); PREBA
    batches them by length bucket (engine.analytic.preba_buckets)."""
    if policies is None:
        policies = ("work-conserving",) if quick else VARIABLE_BATCHING
    return [{**base, "name": f"{label} {batching} fifs", "batching": {"policy": batching}}
            for (label, base), batching in itertools.product(VARIABLE, policies)]


def scenarios_for(models: str, quick: bool = False) -> list[dict]:
    """The grid for --models fixed (ResNet-50), variable or all."""
    fixed = grid(quick) if models in ("fixed", "all") else []
    return fixed + (variable_grid(quick) if models in ("variable", "all") else [])


def held_capacity(design, ctx, n_requests: int = 30_000, seed: int = 3, steps: int = 8) -> tuple[float, float]:
    """(holds, fails): the simulator holds `holds` req/s and not `fails` (bisection from 0.5x to 2x the analytic capacity).

    "Holds" is the simulator's own stability verdict (engine.sim.stats.stability): no queue growth over the
    second half of the run and as many completions as arrivals.
    """
    analytic = capacity(design)[0]
    holds, fails = 0.5 * analytic, 2.0 * analytic
    for _ in range(steps):
        middle = 0.5 * (holds + fails)
        result = simulate_design(design, n_requests, rate=middle, seed=seed, ctx=ctx, stats="numpy")
        holds, fails = (middle, fails) if result.stable else (holds, middle)
    return holds, fails


def capacity_table(ctx, scenarios: list[dict], n_requests: int = 30_000) -> pd.DataFrame:
    """Analytic capacity against the rate the simulator holds, per scenario."""
    rows = []
    for data in scenarios:
        design = build_design(load_scenario(data, ctx.book), ctx)
        analytic = capacity(design)[0]
        holds, fails = held_capacity(design, ctx, n_requests)
        rows.append({"scenario": data["name"], "analytic_rps": analytic, "sim_holds_rps": holds,
                     "sim_fails_rps": fails, "error": analytic / holds - 1})
    return pd.DataFrame(rows)


def compare(ctx, scenarios: list[dict], utils=UTILS, n_requests: int = 40_000, seed: int = 1,
            workers: Optional[int] = None) -> pd.DataFrame:
    rows = []
    for data in scenarios:
        design = build_design(load_scenario(data, ctx.book), ctx)
        analytic_capacity = capacity(design)[0]
        rates = [util * analytic_capacity for util in utils]
        simulated = sweep(design, rates, n_requests, seed=seed, ctx=ctx, workers=workers)
        for util, rate, sim in zip(utils, rates, simulated):
            point = at_rate(design, rate)
            analytic_p99, analytic_mean = point.latency_s["p99"] * 1e3, point.latency_s["mean"] * 1e3
            p99, mean = sim.latency_ms.p99, sim.latency_ms.mean
            rows.append({"scenario": data["name"], "util": util, "rate_rps": rate, "analytic_mean_ms": analytic_mean,
                         "sim_mean_ms": mean,
                         "mean_error": (analytic_mean - mean) / mean if math.isfinite(analytic_mean) else math.inf,
                         "analytic_p99_ms": analytic_p99, "sim_p99_ms": p99, "sim_ci_ms": sim.ci.p99,
                         "error": (analytic_p99 - p99) / p99 if math.isfinite(analytic_p99) else math.inf,
                         "stable": sim.stable})
    return pd.DataFrame(rows)


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Median and largest |relative error| of the analytic p99 and mean, by scheduler and batching policy."""
    words = table["scenario"].str.split()  # "<layout> <policy> <scheduler>"
    table = table.assign(scheduler=words.str[2], policy=words.str[1], p99=table["error"].abs(),
                         mean=table["mean_error"].abs())
    stats = {"p99": ["median", "max", "count"], "mean": ["median", "max"]}
    by_policy = table.groupby(["scheduler", "policy"]).agg(stats)
    total = table.groupby("scheduler").agg(stats)
    total.index = pd.MultiIndex.from_tuples([(scheduler, "all") for scheduler in total.index],
                                            names=["scheduler", "policy"])
    return pd.concat([by_policy, total]).sort_index()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engine.sim.compare")
    parser.add_argument("--requests", type=int, default=40_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true",
                        help="two layouts only (one batching policy per variable model)")
    parser.add_argument("--models", choices=("fixed", "variable", "all"), default="fixed",
                        help="ResNet-50 (fixed-size inputs), the variable-length models, or both")
    parser.add_argument("--capacity", action="store_true", help="also the rate the simulator holds, by bisection")
    parser.add_argument("--utils", default=",".join(str(util) for util in UTILS),
                        help="comma-separated loads, e.g. 0.3,0.5")
    args = parser.parse_args(argv)
    ctx = Context.from_store(Store())
    scenarios = scenarios_for(args.models, args.quick)
    utils = tuple(float(util) for util in args.utils.split(","))
    table = compare(ctx, scenarios, utils=utils, n_requests=args.requests, seed=args.seed)
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(table.drop(columns=["rate_rps"]).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
        print()
        print(summary(table).to_string(float_format=lambda x: f"{x:.3f}"))
        if args.capacity:
            print()
            print(capacity_table(ctx, scenarios).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
