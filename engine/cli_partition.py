"""`python -m engine partition ...`: PARIS instance counts, MIG packing and partitioning policies.

    partition paris INPUT.json [--json]
        INPUT: {"dist": {batch: p}, "throughput": {partition: {batch: queries/s}},
                "throughput_unit": "queries/s" | "items/s" (optional), "utilization": {...} or
                "knees": {partition: batch} (optional), "gpcs": {partition: GPCs}, "total_gpcs": N}
    partition pack GPU [--gpus N] P1 P2 ... [--json]      (P: 3g.40gb, or 3g.40gbx4 for four)
    partition plan SCENARIO.json [--policy paris|gpu-max|gpu1|...|random] [--gpus N]
                   [--max-gpcs N] [--seed S] [--json]

engine.cli calls register(subparsers). Errors are one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _read_json(path: str, what: str):
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ValueError(f"cannot read {what} {path}: {e.strerror or e}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None


def _fail(e: BaseException) -> int:
    print(f"error: {e}", file=sys.stderr)
    return 2


def _fmt_range(r) -> str:
    return "-" if r is None else f"{r[0]}..{r[1]}"


def cmd_paris(args: argparse.Namespace) -> int:
    from engine.partition.paris import ParisError, paris

    try:
        res = paris(_read_json(args.input, "PARIS input"))
    except (ParisError, ValueError) as e:
        return _fail(e)
    if args.json:
        print(json.dumps(res.model_dump(mode="json"), indent=2))
        return 0
    rows = [f"{'partition':<12} {'knee':>5} {'batches':>9} {'ratio R_k':>11} {'instances':>10} {'rounded':>8}"]
    for k in res.order:
        rows.append(f"{k:<12} {res.knees[k]:>5} {_fmt_range(res.ranges[k]):>9} {res.ratio[k]:>11.5g} "
                    f"{res.instances[k]:>10.3f} {res.instances_rounded[k]:>8}")
    print("\n".join(rows))
    print(f"GPCs: {res.gpcs_used} of {res.total_gpcs} used (knees from {res.knee_source}; C = {res.scale:.4g})")
    for note in res.notes:
        print(f"note: {note}")
    return 0


def cmd_pack(args: argparse.Namespace) -> int:
    from engine.catalog import UnknownNameError
    from engine.partition.pack import PackingError, multiset_of, pack, parse_items
    from engine.store import Store

    try:
        gpu = Store().catalog().gpu(args.gpu)
        layouts = pack(gpu, parse_items(args.profiles), args.gpus)
    except (PackingError, UnknownNameError) as e:
        return _fail(e)
    if args.json:
        print(json.dumps({"gpu": gpu.sku, "gpus": len(layouts), "layouts": [lay.labels() for lay in layouts],
                          "instances": multiset_of(layouts)}, indent=2))
        return 0
    for g, lay in enumerate(layouts):
        print(f"GPU{g}: {' '.join(lay.labels()) or '(empty)'}")
    used = sum(lay.compute_slices_used for lay in layouts)
    print(f"# {len(layouts)} x {gpu.sku}, {used} of {len(layouts) * gpu.compute_slices} GPCs used", file=sys.stderr)
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    from engine.analytic import Context
    from engine.catalog import UnknownNameError
    from engine.partition.pack import PackingError
    from engine.partition.paris import ParisError
    from engine.partition.plan import plan
    from engine.profiles import ProfileError
    from engine.scenario import ScenarioError
    from engine.store import Store

    try:
        data = _read_json(args.scenario, "scenario")
        ctx = Context.from_store(Store())
        p = plan(args.policy, data, ctx, gpus=args.gpus, max_gpcs=args.max_gpcs, seed=args.seed)
    except (PackingError, ParisError, ProfileError, ScenarioError, UnknownNameError, ValueError) as e:
        return _fail(e)
    if args.json:
        print(json.dumps(p.model_dump(mode="json"), indent=2))
        return 0
    print(f"{p.policy.value}: {p.gpus_used} of {p.gpus} {p.sku}, {p.gpcs_used} of {p.max_gpcs} GPCs; "
          + ", ".join(f"{n} x {k}" for k, n in p.instances.items()))
    for g, lay in enumerate(p.layouts):
        print(f"GPU{g}: {' '.join(lay)}")
    for k, v in p.bounded_rps.items():
        print(f"  {k}: SLA-bounded {v:,.0f} req/s (analytic)")
    for note in p.notes:
        print(f"note: {note}")
    return 0


def _count(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 1")
    return v


def register(subparsers) -> None:
    from engine.partition.plan import PartitionPolicy

    part = subparsers.add_parser("partition", help="PARIS, MIG packing and partitioning policies")
    sub = part.add_subparsers(dest="action", required=True, parser_class=type(part))

    pr = sub.add_parser("paris", help="PARIS Algorithm 1: instances per partition size from a JSON input")
    pr.add_argument("input", help="JSON file (or - for stdin): dist, throughput, utilization|knees, gpcs, total_gpcs")
    pr.add_argument("--json", action="store_true")
    pr.set_defaults(func=cmd_paris)

    pk = sub.add_parser("pack", help="pack MIG instances onto GPUs as valid placed layouts")
    pk.add_argument("gpu", help="GPU SKU, e.g. A100-SXM4-80GB")
    pk.add_argument("profiles", nargs="+", metavar="PROFILE", help="MIG profiles; 3g.40gbx4 means four")
    pk.add_argument("--gpus", type=_count, help="number of GPUs (default: as few as possible)")
    pk.add_argument("--json", action="store_true")
    pk.set_defaults(func=cmd_pack)

    pl = sub.add_parser("plan", help="partition a scenario's GPUs by a policy (PARIS, GPU(n), GPU(max), random)")
    pl.add_argument("scenario", help="scenario JSON file (or - for stdin)")
    pl.add_argument("--policy", default="paris", choices=[p.value for p in PartitionPolicy])
    pl.add_argument("--gpus", type=_count, help="GPUs to partition (default: the scenario's gpu.count)")
    pl.add_argument("--max-gpcs", type=_count, help="GPC budget (default: every GPC of the GPUs)")
    pl.add_argument("--seed", type=int, default=0, help="seed of the random policy")
    pl.add_argument("--json", action="store_true")
    pl.set_defaults(func=cmd_plan)
