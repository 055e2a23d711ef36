"""`python -m engine reproduce [--paper P] [--json] [--simulate]`: the seed papers' headline results beside the
engine's (engine.reproduce). The table's last line is the summary: entries, how many within 25 %, how many out of
sample, how many not modelled. engine.cli.main calls register(subparsers).
"""

from __future__ import annotations

import argparse
import json


def _fmt(x) -> str:
    if x is None:
        return "-"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"


def _table(rows) -> list[str]:
    head = ("id", "where", "unit", "paper", "kneepoint", "error", "sample", "mechanism / reason")
    body = [(r.id, r.where, r.unit, _fmt(r.paper_value), _fmt(r.kneepoint),
             "-" if r.rel_error is None else f"{r.rel_error:+.0%}" + (" ok" if r.within else ""),
             r.sample if r.status in ("ok", "not modelled") else f"{r.sample} ({r.status})", r.mechanism)
            for r in rows]
    widths = [max(len(str(x[i])) for x in [head, *body]) for i in range(len(head) - 1)]
    return ["  ".join(str(c).ljust(w) for c, w in zip(line, widths)) + "  " + line[-1] for line in [head, *body]]


def cmd_reproduce(args: argparse.Namespace) -> int:
    from engine.analytic import Context
    from engine.reproduce.runner import run, summarise
    from engine.store import Store

    rows = run(Context.from_store(Store()), paper=args.paper, simulate=args.simulate)
    summary = summarise(rows)
    if args.json:
        print(json.dumps({"rows": [r.model_dump() for r in rows], "summary": summary.model_dump(),
                          "summary_line": summary.line()}, indent=2))
    else:
        print("\n".join(_table(rows) + ["", summary.line()]))
    return 0


def register(subparsers) -> None:
    from engine.cli.vocab import REPRODUCE_PAPERS

    p = subparsers.add_parser("reproduce", help="the seed papers' headline results beside the engine's")
    p.add_argument("--paper", choices=REPRODUCE_PAPERS, help="one paper (default: all five)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--simulate", action="store_true",
                   help="also run the entries the paper measured as simulated tails (minutes)")
    p.set_defaults(func=cmd_reproduce)
