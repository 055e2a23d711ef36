"""Command line: `python -m engine ...`. Errors are one line on stderr and exit 2."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Optional, Sequence

from engine.catalog import LayoutError, UnknownNameError, enumerate_layouts, validate_layout


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage too)
        self.exit(2, f"{self.prog}: error: {message}\n")


def _store():
    from engine.store import Store

    return Store()


def cmd_layouts(args: argparse.Namespace) -> int:
    gpu = _store().catalog().gpu(args.gpu)
    if args.validate is not None:
        layout = validate_layout(gpu, args.validate)
        if args.json:
            print(json.dumps(layout.model_dump(mode="json"), indent=2))
        else:
            print(" ".join(layout.labels()))
        return 0
    profiles = args.profiles.split(",") if args.profiles else None
    layouts = enumerate_layouts(gpu, profiles)
    if args.json:
        print(json.dumps([l.labels() for l in layouts], indent=1))
    else:
        for l in layouts:
            print(" ".join(l.labels()))
        print(f"# {len(layouts)} maximal layouts of {gpu.sku}", file=sys.stderr)
    return 0


def cmd_profiles_list(args: argparse.Namespace) -> int:
    store = _store()
    for value, column, table in ((args.model, "name", "models"), (args.gpu, "sku", "gpus")):
        if value is not None:
            valid = store.distinct(table, column)
            if value not in valid:
                raise UnknownNameError(f"{value!r} is not a {column} in the store; valid: {', '.join(valid)}")
    df = store.latency_points(model=[args.model] if args.model else None, sku=[args.gpu] if args.gpu else None)
    if args.json:
        print(df.to_json(orient="records", indent=1))
    else:
        cols = ["model", "sku", "partition", "precision", "framework", "batch", "input_len", "mean_ms",
                "p99_ms", "throughput", "kind"]
        print(df[cols].to_string(index=False) if len(df) else "no latency points match")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m engine", description="Kneepoint engine: hardware catalogue and profile store.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    lay = sub.add_parser("layouts", help="maximal MIG layouts of a GPU, or validate one layout")
    lay.add_argument("gpu", help="GPU SKU, e.g. A100-SXM4-40GB")
    lay.add_argument("--profiles", help="comma-separated profiles to restrict the enumeration to")
    lay.add_argument("--validate", nargs="+", metavar="PROFILE",
                     help="validate a layout: profiles, optionally with a start slot (3g.20gb@4)")
    lay.add_argument("--json", action="store_true", help="print JSON")
    lay.set_defaults(func=cmd_layouts)

    prof = sub.add_parser("profiles", help="latency profiles in the store")
    psub = prof.add_subparsers(dest="action", required=True, parser_class=_Parser)
    pl = psub.add_parser("list", help="list latency points")
    pl.add_argument("--model")
    pl.add_argument("--gpu")
    pl.add_argument("--json", action="store_true")
    pl.set_defaults(func=cmd_profiles_list)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    from engine.seedio import SeedError
    from engine.store import StoreError

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (LayoutError, UnknownNameError, SeedError, StoreError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `| head` closed the pipe
        return 0
