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


def _book():
    from engine.profiles import ProfileBook

    return ProfileBook.from_store(_store())


def cmd_profiles_predict(args: argparse.Namespace) -> int:
    p = _book().predict(args.model, args.gpu, args.partition, args.batch, input_len=args.input_len,
                        precision=args.precision, framework=args.framework, cross_gpu=args.cross_gpu)
    out = {
        "model": p.model, "gpu": p.sku, "partition": p.partition, "precision": p.precision,
        "framework": p.framework, "batch": p.batch, "input_len": p.input_len,
        "mean_ms": p.mean_s * 1e3, **{f"p{q}_ms": v * 1e3 for q, v in p.tail_s.items()},
        "tail_source": p.tail_source, "throughput_items_per_s": p.throughput, "utilization": p.utilization,
        "provenance": p.provenance, "reference": p.reference, "sm_ratio": p.sm_ratio,
        "fit_rms_rel_error": p.fit_rms_rel_error, "cross_gpu": p.cross_gpu,
        "memory_max_batch": p.memory_max_batch, "sources": list(p.sources),
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    length = f", input length {p.input_len:g}" if p.input_len is not None else ""
    print(f"{p.model} on {p.sku} {p.partition} ({p.precision}, {p.framework}), batch {p.batch}{length}")
    print(f"  mean {out['mean_ms']:.3f} ms   p50 {out['p50_ms']:.3f}   p95 {out['p95_ms']:.3f}   "
          f"p99 {out['p99_ms']:.3f} ms  (tails: {p.tail_source})")
    print(f"  throughput {p.throughput:,.1f} items/s   utilization {p.utilization:.2f}")
    print(f"  provenance: {p.provenance}" + (f" from {p.reference} (SM ratio {p.sm_ratio:.3f}, fit RMS "
                                             f"relative error {p.fit_rms_rel_error:.1%})" if p.reference else "")
          + (" [cross-GPU]" if p.cross_gpu else ""))
    if p.memory_max_batch is not None:
        print(f"  memory limit: batch <= {p.memory_max_batch}")
    return 0


def cmd_profiles_knee(args: argparse.Namespace) -> int:
    book = _book()
    k = book.knee(args.model, args.gpu, args.partition, args.rule, threshold=args.threshold,
                  percentile=args.percentile, input_len=args.input_len, precision=args.precision,
                  framework=args.framework, cross_gpu=args.cross_gpu)
    out = {"model": args.model, "gpu": args.gpu, "partition": args.partition, "rule": k.rule.value,
           "batch_knee": k.batch, "time_knee_ms": k.time_s * 1e3, "percentile": k.percentile,
           "utilization": k.utilization, "threshold": k.threshold, "provenance": k.provenance}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        rule = f"utilization >= {k.threshold:g}" if k.threshold is not None else "Kneedle on tail latency vs throughput"
        print(f"Batch_knee {k.batch} (rule: {rule}); Time_knee {k.time_s * 1e3:.3f} ms (p{k.percentile}); "
              f"utilization {k.utilization:.2f}; {k.provenance}")
    return 0


def _profile_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True)
    p.add_argument("--gpu", required=True)
    p.add_argument("--partition", default="full", help="'full', a MIG profile (1g.5gb) or mps:N")
    p.add_argument("--input-len", type=float, help="audio seconds or tokens, for variable-length models")
    p.add_argument("--precision")
    p.add_argument("--framework")
    p.add_argument("--cross-gpu", action="store_true", help="allow deriving from another GPU's curve")
    p.add_argument("--json", action="store_true")


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
    pp = psub.add_parser("predict", help="latency, throughput and utilisation of one batch")
    _profile_args(pp)
    pp.add_argument("--batch", type=int, required=True)
    pp.set_defaults(func=cmd_profiles_predict)
    pk = psub.add_parser("knee", help="Batch_knee and Time_knee of a partition")
    _profile_args(pk)
    pk.add_argument("--rule", default="utilization", choices=["utilization", "curve"])
    pk.add_argument("--threshold", type=float, default=0.8, help="utilisation threshold (utilization rule)")
    pk.add_argument("--percentile", type=int, default=95, help="tail percentile for Time_knee")
    pk.set_defaults(func=cmd_profiles_knee)
    from engine.cli_io import register_clear_user

    register_clear_user(psub)  # profiles clear-user [--table T] [--yes]

    from engine import cli_eval, cli_io, cli_profile, cli_sim

    cli_io.register(sub)
    cli_profile.register(sub)
    cli_eval.register(sub)
    cli_sim.register(sub)
    from engine import cli_tenancy

    cli_tenancy.register(sub)
    from engine import cli_partition

    cli_partition.register(sub)
    from engine import cli_report

    cli_report.register(sub)
    from engine import cli_scenarios

    cli_scenarios.register(sub)
    from engine import cli_search

    cli_search.register(sub)
    from engine import cli_deploy

    cli_deploy.register(sub)  # size, export-design
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    from engine.importers import ImportFailed
    from engine.profilers import ProfilerError
    from engine.profiles import ProfileError
    from engine.scenario import ScenarioError
    from engine.sim.errors import SimError
    from engine.seedio import SeedError
    from engine.store import StoreError

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (LayoutError, UnknownNameError, SeedError, StoreError, ProfileError, ProfilerError, ImportFailed,
            ScenarioError, SimError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `| head` closed the pipe
        return 0
