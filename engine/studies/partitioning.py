"""The Partitioning page's question: PARIS against homogeneous and random partitions, on one server.

`partitioning_study` plans every policy (engine.partition.plan) for a seed-like base scenario and rates
each analytically: capacity and latency-bounded (SLA-bounded) throughput under FIFS. The analytic
engine does not model ELSA's size-aware routing (it prices ELSA as FIFS), so ELSA against FIFS is
answered by the simulator on demand: `simulate_study` bisects each policy's latency-bounded
throughput under both schedulers (engine.partition.bounded, PARIS/ELSA seed Sec VI-B).
Rates in requests/s, times in ms.
"""

from __future__ import annotations

from typing import Callable, Optional

from pydantic import BaseModel, ConfigDict

from engine.analytic import build_design, capacity, sla_bounded_rate
from engine.partition.bounded import sim_bounded_rate
from engine.partition.pack import PackingError
from engine.partition.paris import ParisResult
from engine.partition.plan import batch_dist, plan, seed_sla_ms
from engine.profiles import ProfileError
from engine.scenario import Scenario, ScenarioError, load_scenario
from engine.vocab import PartitionPolicy

STUDY_POLICIES = ("gpu1", "gpu2", "gpu3", "gpu4", "gpu7", "gpu-max", "random", "paris")
SIM_SCHEDULERS = ("fifs", "elsa")

#: The PARIS/ELSA seed's own case, the Partitioning page's default: its four-A100 server with the same 24 GPCs for
#: every design (Sec V, Table I; the MobileNet rows of data/seed/rpc_figures.csv), query sizes log-normal on 1..32
#: (Sec V) and the p95 SLA of 1.5 x GPU(7) at the largest batch. The seed gives no log-normal parameters; mu = sigma =
#: 1.5 is the wide distribution of its Sec VI-C (Fig 13a), where a heterogeneous partition pays most.
SEED_GPUS, SEED_GPCS, SEED_PERCENTILE = 4, 24, 95.0
SEED_QUERY_SIZE = {"kind": "lognormal", "mu": 1.5, "sigma": 1.5, "max_size": 32}


class PolicyRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    policy: str
    instances: dict[str, int]
    gpus_used: int
    gpcs_used: int
    layouts: list[list[str]]
    scenario: dict
    capacity_rps: float
    bounded_fifs_rps: float  # analytic latency-bounded throughput with FIFS
    notes: list[str]


class PartitioningStudy(BaseModel):
    model_config = ConfigDict(frozen=True)

    sku: str
    gpus: int
    max_gpcs: int
    dist: dict[int, float]  # batch-size PDF
    sla_ms: float
    percentile: float
    paris: Optional[ParisResult]
    rows: list[PolicyRow]
    skipped: dict[str, str]  # policy -> why it has no row


class SimRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    policy: str
    scheduler: str
    bounded_rps: float
    capacity_rps: float
    probes: list[tuple[float, float, bool]]


def seed_like_scenario(book, model: str, sku: str, gpus: int, query_size: dict, sla_ms: Optional[float] = None,
                       percentile: float = 95.0) -> dict:
    """The seed's evaluation set-up (Sec V) as scenario data: each query runs at its own size (no batching
    across queries), no preprocessing and a local RPC path so the GPUs decide, and SLA = 1.5 x GPU(7)'s
    latency at the largest batch unless `sla_ms` is given. Bad parts raise ScenarioError naming the field."""
    data = {"name": f"{model} on {gpus} x {sku}", "model": model, "gpu": {"sku": sku, "count": gpus},
            "batching": {"policy": "none"}, "preprocessing": {"device": "none"}, "rpc": {"preset": "local"},
            "workload": {"query_size": query_size, "sla": {"percentile": percentile}}}
    largest = load_scenario(data, book).workload.query_size.largest  # validated first, so errors name the field
    sla = sla_ms if sla_ms else seed_sla_ms(book, model, sku, max_batch=largest)
    data["workload"]["sla"]["latency_ms"] = sla
    return data


def partitioning_study(base: Scenario, ctx, max_gpcs: Optional[int] = None, seed: int = 0,
                    policies=STUDY_POLICIES) -> PartitioningStudy:
    """Plan and rate (analytically, FIFS) every policy on the base scenario's GPUs."""
    rows, skipped, paris_res = [], {}, None
    for name in policies:
        try:
            p = plan(name, base, ctx, max_gpcs=max_gpcs, seed=seed)
            sc = load_scenario({**p.scenario, "scheduler": {"policy": "fifs"}}, ctx.book)
            d = build_design(sc, ctx)
            rows.append(PolicyRow(policy=name, instances=p.instances, gpus_used=p.gpus_used, gpcs_used=p.gpcs_used,
                                  layouts=p.layouts, scenario=p.scenario, capacity_rps=capacity(d)[0],
                                  bounded_fifs_rps=sla_bounded_rate(d), notes=list(p.notes)))
            if p.paris is not None:
                paris_res = p.paris
        except (PackingError, ProfileError, ScenarioError, ValueError) as e:
            skipped[name] = str(e)
    if not rows:
        raise PackingError("no partitioning policy can serve this scenario: "
                           + "; ".join(f"{k}: {v}" for k, v in skipped.items()))
    d0 = build_design(load_scenario(rows[0].scenario, ctx.book), ctx)
    gpu = ctx.book.gpu(base.gpu.sku)
    return PartitioningStudy(sku=gpu.sku, gpus=base.gpu.count,
                          max_gpcs=max_gpcs or base.gpu.count * gpu.compute_slices, dist=batch_dist(base),
                          sla_ms=d0.sla_s * 1e3, percentile=d0.sla_percentile * 100, paris=paris_res, rows=rows,
                          skipped=skipped)


def simulate_study(study: PartitioningStudy, ctx, policies=("gpu-max", "random", "paris"),
                   schedulers=SIM_SCHEDULERS, n_requests: int = 10_000, seed: int = 0, alpha: float = 1.5,
                   progress: Optional[Callable[[float], None]] = None) -> list[SimRow]:
    """Simulated latency-bounded throughput of the chosen policies under each scheduler.

    ELSA gets slack margin `alpha` (seed Sec IV-C, eq. 2): its predictor uses profiled means while the
    simulated service times vary, so alpha > 1 keeps it from queueing work right up to the SLA.
    """
    chosen = [r for r in study.rows if r.policy in policies]
    unknown = set(policies) - {p.value for p in PartitionPolicy}
    if unknown:
        raise PackingError(f"unknown policies {sorted(unknown)}; valid: {', '.join(p.value for p in PartitionPolicy)}")
    out, jobs = [], [(r, s) for r in chosen for s in schedulers]
    for k, (row, sched) in enumerate(jobs):
        spec = {"policy": sched, "alpha": alpha} if sched == "elsa" else {"policy": sched}
        b = sim_bounded_rate({**row.scenario, "scheduler": spec}, ctx, n_requests=n_requests, seed=seed)
        out.append(SimRow(policy=row.policy, scheduler=sched, bounded_rps=b.rate_rps, capacity_rps=b.capacity_rps,
                          probes=b.probes))
        if progress:
            progress((k + 1) / len(jobs))
    return out


def policy_label(policy: str) -> str:
    """A policy as the seed names it: 'gpu3' -> 'GPU(3)', 'gpu-max' -> 'GPU(max)', 'paris' -> 'PARIS'."""
    if policy == "paris":
        return "PARIS"
    if policy.startswith("gpu"):
        return f"GPU({policy[3:].lstrip('-')})"
    return policy


class PartitionVerdict(BaseModel):
    """PARIS against the best baseline: simulated (FIFS and ELSA for GPU(max), random and PARIS) when there is a
    simulation, else the analytic FIFS rates of every policy. Rates are latency-bounded throughputs, requests/s."""

    model_config = ConfigDict(frozen=True)

    simulated: bool
    paris_rps: float
    paris_scheduler: str
    baseline: str  # the best baseline policy
    baseline_scheduler: str
    baseline_rps: float

    @property
    def paris_wins(self) -> bool:
        return self.paris_rps > self.baseline_rps

    def explain(self) -> str:
        """Who wins, by how much, in words; when a baseline wins it says so first."""
        paris = f"PARIS + {self.paris_scheduler.upper()}"
        base = f"{policy_label(self.baseline)} + {self.baseline_scheduler.upper()}"
        ratio = (f"{self.paris_rps / self.baseline_rps:.2f}x" if self.baseline_rps > 0 else "")
        if not self.simulated:
            text = (f"Analytically, under first-idle-first-served (FIFS), PARIS carries {self.paris_rps:,.0f} req/s "
                    f"within the SLA and the best baseline, {policy_label(self.baseline)}, {self.baseline_rps:,.0f}.")
            if self.paris_rps <= 0:
                text += (" FIFS sends large queries to whichever slice is idle, small ones included, and they miss "
                         "the SLA; PARIS is built for ELSA's size-aware routing, which only the simulator runs.")
            return text + " Simulate to compare with ELSA."
        if self.paris_wins:
            return (f"PARIS wins: {paris} carries {self.paris_rps:,.0f} req/s within the SLA, "
                    + (f"{ratio} the best baseline" if ratio else "while the best baseline carries nothing")
                    + f" ({base}, {self.baseline_rps:,.0f} req/s).")
        return (f"A baseline wins here: {base} carries {self.baseline_rps:,.0f} req/s within the SLA, PARIS "
                f"{self.paris_rps:,.0f} ({paris}). PARIS sizes its partitions for the batch-size distribution; "
                "with these inputs a simpler partition serves it better.")


def verdict(study: PartitioningStudy, sim: Optional[list[SimRow]] = None) -> Optional[PartitionVerdict]:
    """PARIS against the best baseline (PartitionVerdict), or None when PARIS could not be planned."""
    if sim:
        rated = [(s.policy, s.scheduler, s.bounded_rps) for s in sim]
    else:
        rated = [(r.policy, "fifs", r.bounded_fifs_rps) for r in study.rows]
    paris = [r for r in rated if r[0] == "paris"]
    baselines = [r for r in rated if r[0] != "paris"]
    if not paris or not baselines:
        return None
    best_paris = max(paris, key=lambda r: r[2])
    best_base = max(baselines, key=lambda r: r[2])
    return PartitionVerdict(simulated=bool(sim), paris_rps=best_paris[2], paris_scheduler=best_paris[1],
                            baseline=best_base[0], baseline_scheduler=best_base[1], baseline_rps=best_base[2])
