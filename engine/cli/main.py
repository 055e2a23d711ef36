"""Command line: `python -m engine ...`. Errors are one line on stderr and exit 2, never a traceback
(KNEEPOINT_DEBUG=1 shows the traceback of an internal error)."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import Optional, Sequence

from engine.errors import KneepointError, error_path
from engine.io.userfiles import MAX_CLI_NUMBER, number_in, quoted, whole_number


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage too)
        self.exit(2, f"{self.prog}: error: {message}\n")


def _store():
    from engine.store import Store

    return Store()


def cmd_layouts(args: argparse.Namespace) -> int:
    from engine.catalog import enumerate_layouts, validate_layout

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
    from engine.catalog import UnknownNameError

    store = _store()
    for value, column, table in ((args.model, "name", "models"), (args.gpu, "sku", "gpus")):
        if value is not None:
            valid = store.distinct(table, column)
            if table == "models":  # a model may exist only through a user import, as predict and evaluate accept
                valid = sorted(set(valid) | set(store.latency_points()["model"]))
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
        "expected_rel_error": p.expected_rel_error, "note": p.note,
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
    if p.note:
        print(f"  note: {p.note}")
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
    p.add_argument("--input-len", type=number_in(0, MAX_CLI_NUMBER, low_open=True),
                   help="audio seconds or tokens, for variable-length models")
    p.add_argument("--precision")
    p.add_argument("--framework")
    p.add_argument("--cross-gpu", action="store_true", help="allow deriving from another GPU's curve")
    p.add_argument("--json", action="store_true")


#: every command, in the order `--help` lists them: its one-line help and the engine.cli module whose register()
#: defines it ("main": this module). A command's module is imported only when that command runs; `--help` and an
#: unknown command are answered from this table alone (tests/test_cli_imports.py checks it against the modules).
COMMANDS: dict[str, tuple[str, str]] = {
    "layouts": ("main", "maximal MIG layouts of a GPU, or validate one layout"),
    "profiles": ("main", "latency profiles in the store"),
    "import": ("import_export", "import measurements into the store (all or nothing)"),
    "export": ("import_export", "write tables to CSV or Parquet in the project's own schema"),
    "profile": ("profile", "time preprocessing or a model on this machine (measured rows)"),
    "scenario": ("evaluate", "the scenario contract"),
    "evaluate": ("evaluate", "analytic capacity, latency, SLA-bounded throughput and cost"),
    "simulate": ("simulate", "discrete-event simulation of a scenario (simpy)"),
    "tenancy": ("tenancy", "GPU%% sharing: knee GPU%%, Multi-Model, Param-Share, oversubscription, reconfiguration"),
    "partition": ("partition", "PARIS, MIG packing and partitioning policies"),
    "report": ("report", "an HTML report (and CSV/Parquet, JSON, PNG, PDF) of one or more designs"),
    "scenarios": ("scenarios", "named scenarios saved in the store"),
    "search": ("search", "sweep a design space: best designs under the SLA and Pareto fronts"),
    "size": ("deploy", "least GPUs (and layouts) and host cores for a rate at the SLA"),
    "export-design": ("deploy", "mig-parted, Triton and Kubernetes files of a design"),
    "reproduce": ("reproduce", "the seed papers' headline results beside the engine's"),
}


def _register_main(sub) -> None:
    """layouts and profiles, defined here."""
    lay = sub.add_parser("layouts", help=COMMANDS["layouts"][1])
    lay.add_argument("gpu", help="GPU SKU, e.g. A100-SXM4-40GB")
    lay.add_argument("--profiles", help="comma-separated profiles to restrict the enumeration to")
    lay.add_argument("--validate", nargs="+", metavar="PROFILE",
                     help="validate a layout: profiles, optionally with a start slot (3g.20gb@4)")
    lay.add_argument("--json", action="store_true", help="print JSON")
    lay.set_defaults(func=cmd_layouts)

    prof = sub.add_parser("profiles", help=COMMANDS["profiles"][1])
    psub = prof.add_subparsers(dest="action", required=True, parser_class=_Parser)
    pl = psub.add_parser("list", help="list latency points")
    pl.add_argument("--model")
    pl.add_argument("--gpu")
    pl.add_argument("--json", action="store_true")
    pl.set_defaults(func=cmd_profiles_list)
    pp = psub.add_parser("predict", help="latency, throughput and utilisation of one batch")
    _profile_args(pp)
    pp.add_argument("--batch", type=whole_number(1), required=True)
    pp.set_defaults(func=cmd_profiles_predict)
    pk = psub.add_parser("knee", help="Batch_knee and Time_knee of a partition")
    _profile_args(pk)
    pk.add_argument("--rule", default="utilization", choices=["utilization", "curve"])
    pk.add_argument("--threshold", type=number_in(0, 1, low_open=True), default=0.8,
                    help="utilisation threshold in (0, 1] (utilization rule)")
    pk.add_argument("--percentile", type=whole_number(1, 99), default=95, help="tail percentile for Time_knee (1..99)")
    pk.set_defaults(func=cmd_profiles_knee)
    from engine.cli.estimate import register as register_estimate
    from engine.cli.import_export import register_clear_user

    register_estimate(psub)  # profiles estimate --model M | --onnx FILE --gpu G ...
    register_clear_user(psub)  # profiles clear-user [--table T] [--yes]


def _register(sub, module: str) -> None:
    """Define the commands of one engine.cli module (imported now) on the subparsers `sub`."""
    if module == "main":
        _register_main(sub)
    else:
        importlib.import_module(f"engine.cli.{module}").register(sub)


def _command_of(argv: Sequence[str]) -> Optional[str]:
    """The command `argv` names (its first word that is one), or None: `--help`, nothing, or an unknown word."""
    for word in argv:
        if word in ("-h", "--help"):
            return None  # the top level's help, before any command: the listing
        if word in COMMANDS:
            return word
        if not word.startswith("-"):
            return None  # the first positional word is not a command: argparse says so, listing them all
    return None


def build_parser(command: Optional[str] = None) -> argparse.ArgumentParser:
    """The command-line parser. With `command` (from _command_of), only that command's module is imported and
    only its commands are defined in full, the others listed by name and help; without, every command in full."""
    p = _Parser(prog="python -m engine", description="Kneepoint engine: hardware catalogue and profile store.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    if command is None:
        for module in dict.fromkeys(module for module, _ in COMMANDS.values()):
            _register(sub, module)
        return p
    if command in COMMANDS:
        _register(sub, COMMANDS[command][0])
    return p


def _listing_parser() -> argparse.ArgumentParser:
    """The parser that `--help`, no command and an unknown command get: every command by name and help only."""
    p = _Parser(prog="python -m engine", description="Kneepoint engine: hardware catalogue and profile store.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, (_, text) in COMMANDS.items():
        sub.add_parser(name, help=text)
    return p


def parser_for(argv: Sequence[str]) -> argparse.ArgumentParser:
    """The parser `main(argv)` uses: the named command's module only, or the listing of every command."""
    command = _command_of(argv)
    return build_parser(command) if command is not None else _listing_parser()


#: the environment variable that turns the last-resort handler off, so a bug shows its traceback
DEBUG_ENV = "KNEEPOINT_DEBUG"
#: how much of an unexpected exception's message the one-line report quotes
INTERNAL_MESSAGE_CHARS = 200


class ComputedValueError(KneepointError):
    """An engine model refused a value computed from the input (e.g. an overflow to infinity or NaN): the input's
    values are valid one by one but out of what the engine can compute with; the message names the field."""


def _computed_value_error(e) -> ComputedValueError:
    """The first error of an internal model's ValidationError as one line naming the model and the field."""
    first = e.errors(include_url=False)[0]
    field = error_path(first)
    got = f" (got {quoted(first['input'])})" if "input" in first and not isinstance(first["input"], dict) else ""
    return ComputedValueError(f"a value computed from the input is out of range: {e.title}.{field}: "
                              f"{first.get('msg', '')}{got}; is a number in the input far too large or small?")


def _run(args: argparse.Namespace) -> int:
    """Run the command; an internal model's ValidationError (never the user's own scenario, whose loader names
    the field it read) becomes a ComputedValueError at this boundary."""
    from pydantic import ValidationError  # here, not at the top: `--help` never gets this far

    try:
        return args.func(args)
    except ValidationError as e:
        raise _computed_value_error(e) from e


def _debug() -> bool:
    return os.environ.get(DEBUG_ENV, "").strip() not in ("", "0")


def _internal_error(e: Exception) -> str:
    """The one line shown for an exception that is not a KneepointError (a bug): its type, its message cut
    short, and how to see the traceback."""
    message = " ".join(str(e).split())
    if len(message) > INTERNAL_MESSAGE_CHARS:
        message = message[:INTERNAL_MESSAGE_CHARS] + "..."
    return (f"error: internal error ({type(e).__name__}): {message}; rerun with {DEBUG_ENV}=1 for the traceback")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run one command; returns the exit status. A KneepointError (bad input) is `error: <message>` on stderr
    and status 2; any other exception is a one-line internal error and status 2, or its traceback with
    KNEEPOINT_DEBUG=1; Ctrl-C is status 130 without a word."""
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        args = parser_for(argv).parse_args(argv)
        return _run(args)
    except KneepointError as e:
        print(f"error: {' '.join(str(e).splitlines())}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `| head` closed the pipe
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # the last resort: a bug, told in one line unless debugging
        if _debug():
            raise
        print(_internal_error(e), file=sys.stderr)
        return 2
