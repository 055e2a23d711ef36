"""`python -m engine simulate SCENARIO.json [--requests N] [--seed S] [--json] [--sweep-rate LO:HI:N]`."""

from __future__ import annotations

import argparse
import json
import sys
import time


def _ctx():
    from engine.analytic import Context
    from engine.store import Store

    return Context.from_store(Store())


class Progress:
    """A one-line progress bar on stderr (only when stderr is a terminal)."""

    def __init__(self, label: str, enabled: bool):
        self.label, self.enabled, self.t0, self.last = label, enabled and sys.stderr.isatty(), time.time(), -1

    def __call__(self, frac: float) -> None:
        if not self.enabled:
            return
        pct = int(frac * 100)
        if pct == self.last:
            return
        self.last = pct
        bar = "#" * (pct // 4) + "." * (25 - pct // 4)
        sys.stderr.write(f"\r{self.label} [{bar}] {pct:3d}% {time.time() - self.t0:5.1f} s")
        if frac >= 1:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _workload(args, scenario):
    """The arrival process to simulate: the scenario's own (None) unless --workload or --trace change it;
    what they give is laid over the scenario's arrival spec, so e.g. `--workload diurnal` keeps its rate."""
    from engine.sim import SimError, SimWorkload

    spec: dict = {}
    if args.workload:
        text = args.workload.strip()
        if text.startswith("{"):
            try:
                spec = json.loads(text)
            except json.JSONDecodeError as e:
                raise SimError(f"--workload: not valid JSON: {e.msg}") from None
            if not isinstance(spec, dict):
                raise SimError("--workload: a JSON object or a kind name")
        else:
            spec = {"kind": text}
    if args.trace:
        from engine.io.traces import read_trace_file

        spec = {**spec, "kind": "trace", "timestamps": read_trace_file(args.trace)}
    if not spec:
        return None
    own = scenario.workload.arrival.model_dump(mode="json")
    return _validated(SimWorkload, {**own, "rate_rps": None, **spec}, "--workload")


def _validated(model, data, flag):
    from pydantic import ValidationError

    from engine.errors import error_message, error_path, excerpt
    from engine.sim import SimError

    try:
        return model.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        where = error_path(err)
        raise SimError(f"{flag}: {where + ': ' if where else ''}{error_message(err)}"
                       + (f" (got {excerpt(err['input'])})" if "input" in err and not isinstance(err["input"], dict)
                          and "got " not in err.get("msg", "") else "")) from None


def _service(args):
    if not args.service:
        return None
    from engine.sim import ServiceSpec, SimError

    try:
        data = json.loads(args.service)
    except json.JSONDecodeError as e:
        raise SimError(f"--service: not valid JSON: {e.msg}") from None
    return _validated(ServiceSpec, data, "--service")


def _fmt(x, ci=None, digits=3) -> str:
    if x is None:
        return "n/a"
    return f"{x:.{digits}f}" + (f" ±{ci:.{digits}f}" if ci is not None else "")


def _summary(r: dict) -> dict:
    keys = ("rate_rps", "stable", "unstable_reason", "queue_growth_rps", "throughput_rps", "latency_ms", "ci",
            "sla_violation_rate", "mean_in_system", "utilization", "n_requests", "wall_s")
    return {k: r[k] for k in keys}


def cmd_simulate(args: argparse.Namespace) -> int:
    from engine.errors import KneepointError

    try:
        return _simulate(args)
    except KneepointError as e:  # SimError, TraceError, ScenarioError: one line naming the problem
        print(f"error: {e}", file=sys.stderr)
        return 2


def _simulate(args: argparse.Namespace) -> int:
    from engine.analytic import build_design
    from engine.cli.evaluate import read_scenario
    from engine.scenario import load_scenario
    from engine.sim import SimError
    from engine.sim.run import simulate_design
    from engine.sim.sweep import adaptive, rate_grid, sweep

    if args.requests is not None and args.requests < 1:
        raise SimError(f"--requests: must be at least 1, got {args.requests}")
    ctx = _ctx()
    scenario = load_scenario(read_scenario(args.scenario), ctx.book)
    design = build_design(scenario, ctx)
    workload, service = _workload(args, scenario), _service(args)
    n = args.requests if args.requests is not None else (None if args.duration else 100_000)
    kw = dict(duration_s=args.duration, seed=args.seed, ctx=ctx, service=service, workload=workload,
              warmup=args.warmup)
    if args.sweep_rate:
        lo, hi, k = args.sweep_rate
        from engine.executors import executor_from_args

        bar = Progress(f"simulating {k} rates", not args.no_progress)
        results = sweep(design, rate_grid(lo, hi, k), n, progress=bar, executor=executor_from_args(args), **kw)
        if args.json:
            print(json.dumps([_summary(result.to_dict()) for result in results], indent=1))
            return 0
        print(f"{'rate (req/s)':>14} {'thru (req/s)':>13} {'mean ms':>9} {'p50 ms':>9} {'p99 ms':>9} {'±p99':>7} "
              f"{'SLA viol':>9} {'L':>8}")
        for result in results:
            latency = result.latency_ms
            print(f"{result.rate_rps:>14,.0f} {result.throughput_rps:>13,.0f} {latency.mean:>9.3f} "
                  f"{latency.p50:>9.3f} {latency.p99:>9.3f} {(result.ci.p99 or 0):>7.3f} "
                  f"{result.sla_violation_rate:>9.2%} {result.mean_in_system:>8.1f}"
                  + ("" if result.stable else "  UNSTABLE"))
        return 0
    big = (n or 0) >= 200_000 or bool(args.duration)
    bar = Progress("simulating", big and not args.no_progress)
    if args.target_ci:
        res, _ = adaptive(design, args.target_ci, n_start=n or 20_000, rate=args.rate, progress=bar, **kw)
    else:
        res = simulate_design(design, n, rate=args.rate, progress=bar, **kw)
    out = res.to_dict()
    if args.json:
        from engine.sim.stats import wait_percentiles

        # the time spent waiting (not served), beside the sojourn percentiles in latency_ms
        out["wait_ms"] = wait_percentiles(res.records.columns, res.records.measured_from, design.sla_percentile)
        print(json.dumps(out, indent=1))
        return 0
    _print(scenario, res)
    return 0


def _print(scenario, result) -> None:
    """A SimResult in words."""
    rate = f" at {result.rate_rps:,.0f} req/s" if result.rate_rps else ""
    print(f"{result.name}: {scenario.model} on {scenario.accelerator_label()}{rate} "
          f"({result.workload}, {result.n_requests:,} requests, {result.warmup_requests:,} warm-up, "
          f"seed {result.seed}, {result.wall_s:.2f} s)")
    print(f"  throughput {result.throughput_rps:,.1f} req/s (capacity {result.capacity_rps:,.0f}); "
          + ("stable" if result.stable else f"UNSTABLE: {result.unstable_reason}"))
    latency = result.latency_ms.model_dump().items()
    print("  latency ms (95% CI, batch means): "
          + ", ".join(f"{field} {_fmt(value, getattr(result.ci, field))}" for field, value in latency))
    sla = result.sla
    print(f"  SLA p{sla.percentile:g} <= {sla.latency_ms:g} ms: {'met' if sla.met else 'not met'} "
          f"(p{sla.percentile:g} {_fmt(sla.latency_at_rate_ms, result.ci.sla)} ms); "
          f"violation rate {result.sla_violation_rate:.2%}")
    little = result.little
    print(f"  mean in system {result.mean_in_system:.2f} "
          f"(Little: lambda W = {little['lambda_rps'] * little['W_s']:.2f})")
    print("  utilisation: " + ", ".join(f"{name} {value:.2f}" for name, value in result.utilization.items()))
    print("  breakdown ms: " + ", ".join(f"{name} {value:.3f}" for name, value in result.breakdown_ms.items()))
    hist = result.batch_size_histogram
    print("  batch sizes: " + ", ".join(f"{size}: {count}" for size, count in list(hist.items())[:16])
          + (" ..." if len(hist) > 16 else ""))
    if result.mlperf:
        print("  MLPerf: " + ", ".join(f"{name} {value}" for name, value in result.mlperf.items()))


def register(subparsers) -> None:
    from engine.cli.evaluate import _sweep_spec, add_executor_arguments
    from engine.cli.vocab import MAX_REQUESTS, WORKLOAD_KINDS
    from engine.io.userfiles import finite_float, seed_number, whole_number

    sim = subparsers.add_parser("simulate", help="discrete-event simulation of a scenario (simpy)")
    sim.add_argument("scenario", help="scenario JSON file (or - for stdin)")
    sim.add_argument("--requests", type=whole_number(1, MAX_REQUESTS), help="requests to simulate (default 100000)")
    sim.add_argument("--duration", type=finite_float, help="seconds of arrivals, instead of --requests")
    sim.add_argument("--seed", type=seed_number, default=0)
    sim.add_argument("--rate", type=finite_float, help="arrival rate in req/s (default: the scenario's)")
    sim.add_argument("--workload", metavar="KIND|JSON",
                     help=f"arrival process: {', '.join(WORKLOAD_KINDS)}, or a JSON object")
    sim.add_argument("--trace", metavar="CSV", help="your local CSV of arrival timestamps (workload 'trace'; a "
                     "regular file, one column or a header naming timestamp/time/t/arrival; unit from --workload "
                     "'{\"trace_unit\": \"ms\"}', default s); played at its own pace unless --rate is given")
    sim.add_argument("--service", metavar="JSON",
                     help='synthetic GPU service, e.g. {"kind": "exponential", "mean_ms": 1, "host": "none"}')
    sim.add_argument("--warmup", type=finite_float, default=0.1, help="fraction of requests discarded (default 0.1)")
    sim.add_argument("--target-ci", type=finite_float, metavar="FRAC",
                     help="adaptive length: double the run until the p99 half-width < FRAC x p99")
    sim.add_argument("--sweep-rate", type=_sweep_spec, metavar="LO:HI:N", help="a curve over N rates (in parallel)")
    sim.add_argument("--json", action="store_true")
    sim.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_executor_arguments(sim)
    sim.set_defaults(func=cmd_simulate)
