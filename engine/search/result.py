"""What a design search returns (frozen models), and the same as DataFrames for a page or a report.

Latencies are ms, rates requests/s, money USD. A design that is unstable at the offered rate has an
infinite p99 there; a design with no rate meeting the SLA has an SLA-bounded throughput of 0.
"""

from __future__ import annotations

from typing import Optional

import pandas as pd
from pydantic import BaseModel, ConfigDict


class DesignRow(BaseModel):
    """One design of the grid, evaluated analytically (engine.analytic.evaluate_design)."""

    model_config = ConfigDict(frozen=True)

    index: int
    label: str
    gpu: str
    preprocessing: str
    rpc: str
    batching: str
    scheduler: str
    capacity_rps: float
    bottleneck: str
    stable: bool  # at the offered rate
    p99_ms: float  # at the offered rate
    sla_latency_ms: float  # at the offered rate and the SLA percentile
    meets_sla: bool  # at the offered rate
    sla_bounded_rps: float
    tco_usd: float
    capex_usd: float
    opex_usd: float
    queries_per_usd: Optional[float]  # at the SLA-bounded throughput, as the Design page; None if it meets no SLA
    queries_per_joule: Optional[float]
    error: Optional[str] = None  # the evaluation failed (e.g. the model does not fit a slice)


class Confirmation(BaseModel):
    """The simulator's p99 at the offered rate against the analytic one."""

    model_config = ConfigDict(frozen=True)

    index: int
    rate_rps: float
    analytic_p99_ms: float
    sim_p99_ms: Optional[float]
    sim_p99_ci_ms: Optional[float]  # 95 % half-width (batch means)
    relative_error: Optional[float]  # (analytic - simulated) / simulated
    sim_meets_sla: Optional[bool]
    sim_violation_rate: Optional[float]
    n_requests: int
    seed: int
    note: Optional[str] = None


class Front(BaseModel):
    """A Pareto front: design indices along it, sorted by the first objective (best first)."""

    model_config = ConfigDict(frozen=True)

    name: str
    objectives: tuple[str, str]  # DesignRow fields
    directions: tuple[str, str]  # 'min' or 'max'
    among: str  # which designs competed
    indices: tuple[int, ...]


class Candidate(BaseModel):
    """A design the search singles out, with its scenario (kneepoint.scenario/1 JSON) to open or export."""

    model_config = ConfigDict(frozen=True)

    row: DesignRow
    roles: tuple[str, ...]  # best-throughput, best-value, front:<name>, confirmed
    scenario_json: str
    confirmation: Optional[Confirmation] = None


class SearchResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    model: str
    gpu: str
    rate_rps: float
    sla_ms: float
    sla_percentile: float
    size: int
    workers: int
    wall_s: float
    analytic_s: float
    designs_per_s: float  # analytic phase
    designs: tuple[DesignRow, ...]
    best_throughput: Optional[int]  # highest SLA-bounded throughput among designs meeting the SLA
    best_value: Optional[int]  # most queries per dollar among designs meeting the SLA
    fronts: tuple[Front, ...]
    candidates: tuple[Candidate, ...]
    notes: tuple[str, ...]
    # the best-throughput design with no preprocessing at all (PREBA's ideal; its index is the best design's): a
    # reference line for what its preprocessing costs, never a candidate. None when not asked for, when no design
    # meets the SLA, or when the best design has no preprocessing already
    ideal_reference: Optional[DesignRow] = None

    def candidate(self, index: int) -> Optional[Candidate]:
        return next((c for c in self.candidates if c.row.index == index), None)

    def front(self, name: str) -> Front:
        for f in self.fronts:
            if f.name == name:
                return f
        raise KeyError(f"{name!r} is not a front; valid: {', '.join(f.name for f in self.fronts)}")


IDEAL_ROLE = "reference: no preprocessing (ideal, not deployable)"  # the ideal's row in the 'best' table


def frames(result: SearchResult) -> dict[str, pd.DataFrame]:
    """Tables for a page: designs (every row, with its roles), best, one per front, confirmations."""
    cols = list(DesignRow.model_fields)
    roles = {c.row.index: ", ".join(c.roles) for c in result.candidates}
    designs = pd.DataFrame([r.model_dump() for r in result.designs], columns=cols)
    designs["roles"] = designs["index"].map(roles).fillna("")
    best = [(role, result.designs[i]) for role, i in (("best SLA-bounded throughput", result.best_throughput),
                                                      ("best queries per dollar", result.best_value)) if i is not None]
    if result.ideal_reference is not None:
        best.append((IDEAL_ROLE, result.ideal_reference))
    out = {"designs": designs,
           "best": pd.DataFrame([{"role": role, **row.model_dump()} for role, row in best], columns=["role", *cols])}
    for f in result.fronts:
        out[f"front:{f.name}"] = pd.DataFrame([result.designs[i].model_dump() for i in f.indices], columns=cols)
    out["confirmations"] = pd.DataFrame([{"label": c.row.label, **c.confirmation.model_dump()}
                                         for c in result.candidates if c.confirmation is not None],
                                        columns=["label", *Confirmation.model_fields])
    return out
