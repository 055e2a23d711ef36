"""`python -m engine size SCENARIO.json --rate R [--gpus A,B] [--json] [--no-confirm]`: the least hardware for a
load; `python -m engine export-design SCENARIO.json --to DIR`: the design's mig-parted, Triton and Kubernetes files."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from engine.errors import KneepointError


def _read(path: str) -> str:
    try:
        return sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise KneepointError(f"cannot read {path}: {e.strerror or e}") from None


def _ctx():
    from engine.analytic import Context
    from engine.store import Store

    return Context.from_store(Store())


def _num(x: float, fmt: str = ",.0f") -> str:
    return format(x, fmt) if math.isfinite(x) else "unstable"


def size_report(r) -> str:
    """The text answer: one line per GPU type, ranked by TCO, then the simulator's verdict."""
    lines = [f"least hardware for {r.model} at {r.rate_rps:,.0f} req/s, SLA p{r.percentile:g} <= {r.sla_ms:g} ms "
             "(ranked by 3-year TCO at that rate)"]
    for k, a in enumerate(r.answers, 1):
        if a.status != "ok":
            lines.append(f"  -  {a.sku}: {a.status}: {a.reason}")
            continue
        dpu = f" + {a.dpu_units} DPU units" if a.dpu_units else ""
        lines.append(f"  {k}. {a.sku}: {a.gpus} GPU(s) = {a.servers} server(s) x {a.gpus_per_server} GPU(s) x "
                     f"[{a.layout_label}] ({' '.join(a.layout) or 'MIG off'}); per server {a.host_cores} host cores "
                     f"({a.host_cores_used:.1f} used){dpu} at {a.server_rate_rps:,.0f} req/s")
        lines.append(f"       p{r.percentile:g} {_num(a.latency_at_rate_ms, '.2f')} ms at the rate; SLA-bounded "
                     f"{_num(a.sla_bounded_rps)} req/s in all ({_num(a.per_gpu_sla_rps)} per GPU alone); bottleneck "
                     f"{a.bottleneck}; TCO ${_num(a.tco_usd)} (CAPEX ${_num(a.capex_usd)}); {a.candidates} layouts tried; "
                     f"{', '.join(a.curves)} service times")
    c = r.confirmation
    if c is not None:
        sim = f"{c.simulated_ms:.2f}" + (f" +-{c.ci_ms:.2f}" if c.ci_ms is not None else "") if c.simulated_ms else "-"
        lines.append(f"simulator ({c.n_requests:,} requests, seed {c.seed}) on one {c.sku} server at its share: "
                     f"p{c.percentile:g} {sim} ms "
                     f"(analytic {_num(c.analytic_ms, '.2f')} ms) vs SLA {c.sla_ms:g} ms: "
                     f"{'met' if c.met else 'MISSED'}" + (f" ({c.note})" if c.note else ""))
    elif r.best is None:
        lines.append("no GPU type answers: nothing to simulate")
    if r.best is not None:
        lines.append(f"deploy it: add --scenario-out FILE, then `python -m engine export-design FILE --to DIR "
                     f"--servers {r.answers[0].servers}`")
    return "\n".join(lines)


def cmd_size(args: argparse.Namespace) -> int:
    from engine.deploy.sizing import size

    try:
        skus = [s.strip() for s in args.gpus.split(",") if s.strip()] if args.gpus else None
        result = size(_read(args.scenario), _ctx(), args.rate, skus, confirm=not args.no_confirm,
                      n_requests=args.requests, seed=args.seed)
    except KneepointError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.scenario_out:
        if result.best is None:
            print("error: no GPU type carries the rate; no scenario written", file=sys.stderr)
            return 2
        from engine.io.exporters import write_atomic

        write_atomic(Path(args.scenario_out), (json.dumps(result.answers[0].scenario, indent=1) + "\n").encode())
    if args.json:
        print(json.dumps(json.loads(result.model_dump_json()), indent=1))  # inf -> null
    else:
        print(size_report(result))
    return 0


def cmd_export_design(args: argparse.Namespace) -> int:
    from engine.deploy.export import export_design, write_export

    try:
        export = export_design(_read(args.scenario), _ctx(), servers=args.servers)
        written = write_export(export, args.to)
    except KneepointError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"error: cannot write into {args.to}: {e.strerror or e}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    print(f"# {len(written)} files for {export.plan.gpus} x {export.plan.sku} ({len(export.plan.profiles)} "
          f"profile(s), {len(export.plan.configs)} mig-parted config(s)); see README.md there", file=sys.stderr)
    return 0


def _rate(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected requests per second, got {text!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of requests/s, got {text}")
    return v


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {v}")
    return v


def register(subparsers) -> None:
    p = subparsers.add_parser("size", help="least GPUs (and layouts) and host cores for a rate at the SLA")
    p.add_argument("scenario", help="scenario JSON file, or - for stdin")
    p.add_argument("--rate", type=_rate, required=True, help="requests/s to carry within the SLA")
    p.add_argument("--gpus", help="comma-separated GPU types to compare (default: the scenario's)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--no-confirm", action="store_true", help="skip the simulator check of the winner")
    p.add_argument("--requests", type=_positive, default=20_000, help="simulated requests for the check")
    p.add_argument("--seed", type=int, default=0, help="simulator seed")
    p.add_argument("--scenario-out", metavar="FILE",
                   help="write one server of the winner as a scenario (for export-design)")
    p.set_defaults(func=cmd_size)
    e = subparsers.add_parser("export-design", help="mig-parted, Triton and Kubernetes files of a design")
    e.add_argument("scenario", help="scenario JSON file, or - for stdin")
    e.add_argument("--to", required=True, help="directory to write into (created; files never land outside it)")
    e.add_argument("--servers", type=_positive, default=1,
                   help="identical servers of this design sharing the load (size's answer); multiplies replicas")
    e.set_defaults(func=cmd_export_design)
