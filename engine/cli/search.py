"""`python -m engine search SPACE.json [--json] [--workers N] [--no-confirm] [--executor ray]`: best designs and
Pareto fronts."""

from __future__ import annotations

import argparse
import json
import math
import os
from typing import Optional

TEXT_ROWS = 25  # longer fronts are cut in the text report; --json lists every member
#: the most sweep processes: the sweep is CPU-bound, so more processes than cores only add forks and memory
MAX_WORKERS = os.cpu_count() or 1
#: the most designs the simulator checks: each check is a full simulation of --requests requests
MAX_CONFIRM = 50


def _read(path: str):
    """The JSON value of the search-space file `path` ('-': stdin), read by engine.io.userfiles (one-line errors)."""
    from engine.io.userfiles import parse_json, read_text, shown

    return parse_json(read_text(path, "search space"), f"search space {shown(path)}")


def _num(x: Optional[float], fmt: str = ",.0f") -> str:
    if x is None:
        return "-"  # no value on the cost basis (meets the SLA at no load)
    return format(x, fmt) if math.isfinite(x) else "unstable"


def _describe(title: str, row) -> list[str]:
    return [f"{title}: #{row.index} {row.label}",
            f"    {_num(row.sla_bounded_rps)} req/s within the SLA; p99 {_num(row.p99_ms, '.2f')} ms at the offered "
            f"rate; TCO ${_num(row.tco_usd)}; {_num(row.queries_per_usd)} queries/$; bottleneck {row.bottleneck}"]


def report(result) -> str:
    """The text report: best designs, each front as a table, the simulator check, notes."""
    r = result
    lines = [f"search {r.name!r}: {r.size:,} designs of {r.model} on {r.gpu} at {r.rate_rps:,.0f} req/s, "
             f"SLA p{r.sla_percentile:g} <= {r.sla_ms:g} ms",
             f"analytic sweep: {r.analytic_s:.2f} s on {r.workers} process(es) ({r.designs_per_s:,.0f} designs/s); "
             f"total {r.wall_s:.2f} s"]
    if r.best_throughput is None:
        lines.append(f"best: no design meets the SLA at {r.rate_rps:,.0f} req/s")
    else:
        lines += _describe("best SLA-bounded throughput", r.designs[r.best_throughput])
        lines += _describe("best queries per dollar", r.designs[r.best_value])
        if r.ideal_reference is not None:  # a reference line, not a candidate
            lines += _describe("reference, not a candidate: the best with no preprocessing (ideal)", r.ideal_reference)
    for f in r.fronts:
        lines += ["", f"Pareto front {f.name} ({f.objectives[0]} {f.directions[0]}, {f.objectives[1]} "
                      f"{f.directions[1]}; among {f.among}): {len(f.indices)} design(s)",
                  f"{'#':>7} {'TCO $':>10} {'p99 ms':>9} {'SLA req/s':>10} {'queries/$':>12}  design"]
        for i in f.indices[:TEXT_ROWS]:
            d = r.designs[i]
            lines.append(f"{i:>7} {_num(d.tco_usd):>10} {_num(d.p99_ms, '.2f'):>9} {_num(d.sla_bounded_rps):>10} "
                         f"{_num(d.queries_per_usd):>12}  {d.label}")
        if len(f.indices) > TEXT_ROWS:
            lines.append(f"  ... {len(f.indices) - TEXT_ROWS} more (--json lists all)")
    checked = [c for c in r.candidates if c.confirmation is not None]
    if checked:
        c0 = checked[0].confirmation
        lines += ["", f"simulator check at {r.rate_rps:,.0f} req/s ({c0.n_requests:,} requests, seed {c0.seed}):",
                  f"{'#':>7} {'analytic p99':>13} {'simulated p99':>20} {'error':>7} {'SLA met':>8}  design"]
        for c in checked:
            k = c.confirmation
            if k.sim_p99_ms is None:
                lines.append(f"{k.index:>7} {k.analytic_p99_ms:>10.2f} ms  {k.note}")
                continue
            ci = f" +-{k.sim_p99_ci_ms:.2f}" if k.sim_p99_ci_ms is not None else ""
            err = f"{k.relative_error:+.0%}" if k.relative_error is not None else "-"
            lines.append(f"{k.index:>7} {k.analytic_p99_ms:>10.2f} ms {k.sim_p99_ms:>11.2f}{ci:>6} ms {err:>7} "
                         f"{'yes' if k.sim_meets_sla else 'no':>8}  {c.row.label}"
                         + (f"  ({k.note})" if k.note else ""))
    if r.notes:
        lines += ["", "notes:"] + [f"  - {n}" for n in r.notes]
    return "\n".join(lines)


def cmd_search(args: argparse.Namespace) -> int:
    from engine.analytic import Context
    from engine.cli.simulate import Progress
    from engine.executors import executor_from_args
    from engine.search import search
    from engine.store import Store

    space = _read(args.space)
    bar = Progress("search", not args.json)
    result = search(space, Context.from_store(Store()), workers=args.workers,
                    progress=lambda frac, _msg: bar(frac), confirm_top=0 if args.no_confirm else args.confirm,
                    sim_requests=args.requests, seed=args.seed, executor=executor_from_args(args, args.workers))
    if args.json:
        exclude = None if args.all_designs else {"designs"}
        print(json.dumps(json.loads(result.model_dump_json(exclude=exclude)), indent=1))  # inf -> null
    else:
        print(report(result))
    return 0


def register(subparsers) -> None:
    from engine.cli.evaluate import add_executor_arguments
    from engine.cli.vocab import MAX_REQUESTS
    from engine.io.userfiles import seed_number, whole_number

    p = subparsers.add_parser("search", help="sweep a design space: best designs under the SLA and Pareto fronts")
    p.add_argument("space", help="search space JSON (kneepoint.search/1) file, or - for stdin")
    p.add_argument("--json", action="store_true", help="print JSON (the result without the all-designs table)")
    p.add_argument("--all-designs", action="store_true", help="with --json: include every evaluated design")
    p.add_argument("--workers", type=whole_number(1, MAX_WORKERS),
                   help=f"processes for the analytic sweep, at most the {MAX_WORKERS} cores (default: all)")
    p.add_argument("--no-confirm", action="store_true", help="skip the simulator check of the top designs")
    p.add_argument("--confirm", type=whole_number(1, MAX_CONFIRM), default=3, metavar="N",
                   help="designs the simulator checks (3)")
    p.add_argument("--requests", type=whole_number(1, MAX_REQUESTS), default=100_000,
                   help="simulated requests per checked design")
    p.add_argument("--seed", type=seed_number, default=0, help="simulator seed")
    add_executor_arguments(p)
    p.set_defaults(func=cmd_search)
