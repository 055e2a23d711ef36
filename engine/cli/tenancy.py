"""`python -m engine tenancy ...`: GPU% sharing of one GPU (GPU runtime primitives seed).

    tenancy param-share --gpu-mem-mb M --weights-mb W --buffer-mb B [--json]
    tenancy knee MODEL GPU [--batch B] [--threshold F] [--step PCT] [--percentile P] [--input-len L] [--json]
    tenancy multi-model MODEL GPU --deadline-ms D [--batch B] [--available-pct A] [--rate R]
                        [--max-instances N] [--step PCT] [--percentile P] [--input-len L] [--json]
    tenancy oversubscribe MODEL GPU --gpu-pct P [--instances N] [--batch B] [--json]
    tenancy reconfig --rate R [--load-s S] [--switch-us U] [--old-capacity C] [--json]

engine.cli.main calls register(subparsers). A bad value is one line on stderr and exit 2 (TenancyError
here; ProfileError for an unknown model or GPU is caught by engine.cli.main.main).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys

from engine.cli.vocab import (DEFAULT_STEP_PCT, KNEE_GAIN_THRESHOLD, MAX_OVERSUBSCRIBED_INSTANCES, RESTART_LOAD_S,
                              STANDBY_SWITCH_S)
from engine.io.userfiles import finite_float, whole_number


def _one_line(cmd):
    @functools.wraps(cmd)
    def run(args: argparse.Namespace) -> int:
        from engine.tenancy import TenancyError

        try:
            return cmd(args)
        except TenancyError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    return run


def _book():
    from engine.profiles import ProfileBook
    from engine.store import Store

    return ProfileBook.from_store(Store())


def _curve(args: argparse.Namespace):
    from engine.tenancy import latency_vs_gpu_pct

    return latency_vs_gpu_pct(_book(), args.model, args.gpu, batch=args.batch, step=args.step,
                              percentile=args.percentile, input_len=args.input_len)


def _print(args: argparse.Namespace, out: dict, lines: list[str]) -> int:
    print(json.dumps(out, indent=2) if args.json else "\n".join(lines))
    return 0


@_one_line
def cmd_param_share(args: argparse.Namespace) -> int:
    from engine.tenancy import param_share_fit

    f = param_share_fit(args.gpu_mem_mb, args.weights_mb, args.buffer_mb)
    out = {"gpu_memory_mb": f.gpu_memory_mb, "weights_mb": f.weights_mb, "buffer_mb": f.buffer_mb,
           "without": f.without, "with": f.with_sharing, "extra": f.extra, "extra_fraction": f.extra_fraction}
    return _print(args, out, [f"without {f.without}", f"with {f.with_sharing}",
                              f"# shared weights fit {f.extra} more instances ({f.extra_fraction:+.0%}) in "
                              f"{f.gpu_memory_mb:,.0f} MB"])


@_one_line
def cmd_knee(args: argparse.Namespace) -> int:
    from engine.tenancy import knee_gpu_pct

    curve = _curve(args)
    k = knee_gpu_pct(curve, args.threshold)
    out = {"model": curve.model, "gpu": curve.sku, "batch": curve.batch, "knee_gpu_pct": k.gpu_pct,
           "latency_ms": k.latency_ms, "best_gpu_pct": k.best_gpu_pct, "best_latency_ms": k.best_latency_ms,
           "remaining_gain": k.remaining_gain, "threshold": k.threshold, "rule": k.rule,
           "curve": curve.rows(), "refused_gpu_pct": [r.gpu_pct for r in curve.refused]}
    lines = [f"knee GPU% {k.gpu_pct} for {curve.model} on {curve.sku}, batch {curve.batch}: mean "
             f"{k.latency_ms:.3f} ms, {k.remaining_gain:.1%} above the best {k.best_latency_ms:.3f} ms at "
             f"{k.best_gpu_pct}%", f"# rule: {k.rule}"]
    lines += [f"{p.gpu_pct:>4}%  mean {p.mean_ms:9.3f} ms  p{curve.percentile} {p.tail_ms:9.3f} ms  "
              f"{p.throughput_items_per_s:10,.1f} items/s  {p.provenance}" for p in curve.points]
    if curve.refused:
        lines.append(f"# refused {', '.join(str(r.gpu_pct) for r in curve.refused)}%: {curve.refused[0].reason}")
    return _print(args, out, lines)


@_one_line
def cmd_multi_model(args: argparse.Namespace) -> int:
    from engine.tenancy import plan_multimodel

    plan = plan_multimodel(_curve(args), args.deadline_ms, args.available_pct, args.rate, args.max_instances)
    out = plan.model_dump(mode="json") | {"speedup": plan.speedup}
    lines = []
    if plan.best is not None:
        b = plan.best
        lines.append(f"{b.instances} x {b.gpu_pct_each}% ({b.total_pct:g}% of {plan.available_pct:g}%): "
                     f"{b.throughput_items_per_s:,.1f} items/s, p{plan.percentile} {b.tail_ms:.3f} ms "
                     f"<= {plan.deadline_ms:g} ms")
        if plan.speedup is not None:
            lines.append(f"# {plan.speedup:.2f}x one instance at {plan.single.gpu_pct_each}%")
    if plan.for_rate is not None:
        r = plan.for_rate
        lines.append(f"for {plan.rate_rps:g} items/s: {r.instances} x {r.gpu_pct_each}% "
                     f"({r.throughput_items_per_s:,.1f} items/s)")
    if plan.reason:
        lines.append(f"# {plan.reason}")
    return _print(args, out, lines)


@_one_line
def cmd_oversubscribe(args: argparse.Namespace) -> int:
    from engine.tenancy import TenancyError, oversubscription_sweep
    from engine.tenancy.errors import whole

    pct = whole("gpu_pct", args.gpu_pct)
    if pct > 100:
        raise TenancyError(f"gpu_pct must be a GPU% in 1..100, got {pct}")
    args.step, args.percentile, args.input_len = pct, 99, None  # a grid that starts at the share asked for
    sweep = oversubscription_sweep(_curve(args), args.gpu_pct, args.instances)
    out = sweep.model_dump(mode="json")
    lines = [f"{r.instances:>3} x {sweep.gpu_pct_each}% = {r.total_pct:5g}%  mean {r.latency_ms:9.3f} ms  "
             f"{r.throughput_items_per_s:10,.1f} items/s" for r in sweep.rows]
    lines.append(f"# throughput cap {sweep.cap_items_per_s:,.1f} items/s (time-slicing past 100%, seed Sec VI-C)")
    return _print(args, out, lines)


@_one_line
def cmd_reconfig(args: argparse.Namespace) -> int:
    from engine.tenancy import reconfiguration

    r = reconfiguration(args.rate, args.load_s, args.switch_us * 1e-6, args.old_capacity)
    out = r.model_dump(mode="json") | {"requests_saved": r.requests_saved}
    lines = [f"{c.mode:>7}: downtime {c.downtime_s * 1e3:10.3f} ms, {c.requests_affected:,.1f} requests lost or "
             f"delayed" + (f" ({c.backlog_during_load:,.1f} queued while the standby loads)"
                           if c.backlog_during_load else "") for c in (r.restart, r.standby)]
    return _print(args, out, lines)


def _model_args(p: argparse.ArgumentParser, step: bool = True) -> None:
    p.add_argument("model")
    p.add_argument("gpu", help="GPU SKU, e.g. V100-16GB or T4-16GB")
    p.add_argument("--batch", type=whole_number(1), default=8,
                   help="batch per instance (default 8, as the seed's Fig 2a)")
    if step:
        p.add_argument("--step", type=int, default=DEFAULT_STEP_PCT, help="GPU%% grid step (default 5)")
        p.add_argument("--percentile", type=int, default=99, help="tail percentile held to the deadline")
        p.add_argument("--input-len", type=finite_float, help="audio seconds or tokens, for variable-length models")
    p.add_argument("--json", action="store_true")


def register(subparsers) -> None:
    ten = subparsers.add_parser("tenancy", help="GPU%% sharing: knee GPU%%, Multi-Model, Param-Share, "
                                                "oversubscription, reconfiguration")
    sub = ten.add_subparsers(dest="action", required=True, parser_class=type(ten))

    ps = sub.add_parser("param-share", help="instances that fit in GPU memory with and without shared weights")
    ps.add_argument("--gpu-mem-mb", type=finite_float, required=True)
    ps.add_argument("--weights-mb", type=finite_float, required=True)
    ps.add_argument("--buffer-mb", type=finite_float, required=True, help="other GPU buffer per instance")
    ps.add_argument("--json", action="store_true")
    ps.set_defaults(func=cmd_param_share)

    kn = sub.add_parser("knee", help="latency vs GPU%% and the knee GPU%%")
    _model_args(kn)
    kn.add_argument("--threshold", type=finite_float, default=KNEE_GAIN_THRESHOLD,
                    help="largest remaining latency gain past the knee, a fraction (default 0.1)")
    kn.set_defaults(func=cmd_knee)

    mm = sub.add_parser("multi-model", help="instances x GPU%% with the most throughput within a deadline")
    _model_args(mm)
    mm.add_argument("--deadline-ms", type=finite_float, required=True)
    mm.add_argument("--available-pct", type=finite_float, default=100.0, help="unused GPU%% (default 100)")
    mm.add_argument("--rate", type=finite_float, help="items/s to serve: also report the smallest plan that does")
    mm.add_argument("--max-instances", type=whole_number(1), help="e.g. what fits in memory (see param-share)")
    mm.set_defaults(func=cmd_multi_model)

    ov = sub.add_parser("oversubscribe", help="instances at one GPU%% each, past 100%% in total")
    _model_args(ov, step=False)
    ov.add_argument("--gpu-pct", type=int, required=True, help="GPU%% of each instance")
    ov.add_argument("--instances", type=whole_number(1, MAX_OVERSUBSCRIBED_INSTANCES), default=8,
                    help=f"sweep 1..N instances (default 8, at most {MAX_OVERSUBSCRIBED_INSTANCES})")
    ov.set_defaults(func=cmd_oversubscribe)

    rc = sub.add_parser("reconfig", help="cost of a GPU%% change with and without a standby instance")
    rc.add_argument("--rate", type=finite_float, required=True, help="requests/s arriving during the change")
    rc.add_argument("--load-s", type=finite_float, default=RESTART_LOAD_S,
                    help="model load time (default 3 s, seed V-C)")
    rc.add_argument("--switch-us", type=finite_float, default=STANDBY_SWITCH_S * 1e6,
                    help="standby switch-over downtime (default 200 us, seed V-C)")
    rc.add_argument("--old-capacity", type=finite_float, help="requests/s the old share serves while the standby loads")
    rc.add_argument("--json", action="store_true")
    rc.set_defaults(func=cmd_reconfig)
