"""`python -m engine profile ...`: run the real profilers and keep their `measured` rows.

    profile preprocess [--quick] [--json] [--csv OUT] [--no-store]
    profile model (--onnx FILE | --torchvision NAME) [--model NAME] [--batches 1,2,4,...]
                  [--warmup N] [--reps N] [--device auto|cpu|cuda] [--threads N]
                  [--json] [--csv OUT] [--no-store]

engine.cli.main calls register(subparsers) and catches ProfilerError (a ValueError) with its other
errors: one line on stderr, exit 2. Results are printed (and written to --csv, in the seed
tables' column order) before they are added to the store, so a store refusal (e.g. a row
with the same key already there) loses no measurement. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional, Sequence

from engine.profilers import ProfilerError

_TABLE = {"PreprocessingPointRow": "preprocessing_points", "LatencyPointRow": "latency_points"}


#: the largest batch profiled: the scenario contract's batch limit (engine.scenario, max_batch <= 4096)
MAX_PROFILE_BATCH = 4096
#: the most untimed or timed runs per batch: 10,000 runs of a 100 ms batch is already 17 minutes
MAX_RUNS = 10_000
#: the most CPU threads asked for: the most host cores a scenario declares (engine.scenario, cpu_cores)
MAX_THREADS = 1024


def _batches(text: str) -> list[int]:
    from engine.io.userfiles import quoted

    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{quoted(text)} is not a comma-separated list of batch sizes") from None
    if not values or min(values) < 1 or max(values) > MAX_PROFILE_BATCH:
        raise argparse.ArgumentTypeError(f"{quoted(text)}: batch sizes must be whole numbers in 1..{MAX_PROFILE_BATCH}")
    return sorted(set(values))


def _frame(rows: list):
    import pandas as pd

    return pd.DataFrame([r.model_dump(mode="json") for r in rows], columns=list(type(rows[0]).model_fields))


def _summary_preprocess(rows: list) -> str:
    import pandas as pd

    lines = []
    for r in rows:
        size = (f"{r.input_desc.split()[2]} ({r.input_size:.2f} MP)" if r.pipeline == "image"
                else f"{r.input_size:g} s")
        per = (f"{r.ms_per_item / r.input_size:.2f} ms/MP" if r.pipeline == "image"
               else f"{r.ms_per_item / r.input_size:.3f} ms per audio s")
        lines.append({"pipeline": r.pipeline, "step": r.step, "input": size, "ms/item (1 core)": r.ms_per_item,
                      "items/s per core": round(1000.0 / r.ms_per_item, 1), "per unit": per})
    host = rows[0].measured_on if rows else ""
    return pd.DataFrame(lines).to_string(index=False) + f"\n# measured_on: {host}"


def _summary_model(rows: list) -> str:
    df = _frame(rows)
    r = rows[0]
    head = f"# {r.model} on {r.sku} {r.partition}, {r.framework} {r.precision}; {r.measured_on}"
    cols = ["batch", "mean_ms", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "throughput"]
    return head + "\n" + df[cols].round(3).to_string(index=False)


def _emit(args: argparse.Namespace, rows: list, summary: str) -> int:
    """Print (JSON on stdout with --json, the summary on stderr then), write --csv, then store."""
    if args.json:
        print(json.dumps([r.model_dump(mode="json") for r in rows], indent=1))
        print(summary, file=sys.stderr)
    else:
        print(summary)
    if args.csv:
        from engine.io.exporters import write_atomic

        write_atomic(Path(args.csv), _frame(rows).to_csv(index=False).encode("utf-8"))
        print(f"# wrote {len(rows)} rows to {args.csv}", file=sys.stderr)
    if not args.no_store:
        from engine.store import Store

        store = Store()
        table = _TABLE[type(rows[0]).__name__]
        n = store.add_rows(table, rows)
        print(f"# added {n} measured rows to {table} (user rows beside {store.path})", file=sys.stderr)
    return 0


def cmd_preprocess(args: argparse.Namespace) -> int:
    from engine.profilers.preprocess import profile_preprocess

    print(f"# profiling preprocessing on one core ({'quick, ~10 s' if args.quick else 'full, ~1 min'})",
          file=sys.stderr)
    rows = profile_preprocess(quick=args.quick)
    return _emit(args, rows, _summary_preprocess(rows))


def cmd_model(args: argparse.Namespace) -> int:
    from engine.profilers import model as m

    common = dict(batches=args.batches, warmup=args.warmup, reps=args.reps, device=args.device,
                  threads=args.threads or None)
    if args.onnx:
        if not args.model:
            raise ProfilerError("--onnx needs --model NAME (the model's name in the store, e.g. resnet50)")
        from engine.io.userfiles import regular_file

        regular_file(args.onnx, "ONNX model")
        rows = m.profile_onnx(args.onnx, args.model, **common)
    else:
        rows = m.profile_torchvision(args.torchvision, args.model, **common)
    return _emit(args, rows, _summary_model(rows))


def _outputs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the rows as JSON on stdout (summary on stderr)")
    p.add_argument("--csv", metavar="OUT", help="also write the rows to this CSV file (seed column order)")
    p.add_argument("--no-store", action="store_true", help="do not add the rows to the profile store")


def register(subparsers) -> None:
    """Add the `profile` command (subcommands `preprocess` and `model`) to `python -m engine`."""
    from engine.io.userfiles import whole_number

    runs = whole_number(0, MAX_RUNS)
    prof = subparsers.add_parser("profile", help="time preprocessing or a model on this machine (measured rows)")
    sub = prof.add_subparsers(dest="profile_what", required=True, parser_class=type(prof))

    pre = sub.add_parser("preprocess", help="image and audio preprocessing cost per item on one CPU core")
    pre.add_argument("--quick", action="store_true", help="fewer sizes and shorter timing (under 30 s)")
    _outputs(pre)
    pre.set_defaults(func=cmd_preprocess)

    mod = sub.add_parser("model", help="latency/throughput of a model over a batch sweep")
    src = mod.add_mutually_exclusive_group(required=True)
    src.add_argument("--onnx", metavar="FILE", help="an ONNX model file (onnxruntime)")
    src.add_argument("--torchvision", metavar="NAME",
                     help="a torchvision model with random weights, e.g. resnet50 (needs torch and torchvision)")
    mod.add_argument("--model", help="the model's name in the store (required with --onnx)")
    mod.add_argument("--batches", type=_batches, default=[1, 2, 4, 8, 16, 32], metavar="1,2,4,...",
                     help="batch sizes (default 1,2,4,8,16,32)")
    mod.add_argument("--warmup", type=runs, default=10, metavar="N", help="untimed runs per batch (10)")
    mod.add_argument("--reps", type=runs, default=50, metavar="N", help="timed runs per batch (50)")
    mod.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                     help="auto: CUDA where available, else CPU")
    mod.add_argument("--threads", type=whole_number(0, MAX_THREADS), default=0, metavar="N",
                     help="CPU intra-op threads (default: the runtime's choice)")
    _outputs(mod)
    mod.set_defaults(func=cmd_model)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Stand-alone entry (`python -m engine.cli.profile profile ...`) until engine.cli.main calls register()."""
    from engine.cli.main import _Parser
    from engine.errors import KneepointError

    parser = _Parser(prog="python -m engine")
    register(parser.add_subparsers(dest="command", required=True, parser_class=_Parser))
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except KneepointError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
