"""Analytic engine against the simulator: the p99 latency of both on a grid of scenarios.

    .venv/bin/python -m engine.sim.compare [--requests 40000] [--quick]

Prints one row per (scenario, utilisation): analytic p99, simulated p99 with its 95 % half-width,
and the relative error (analytic - sim) / sim; then the median and largest |error| per batching
policy. Utilisation is the offered rate over the analytic capacity (0.3, 0.6, 0.85 by default).
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
            a = at_rate(design, r).latency_s["p99"] * 1e3
            p99 = s.latency_ms["p99"]
            rows.append({"scenario": data["name"], "util": u, "rate_rps": r, "analytic_p99_ms": a,
                         "sim_p99_ms": p99, "sim_ci_ms": s.ci.get("p99"),
                         "error": (a - p99) / p99 if math.isfinite(a) else math.inf,
                         "sim_mean_ms": s.latency_ms["mean"],
                         "analytic_mean_ms": at_rate(design, r).latency_s["mean"] * 1e3, "stable": s.stable})
    return pd.DataFrame(rows)


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Median and largest |relative error| of the analytic p99, by scheduler and batching policy."""
    parts = df["scenario"].str.split()
    df = df.assign(scheduler=parts.str[2], policy=parts.str[1], abs_error=df["error"].abs())
    by = df.groupby(["scheduler", "policy"])["abs_error"].agg(["median", "max", "count"])
    total = df.groupby("scheduler")["abs_error"].agg(["median", "max", "count"])
    total.index = pd.MultiIndex.from_tuples([(s, "all") for s in total.index], names=["scheduler", "policy"])
    return pd.concat([by, total]).sort_index()


def main(argv=None) -> int:
    from engine.analytic import Context
    from engine.store import Store

    ap = argparse.ArgumentParser(prog="python -m engine.sim.compare")
    ap.add_argument("--requests", type=int, default=40_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="two layouts only")
    args = ap.parse_args(argv)
    ctx = Context.from_store(Store())
    df = compare(ctx, grid(args.quick), n_requests=args.requests, seed=args.seed)
    with pd.option_context("display.width", 160, "display.max_rows", 500):
        print(df.drop(columns=["rate_rps"]).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
        print()
        print(summary(df).to_string(float_format=lambda x: f"{x:.3f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
