"""`python -m engine partition ...`: PARIS instance counts, MIG packing and partitioning policies.

    partition paris INPUT.json [--json]
        INPUT: {"dist": {batch: p}, "throughput": {partition: {batch: queries/s}},
                "throughput_unit": "queries/s" | "items/s" (optional), "utilization": {...} or
                "knees": {partition: batch} (optional), "gpcs": {partition: GPCs}, "total_gpcs": N}
    partition pack GPU [--gpus N] P1 P2 ... [--json]      (P: 3g.40gb, or 3g.40gbx4 for four)
    partition plan SCENARIO.json [--policy paris|gpu-max|gpu1|...|random] [--gpus N]
                   [--max-gpcs N] [--seed S] [--json]

engine.cli.main calls register(subparsers); its main() prints an error (a KneepointError) as one line and exits 2.
"""

from __future__ import annotations

import argparse
import json
import sys


def _read_json(path: str, what: str):
    """The JSON value of the file `path` ('-': stdin), read by engine.io.userfiles (one-line errors)."""
    from engine.io.userfiles import parse_json, read_text, shown

    return parse_json(read_text(path, what), f"{what} {shown(path)}")


def _fmt_range(r) -> str:
    return "-" if r is None else f"{r[0]}..{r[1]}"


def cmd_paris(args: argparse.Namespace) -> int:
    from engine.partition.paris import paris

    res = paris(_read_json(args.input, "PARIS input"))
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
    from engine.partition.pack import multiset_of, pack, parse_items
    from engine.store import Store

    gpu = Store().catalog().gpu(args.gpu)
    layouts = pack(gpu, parse_items(args.profiles), args.gpus)
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
    from engine.partition.plan import plan
    from engine.store import Store

    data = _read_json(args.scenario, "scenario")
    ctx = Context.from_store(Store())
    p = plan(args.policy, data, ctx, gpus=args.gpus, max_gpcs=args.max_gpcs, seed=args.seed)
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


def register(subparsers) -> None:
    from engine.cli.vocab import PARTITION_MAX_GPUS, PARTITION_POLICIES
    from engine.io.userfiles import seed_number, whole_number

    gpu_count, positive = whole_number(1, PARTITION_MAX_GPUS), whole_number(1)

    part = subparsers.add_parser("partition", help="PARIS, MIG packing and partitioning policies")
    sub = part.add_subparsers(dest="action", required=True, parser_class=type(part))

    pr = sub.add_parser("paris", help="PARIS Algorithm 1: instances per partition size from a JSON input")
    pr.add_argument("input", help="JSON file (or - for stdin): dist, throughput, utilization|knees, gpcs, total_gpcs")
    pr.add_argument("--json", action="store_true")
    pr.set_defaults(func=cmd_paris)

    pk = sub.add_parser("pack", help="pack MIG instances onto GPUs as valid placed layouts")
    pk.add_argument("gpu", help="GPU SKU, e.g. A100-SXM4-80GB")
    pk.add_argument("profiles", nargs="+", metavar="PROFILE", help="MIG profiles; 3g.40gbx4 means four")
    pk.add_argument("--gpus", type=gpu_count, help="number of GPUs (default: as few as possible)")
    pk.add_argument("--json", action="store_true")
    pk.set_defaults(func=cmd_pack)

    pl = sub.add_parser("plan", help="partition a scenario's GPUs by a policy (PARIS, GPU(n), GPU(max), random)")
    pl.add_argument("scenario", help="scenario JSON file (or - for stdin)")
    pl.add_argument("--policy", default="paris", choices=PARTITION_POLICIES)
    pl.add_argument("--gpus", type=gpu_count, help="GPUs to partition (default: the scenario's gpu.count)")
    pl.add_argument("--max-gpcs", type=positive, help="GPC budget (default: every GPC of the GPUs)")
    pl.add_argument("--seed", type=seed_number, default=0, help="seed of the random policy")
    pl.add_argument("--json", action="store_true")
    pl.set_defaults(func=cmd_plan)
