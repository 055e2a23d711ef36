"""`python -m engine scenario schema` and `python -m engine evaluate SCENARIO.json [--sweep-rate LO:HI:N]`."""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math

from engine.cli.vocab import EXECUTOR_NAMES


def _ctx():
    """The evaluation's data: the store's rows, from the rows snapshot when it is current (no DuckDB)."""
    from engine.analytic import Context
    from engine.store.snapshot import open_rows

    return Context.from_store(open_rows())


def read_scenario(path: str):
    """The JSON value of the scenario file `path` ('-': stdin), read by engine.io.userfiles (one-line errors)."""
    from engine.io.userfiles import parse_json, read_text, shown

    return parse_json(read_text(path, "scenario"), f"scenario {shown(path)}")


def _clean(x):
    """JSON has no infinity: an unstable latency is reported as null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


#: most rates in one --sweep-rate curve: each is a full evaluation (or simulation)
MAX_SWEEP_POINTS = 10_000


def _sweep_spec(text: str) -> tuple[float, float, int]:
    """LO:HI:N of --sweep-rate: finite rates with 0 < LO <= HI <= the scenario's largest rate, 1 <= N <= 10000."""
    from engine.errors import excerpt
    from engine.contract import MAX_RATE_RPS, MIN_POSITIVE

    try:
        lo, hi, n = text.split(":")
        lo_f, hi_f, n_i = float(lo), float(hi), int(n)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LO:HI:N (e.g. 100:5000:20), got {excerpt(text)}") from None
    # float() accepts 'nan' and 'inf': finiteness first, then the order (every comparison with nan is False)
    if not (math.isfinite(lo_f) and math.isfinite(hi_f) and MIN_POSITIVE <= lo_f <= hi_f <= MAX_RATE_RPS) \
            or not 1 <= n_i <= MAX_SWEEP_POINTS:
        raise argparse.ArgumentTypeError(f"need finite 0 < LO <= HI <= {MAX_RATE_RPS:g} and 1 <= N <= "
                                         f"{MAX_SWEEP_POINTS}, got {excerpt(text)}")
    return lo_f, hi_f, n_i


def add_executor_arguments(parser) -> None:
    """--executor and --ray-address, the same on every command that runs parallel work (read by
    engine.executors.executor_from_args; defined here because importing engine.executors loads multiprocessing)."""
    parser.add_argument("--executor", choices=EXECUTOR_NAMES, default="local",
                        help="where the parallel work runs: this machine's processes (local) or a Ray cluster (ray)")
    parser.add_argument("--ray-address", metavar="HOST:PORT|auto",
                        help="with --executor ray: the cluster's head; 'auto' joins the cluster running on this "
                             "machine; left out, a Ray is started on this machine")


def cmd_schema(args: argparse.Namespace) -> int:
    from engine.scenario import scenario_schema

    print(json.dumps(scenario_schema(), indent=2))
    return 0


@contextlib.contextmanager
def _collector_paused():
    """The cyclic garbage collector off while the engine is imported, its book built and the design prepared.
    They make about a million objects that live until the process ends, and each collection the allocations
    trigger scans the ones made so far, to free next to nothing. The collector is on again for the evaluation
    (a rate sweep's may be long), with those objects frozen (gc.freeze): left in the youngest generation, they
    would all be scanned by the evaluation's first collections (the first one of them is set off by the scipy
    import engine.analytic defers to the formulas that use it), and again as they aged. cmd_evaluate unfreezes
    them when it ends."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_on:
            gc.enable()


def cmd_evaluate(args: argparse.Namespace) -> int:
    try:
        return _evaluate(args)
    finally:
        # the objects frozen at start-up are collectable again: for an in-process caller, and for the collection at
        # interpreter exit (DuckDB's bindings report what that one leaves uncollected as leaks, on stderr)
        gc.unfreeze()


def _evaluate(args: argparse.Namespace) -> int:
    with _collector_paused():
        from engine.analytic import build_design, evaluate_design
        from engine.scenario import load_scenario

        ctx = _ctx()
        scenario = load_scenario(read_scenario(args.scenario), ctx.book)
        design = build_design(scenario, ctx)
    if args.sweep_rate:
        from engine.analytic.space import sweep_rates
        from engine.executors import executor_from_args

        lo, hi, n = args.sweep_rate
        curve = sweep_rates(design, lo, hi, n, executor_from_args(args))  # ExecutorError: main() says it in one line
        points = [{"rate_rps": p.rate_rps, "stable": p.stable,
                   "latency_ms": {k: v * 1e3 for k, v in p.latency_s.items() if k != "sla"},
                   "unstable_reason": p.unstable_reason} for p in curve]
        if args.json:
            print(json.dumps(_clean(points), indent=1))
        else:
            print(f"{'rate (req/s)':>14} {'mean ms':>9} {'p50 ms':>9} {'p95 ms':>9} {'p99 ms':>9}")
            for p in points:
                lat = p["latency_ms"]
                print(f"{p['rate_rps']:>14,.0f} " + " ".join(f"{lat[k]:>9.3f}" for k in ("mean", "p50", "p95", "p99"))
                      + ("" if p["stable"] else "  unstable"))
        return 0
    e = evaluate_design(design, ctx)
    out = _clean(e.model_dump())
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    lat = e.latency_ms
    print(f"{scenario.name}: {scenario.model} on {scenario.accelerator_label()} at {e.rate_rps:,.0f} req/s")
    print(f"  capacity {e.capacity_rps:,.0f} req/s, bottleneck {e.bottleneck}; "
          + ("stable" if e.stable else f"UNSTABLE: {e.unstable_reason}"))
    if e.stable:
        print("  latency ms: " + ", ".join(f"{name} {value:.3f}" for name, value in lat.model_dump().items()))
    print(f"  SLA p{e.sla.percentile:g} <= {e.sla.latency_ms:g} ms: {'met' if e.sla.met else 'not met'}; "
          f"SLA-bounded throughput {e.sla_bounded_rps:,.0f} req/s")
    print("  utilisation (busy fraction): " + ", ".join(f"{k} {v:.2f}" for k, v in e.utilization.items()))
    print(f"  cost over {e.cost.years:g} years: TCO ${e.cost.tco_usd:,.0f}, "
          + (f"no queries/$ ({e.cost_no_value_reason})" if e.cost.queries_per_usd is None else
             f"{e.cost.queries_per_usd:,.0f} queries/$, {e.cost.queries_per_joule:.2f} queries/J")
          + f"; priced at {e.cost_basis}")
    return 0


def register(subparsers) -> None:
    sc = subparsers.add_parser("scenario", help="the scenario contract")
    ssub = sc.add_subparsers(dest="action", required=True, parser_class=type(subparsers._parser_class()))
    sch = ssub.add_parser("schema", help="print the scenario's JSON schema")
    sch.set_defaults(func=cmd_schema)
    ev = subparsers.add_parser("evaluate", help="analytic capacity, latency, SLA-bounded throughput and cost")
    ev.add_argument("scenario", help="scenario JSON file (or - for stdin)")
    ev.add_argument("--sweep-rate", type=_sweep_spec, metavar="LO:HI:N", help="latency over N rates from LO to HI")
    ev.add_argument("--json", action="store_true")
    add_executor_arguments(ev)
    ev.set_defaults(func=cmd_evaluate)
