"""`python -m engine profiles estimate`: an estimated latency curve for a catalogue model or an ONNX file."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from engine.io.userfiles import MAX_CLI_NUMBER, number_in

#: the largest ONNX file the CLI reads: 2 GiB is protobuf's own ceiling for one message
MAX_ONNX_BYTES = 2 * 1024 ** 3


def _batches(text: str) -> list[int]:
    from engine.cli.profile import _batches as parse

    return parse(text)


def cmd_estimate(args: argparse.Namespace) -> int:
    from engine.cli.main import _store
    from engine.estimator.estimate import Estimator

    if not (args.model or args.onnx):
        raise SystemExit("error: give --model NAME (a catalogue model) or --onnx FILE")
    est = Estimator.from_store(_store())
    model = args.model
    if args.onnx:
        from engine.estimator.onnx_costs import costs_from_onnx

        path = Path(args.onnx)
        if not path.is_file():
            raise SystemExit(f"error: {args.onnx}: no such file")
        if path.stat().st_size > MAX_ONNX_BYTES:
            raise SystemExit(f"error: {args.onnx}: larger than {MAX_ONNX_BYTES // 1024 ** 3} GiB")
        model = args.model or path.stem
        rows = costs_from_onnx(path.read_bytes(), model, MAX_ONNX_BYTES)
        est = est.with_model(model, rows)
    e = est.estimate(model, args.gpu, args.partition, args.precision, batches=args.batches, input_len=args.input_len)
    out = {"model": e.model, "gpu": e.sku, "partition": e.partition, "precision": e.precision,
           "input_len": e.input_len, "provenance": "estimated", "family": e.family, "calibrated_on": e.calibrated_on,
           "expected_rel_error": e.expected_rel_error, "memory_max_batch": e.memory_max_batch, "note": e.note,
           "points": [{"batch": b, "mean_ms": t * 1e3, "throughput_items_per_s": x}
                      for b, t, x in zip(e.batches, e.mean_s, e.throughput)]}
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    length = f", input length {e.input_len:g}" if e.input_len is not None else ""
    print(f"{e.model} on {e.sku} {e.partition} ({e.precision}{length}): estimated")
    print(f"  {'batch':>6} {'mean ms':>10} {'items/s':>12}")
    for p in out["points"]:
        print(f"  {p['batch']:>6} {p['mean_ms']:>10.3f} {p['throughput_items_per_s']:>12,.1f}")
    print(f"  {e.note}")
    return 0


def register(psub) -> None:
    """Add `profiles estimate` to the `profiles` sub-commands."""
    pe = psub.add_parser("estimate", help="estimated latency curve of a model (or an ONNX file) on any GPU partition")
    pe.add_argument("--model", help="a model in the catalogue (with --onnx: the name to give the file's model)")
    pe.add_argument("--onnx", metavar="FILE", help="an ONNX model file; its costs are read from the graph")
    pe.add_argument("--gpu", required=True)
    pe.add_argument("--partition", default="full", help="'full', a MIG profile (1g.10gb) or mps:N")
    pe.add_argument("--precision", default="fp16", help="fp16 (default), amp, bf16, int8, tf32 or fp32")
    pe.add_argument("--batches", type=_batches, metavar="1,2,4,...", help="batch sizes (default: powers of two up "
                                                                          "to the memory limit)")
    pe.add_argument("--input-len", type=number_in(0, MAX_CLI_NUMBER, low_open=True),
                    help="audio seconds or tokens, for variable-length models (default: the cost table's)")
    pe.add_argument("--json", action="store_true")
    pe.set_defaults(func=cmd_estimate)
