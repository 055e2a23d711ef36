"""Partitioning policies by name for a scenario's GPUs: GPU(n), GPU(max), random and PARIS.

Every policy has one signature, (scenario, ctx, gpu, gpus, max_gpcs, seed) -> (layouts, extras),
and `plan(name, ...)` looks it up by PartitionPolicy; an unknown name lists the valid ones. The
result is always packed into valid placed layouts (engine.partition.pack) and comes with the
scenario data that runs it (the base scenario with gpu.layouts), ready for engine.analytic or
engine.sim. PARIS reads the scenario's batch-size distribution (its log-normal query sizes,
discretised as the analytic engine does) and the profile store's service-time model.
"""

from __future__ import annotations

from typing import Callable, Optional

from pydantic import BaseModel, ConfigDict

from engine.catalog import Gpu, MigLayout
from engine.partition.baselines import homogeneous, random_layouts, scenario_with_layouts, size_profile, size_profiles
from engine.partition.pack import MAX_GPUS, PackingError, multiset_of, pack
from engine.partition.paris import MAX_BATCH, ParisResult, paris, paris_input_from_book
from engine.analytic.design import query_size_pmf
from engine.analytic import build_design, sla_bounded_rate
from engine.profiles import ProfileError
from engine.scenario import Scenario, ScenarioError, load_scenario
from engine.vocab import PartitionPolicy

#: Sec V: SLA = N x the latency of the distribution's largest batch on GPU(7), N = 1.5 by default
#: (rpc_figures.csv, PARIS seed Sec V)
SLA_MULTIPLE = 1.5


class PartitionPlan(BaseModel):
    """A partitioning of a scenario's GPUs: placed layouts, the instances, and the scenario that runs it."""

    model_config = ConfigDict(frozen=True)

    policy: PartitionPolicy
    sku: str
    gpus: int  # GPUs available
    gpus_used: int
    layouts: list[list[str]]  # per GPU in use, 'profile@start'
    instances: dict[str, int]
    gpcs_used: int
    max_gpcs: int
    scenario: dict
    paris: Optional[ParisResult] = None
    bounded_rps: dict[str, float] = {}  # GPU(max): analytic SLA-bounded throughput of each size
    notes: list[str] = []


def seed_sla_ms(book, model: str, sku: str, multiple: float = SLA_MULTIPLE, max_batch: int = MAX_BATCH,
                precision: Optional[str] = None) -> float:
    """The seed's SLA in ms (Sec V): `multiple` x the mean latency of a batch of max_batch on GPU(7),
    the largest partition of the GPU."""
    gpu = book.gpu(sku)
    largest = max(size_profiles(gpu, range(1, gpu.compute_slices + 1)).items())[1]
    return multiple * book.predict(model, sku, largest, max_batch, precision=precision).mean_s * 1e3


def batch_dist(scenario) -> dict[int, float]:
    """The scenario's batch-size PDF {items per query: probability} (engine.analytic.lengths.query_size_pmf)."""
    pmf = query_size_pmf(scenario)
    return {b: float(p) for b, p in enumerate(pmf, start=1) if p > 0}


# --------------------------------------------------------------------------- policies

Extras = dict


def _homogeneous(n: int):
    def run(scenario, ctx, gpu: Gpu, gpus: int, max_gpcs: int, seed: int) -> tuple[list[MigLayout], Extras]:
        return homogeneous(gpu, gpus, n, max_gpcs), {}
    return run


def _random(scenario, ctx, gpu: Gpu, gpus: int, max_gpcs: int, seed: int) -> tuple[list[MigLayout], Extras]:
    return random_layouts(gpu, gpus, seed, max_gpcs), {}


def _gpu_max(scenario, ctx, gpu: Gpu, gpus: int, max_gpcs: int, seed: int) -> tuple[list[MigLayout], Extras]:
    """The homogeneous GPU(n) with the largest analytic SLA-bounded throughput (seed Sec VI)."""
    rates: dict[str, float] = {}
    best: Optional[tuple[float, list[MigLayout]]] = None
    notes = []
    for n, profile in size_profiles(gpu).items():
        try:
            layouts = homogeneous(gpu, gpus, n, max_gpcs)
            sc = load_scenario(scenario_with_layouts(scenario, layouts), ctx.book)
            rps = sla_bounded_rate(build_design(sc, ctx))
        except (PackingError, ProfileError, ScenarioError) as e:
            notes.append(f"GPU({n}) = {profile} left out: {e}")
            continue
        rates[f"GPU({n})"] = rps
        if best is None or rps > best[0]:
            best = (rps, layouts)
    if best is None:
        raise PackingError("no homogeneous size can serve this scenario: " + "; ".join(notes))
    return best[1], {"bounded_rps": rates, "notes": notes}


def _paris(scenario, ctx, gpu: Gpu, gpus: int, max_gpcs: int, seed: int) -> tuple[list[MigLayout], Extras]:
    sizes = list(size_profiles(gpu).values())
    inp = paris_input_from_book(ctx.book, scenario.model, gpu.sku, sizes, batch_dist(scenario), max_gpcs,
                                precision=scenario.precision)
    res = paris(inp)
    layouts, notes = fit(gpu, res.instances_rounded, gpus, res.instances, max_gpcs)
    return layouts, {"paris": res, "notes": list(res.notes) + notes}


POLICIES: dict[PartitionPolicy, Callable] = {
    PartitionPolicy.GPU1: _homogeneous(1),
    PartitionPolicy.GPU2: _homogeneous(2),
    PartitionPolicy.GPU3: _homogeneous(3),
    PartitionPolicy.GPU4: _homogeneous(4),
    PartitionPolicy.GPU7: _homogeneous(7),
    PartitionPolicy.GPU_MAX: _gpu_max,
    PartitionPolicy.RANDOM: _random,
    PartitionPolicy.PARIS: _paris,
}


def fit(gpu: Gpu, counts: dict[str, int], gpus: int, targets: dict[str, float],
        max_gpcs: int) -> tuple[list[MigLayout], list[str]]:
    """Pack `counts` onto `gpus` GPUs, repairing what placement rules forbid.

    PARIS keeps the GPC budget but not the placement rules (e.g. one 4g per A100). While the
    packing fails, one instance of the partition most over its fractional target N_k (in GPCs)
    is dropped; then the freed GPCs go, one instance at a time, to the partition furthest below
    its target whose instance still packs. Each change is reported.
    """
    ms = {k: n for k, n in counts.items() if n > 0}
    notes: list[str] = []
    while True:
        try:
            pack(gpu, ms, gpus)
            break
        except PackingError as e:
            if sum(ms.values()) <= 1:
                raise
            k = max(ms, key=lambda k: ((ms[k] - targets.get(k, 0.0)) * gpu.profile(k).compute_slices, k))
            ms[k] -= 1
            if not ms[k]:
                del ms[k]
            notes.append(f"dropped one {k} to fit {gpus} {gpu.sku} ({e})")
    while True:
        left = max_gpcs - sum(n * gpu.profile(k).compute_slices for k, n in ms.items())
        cands = sorted((k for k, t in targets.items() if t > 0 and gpu.profile(k).compute_slices <= left),
                       key=lambda k: (-(targets[k] - ms.get(k, 0)) * gpu.profile(k).compute_slices, k))
        for k in cands:
            trial = {**ms, k: ms.get(k, 0) + 1}
            try:
                pack(gpu, trial, gpus)
            except PackingError:
                continue
            ms = trial
            notes.append(f"added one {k} with the GPCs freed")
            break
        else:
            return pack(gpu, ms, gpus), notes


def plan(policy: str, scenario, ctx, *, gpus: Optional[int] = None, max_gpcs: Optional[int] = None,
         seed: int = 0) -> PartitionPlan:
    """Partition the scenario's GPUs (gpu.sku, gpu.count unless `gpus`) by the named policy, within
    max_gpcs GPCs (default: all of them)."""
    try:
        name = PartitionPolicy(policy)
    except ValueError:
        raise PackingError(f"partitioning policy {policy!r} is unknown; valid: "
                           f"{', '.join(p.value for p in PartitionPolicy)}") from None
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario, ctx.book)
    gpu = ctx.book.gpu(scenario.gpu.sku)
    if not gpu.mig_capable:
        raise PackingError(f"{gpu.sku} does not support MIG: a partitioning policy needs a MIG GPU "
                           "(for GPU% shares see `python -m engine tenancy`)")
    gpus = gpus if gpus is not None else scenario.gpu.count
    if isinstance(gpus, bool) or not isinstance(gpus, int) or not 1 <= gpus <= MAX_GPUS:
        raise PackingError(f"gpus must be a whole number in 1..{MAX_GPUS} (the most one packing spans), got {gpus!r}")
    total = gpus * gpu.compute_slices
    max_gpcs = total if max_gpcs is None else max_gpcs
    if not 1 <= max_gpcs <= total:
        raise PackingError(f"max_gpcs must be in 1..{total} ({gpus} x {gpu.compute_slices} GPCs), got {max_gpcs}")
    layouts, extras = POLICIES[name](scenario, ctx, gpu, gpus, max_gpcs, seed)
    data = scenario_with_layouts(scenario, layouts, name=f"{scenario.name} [{name.value}]")
    used = [lay for lay in layouts if lay.instances]
    return PartitionPlan(policy=name, sku=gpu.sku, gpus=gpus, gpus_used=len(used),
                         layouts=[lay.labels() for lay in used], instances=multiset_of(used),
                         gpcs_used=sum(lay.compute_slices_used for lay in used), max_gpcs=max_gpcs,
                         scenario=data, paris=extras.get("paris"), bounded_rps=extras.get("bounded_rps", {}),
                         notes=extras.get("notes", []))


__all__ = ["PartitionPlan", "PartitionPolicy", "POLICIES", "SLA_MULTIPLE", "batch_dist", "fit", "plan",
           "seed_sla_ms", "size_profile"]
