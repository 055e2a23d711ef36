"""Side-by-side comparison of designs: their inputs, results, deltas against a baseline, and curves.

`compare_study(scenarios, ctx, baseline)` evaluates every design analytically (engine.analytic.operating_point) and
returns one frozen CompareStudy: what each design is (a row of inputs), what it achieves (a row of results,
units in the column names), the relative change of every result against the baseline design, and each
design's latency-vs-load curve up to its capacity.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Callable, ClassVar, Optional

from pydantic import BaseModel, ConfigDict

from engine.analytic import build_design, Context, evaluate_design, load_curve
from engine.cost import COST_BASIS_NAMES
from engine.scenario import Scenario
from engine.errors import KneepointError
from engine.partition.bounded import sim_bounded_rate
from engine.vocab import CostBasis
from engine.results import CostSummary, SlaOutcome

CURVE_POINTS = 40


class CompareError(KneepointError):
    """A comparison that cannot be made (no designs, a bad baseline); the message says which."""


class DesignOutcome(BaseModel):
    """What one design achieves, as the Compare page shows it (display labels with units in LABELS)."""

    model_config = ConfigDict(frozen=True)

    sla_bounded_rps: float
    capacity_rps: float
    tail_at_rate_ms: float
    tco_usd: float
    queries_per_usd: Optional[float]  # None where the design serves nothing on the cost basis
    queries_per_joule: Optional[float]
    wall_power_w: float
    bottleneck: str
    meets_sla: bool
    no_cost_value: Optional[str]  # why a cost metric has no value

    LABELS: ClassVar[dict[str, str]] = {
        "sla_bounded_rps": "SLA-bounded throughput (req/s)", "capacity_rps": "capacity (req/s)",
        "tail_at_rate_ms": "tail latency at offered load (ms)", "tco_usd": CostSummary.LABELS["tco_usd"],
        "queries_per_usd": CostSummary.LABELS["queries_per_usd"],
        "queries_per_joule": CostSummary.LABELS["queries_per_joule"],
        "wall_power_w": CostSummary.LABELS["wall_power_w"], "bottleneck": "bottleneck",
        "meets_sla": SlaOutcome.LABELS["met"], "no_cost_value": "no cost value"}


#: results compared against the baseline, with whether more is better (for the sign of a delta's colour)
RESULTS: dict[str, bool] = {
    "sla_bounded_rps": True,
    "capacity_rps": True,
    "tail_at_rate_ms": False,
    "tco_usd": False,
    "queries_per_usd": True,
    "queries_per_joule": True,
    "wall_power_w": False,
}


class DesignCurve(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    rates_rps: list[float]
    mean_ms: list[float]
    tail_ms: list[float]


class CompareStudy(BaseModel):
    model_config = ConfigDict(frozen=True)

    names: list[str]
    baseline: int
    cost_basis: str  # the throughput every design is priced at, in words (one basis for all)
    percentile: list[float]  # each design's SLA percentile
    sla_ms: list[float]
    inputs: list[dict[str, str]]  # one row per design
    results: list[DesignOutcome]  # one per design
    # relative change of each RESULTS field against the baseline (None where undefined)
    deltas: list[dict[str, Optional[float]]]
    curves: list[DesignCurve]


def describe(s: Scenario) -> dict[str, str]:
    """A design's inputs in words, one column per part."""
    if s.fpga is not None:
        hw = f"{s.fpga.boards} x FPGA {s.fpga.board}"
        part = ", ".join(f"{k}={v}" for k, v in s.fpga.model_dump().items()
                         if k not in ("board", "boards") and v is not None)
    else:
        hw = f"{s.gpu.count} x {s.gpu.sku}"
        if s.gpu.shares:
            part = "GPU% " + " + ".join(f"{x:g}" for x in s.gpu.shares)
        elif s.gpu.layout or s.gpu.layouts:
            counts = Counter(entry.split("@")[0] for layout in s.gpu.declared_layouts() for entry in layout)
            part = " + ".join(f"{n} x {p}" for p, n in sorted(counts.items())) + ("" if s.gpu.layouts else
                                                                                  " per GPU")
        else:
            part = "whole GPU"
    pre = s.preprocessing
    pre_s = pre.device.value + (f" ({pre.cores} cores)" if pre.device.value == "cpu" and pre.cores else "") + (
        f" ({pre.units} CUs)" if pre.device.value == "dpu" else "")
    bat = s.batching
    bat_s = bat.policy.value + (f", max {bat.max_batch}" if bat.max_batch else "") + (
        f", {bat.max_queue_delay_ms:g} ms" if bat.max_queue_delay_ms is not None else "")
    sched = s.scheduler.policy.value + (f" (alpha {s.scheduler.alpha:g}, beta {s.scheduler.beta:g})"
                                        if s.scheduler.policy.value == "elsa" else "")
    sla = s.workload.sla
    return {"design": s.name, "model": s.model, "hardware": hw, "partitioning": part,
            "host cores": f"{s.host.cpu_cores} ({s.host.cpu_reserved_cores} reserved)", "preprocessing": pre_s,
            "RPC path": s.rpc.preset.value, "batching": bat_s, "scheduler": sched,
            "offered load": f"{s.workload.arrival.rate_rps:,.0f} req/s",
            "SLA": f"p{sla.percentile:g} <= {sla.latency_ms:g} ms" if sla.latency_ms else f"p{sla.percentile:g} "
                                                                                        "(model default)"}


def _delta(x, base) -> Optional[float]:
    if not isinstance(x, (int, float)) or not isinstance(base, (int, float)):
        return None
    if not (math.isfinite(x) and math.isfinite(base)) or base == 0:
        return None
    return (x - base) / abs(base)


def compare_study(scenarios: list[Scenario], ctx: Context, baseline: int = 0,
                  cost_basis: CostBasis | str = CostBasis.SLA_BOUNDED) -> CompareStudy:
    """Evaluate each design and compare every result with the baseline design's (index into scenarios).

    Every design is priced on the same `cost_basis` (default: its SLA-bounded throughput; 'capacity' is
    PREBA 6.3's like-for-like basis); a design that serves nothing on it has no queries per USD (None)."""
    try:
        cost_basis = CostBasis(cost_basis)
    except ValueError:
        raise CompareError(f"{cost_basis!r} is not a cost basis; valid: "
                           f"{', '.join(b.value for b in CostBasis)}") from None
    if not scenarios:
        raise CompareError("nothing to compare: pin at least one design")
    if not 0 <= baseline < len(scenarios):
        raise CompareError(f"baseline {baseline} is not one of the {len(scenarios)} designs (0..{len(scenarios) - 1})")
    results, curves, pcts, slas = [], [], [], []
    for s in scenarios:
        design = build_design(s, ctx)
        ev = evaluate_design(design, ctx, cost_basis=cost_basis)
        points = load_curve(design, CURVE_POINTS)
        curves.append(DesignCurve(name=s.name, rates_rps=[rate for rate, _, _ in points],
                                  mean_ms=[mean * 1e3 for _, mean, _ in points],
                                  tail_ms=[tail * 1e3 for _, _, tail in points]))
        pcts.append(float(ev.sla.percentile))
        slas.append(float(ev.sla.latency_ms))
        results.append(DesignOutcome(
            sla_bounded_rps=ev.sla_bounded_rps, capacity_rps=ev.capacity_rps,
            tail_at_rate_ms=ev.sla.latency_at_rate_ms, tco_usd=ev.cost.tco_usd,
            queries_per_usd=ev.cost.queries_per_usd, queries_per_joule=ev.cost.queries_per_joule,
            wall_power_w=ev.cost.wall_power_w, bottleneck=ev.bottleneck, meets_sla=ev.sla.met,
            no_cost_value=ev.cost_no_value_reason))
    base = results[baseline]
    deltas = [{field: _delta(getattr(outcome, field), getattr(base, field)) for field in RESULTS}
              for outcome in results]
    return CompareStudy(names=[s.name for s in scenarios], baseline=baseline,
                        cost_basis=COST_BASIS_NAMES[cost_basis], percentile=pcts, sla_ms=slas,
                        inputs=[describe(s) for s in scenarios], results=results, deltas=deltas, curves=curves)


class SimulatedBound(BaseModel):
    """A design's latency-bounded throughput found with the simulator (engine.partition.bounded)."""

    model_config = ConfigDict(frozen=True)

    name: str
    bounded_rps: float
    capacity_rps: float
    requests_per_probe: int
    seed: int


def simulate_bounds(scenarios: list[Scenario], ctx: Context, n_requests: int = 10_000, seed: int = 0,
                    progress: Optional[Callable[[float], None]] = None) -> list[SimulatedBound]:
    """Each design's largest load whose simulated SLA-percentile latency meets its SLA (bisection on the
    load, common random numbers across probes); what the analytic engine cannot judge (ELSA's routing,
    heavy tails) the simulator does."""
    if not scenarios:
        raise CompareError("nothing to simulate: pin at least one design")
    out = []
    for i, s in enumerate(scenarios):
        b = sim_bounded_rate(s, ctx, n_requests=n_requests, seed=seed)
        out.append(SimulatedBound(name=s.name, bounded_rps=b.rate_rps, capacity_rps=b.capacity_rps,
                                  requests_per_probe=n_requests, seed=seed))
        if progress:
            progress((i + 1) / len(scenarios))
    return out
