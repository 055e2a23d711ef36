"""The GPU side of a design: its partitions, their service-time curves and the batching parameters.

Everything here is independent of the arrival rate, so it is built once per
design and reused at every rate of a sweep or bisection (engine.analytic.rates).
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Optional

import numpy as np

from engine.accelerator_side import GpuSide, Link, Partition
from engine.analytic.lengths import LengthDistribution, expected_padded_cost, padded_cost_quantile, query_size_pmf
from engine.analytic.preba_buckets import backlog_cost_ratios, bucket_width
from engine.catalog import validate_layout
from engine.order_stats import median
from engine.profiles import ProfileBook, ProfileError
from engine.profiles.curves import Curve
from engine.profiles.service import batch_provenance
from engine.profiles.tails import lognormal_sigma_for_ratio
from engine.policy_rules import rule_for
from engine.scenario import require_gpu, Scenario
from engine.vocab import KneeRule

KNEE_RULE = KneeRule.UTILIZATION  # PREBA/PARIS: Batch_max from the utilisation knee
KNEE_PERCENTILE = 95  # PREBA section 3.2 plots p95


def instance_names(scenario: Scenario, book: ProfileBook) -> list[tuple[int, str, str]]:
    """(gpu index, partition, label) of every instance the scenario's GPUs are cut into."""
    gpu = book.catalog.gpu(require_gpu(scenario, "MIG layouts and GPU% shares").sku)
    out = []
    for g, layout in enumerate(scenario.gpu.per_gpu_layouts()):
        if scenario.gpu.shares is not None:
            out += [(g, f"mps:{s:g}", f"GPU{g} {s:g}%") for s in scenario.gpu.shares]
            continue
        if layout is None:
            out.append((g, "full", f"GPU{g} full"))
            continue
        for inst in validate_layout(gpu, layout).instances:
            out.append((g, inst.profile, f"GPU{g} {inst.label()}"))
    return out


def effective_length(scenario: Scenario, lengths: list[float]) -> Optional[float]:
    """The design length of a variable-length model: its knee, memory limit and preprocessing are read there.

    The distribution's 90th percentile, clipped to the profiled lengths (a conservative length for the
    knee and the memory limit). Batch service times are not priced here but by the expected longest
    member of each batch size (padded_tables). Fixed-size models have no length.
    """
    if not lengths:
        return None
    spec = scenario.workload.input_len
    if spec.kind == "fixed":
        value = spec.value if spec.value is not None else lengths[len(lengths) // 2]
    elif spec.kind == "uniform":
        value = spec.low + 0.9 * (spec.high - spec.low)
    else:
        value = math.exp(spec.mu + 1.2816 * spec.sigma)
    return float(min(max(value, lengths[0]), lengths[-1]))


def length_rows(book: ProfileBook, scenario: Scenario, partition: str, lengths: list[float]) -> list[np.ndarray]:
    """Mean batch service time (s, index b-1) at every profiled length: the simulator's price of a batch at
    its longest input (interpolated between these rows) and the analytic engine's (padded_tables)."""
    rows = []
    for length in lengths:
        curve = book.curve(scenario.model, scenario.gpu.sku, partition, scenario.precision, input_len=length)
        limit = book.memory_limit(scenario.model, scenario.gpu.sku, partition, length)
        rows.append(curve.mean(curve.grid(limit if limit is not None and limit >= 1 else None)))
    return rows


def members_per_batch(scenario: Scenario, batches: np.ndarray) -> np.ndarray:
    """Requests in a batch of b items: b / (mean items per query), at least 1; one without batching."""
    if not rule_for(scenario.batching.policy).batches:
        return np.ones(len(batches))
    pmf = query_size_pmf(scenario)
    q_mean = float(np.dot(np.arange(1, len(pmf) + 1), pmf))
    return np.maximum(1.0, np.asarray(batches, dtype=float) / q_mean)


def padded_tables(scenario: Scenario, book: ProfileBook, partition: str, lengths: list[float], grid: np.ndarray,
                  jitter_sigma: float, percentile: float) -> tuple[np.ndarray, np.ndarray]:
    """(mean, p-quantile) batch service times (s) over `grid`, each batch padded to its longest member.

    A batch costs as its longest member (DESIGN.md section 5): the expectation and quantile over the
    maximum of its requests' lengths (engine.analytic.lengths: F(x)^r, David and Nagaraja section 2.1),
    with the simulator's per-length rows and its clamping (a batch beyond a length's memory limit is
    priced at that row's last batch). The same for capacity, waits and tails, since all of them read
    Partition.service and Partition.tail.
    """
    rows = length_rows(book, scenario, partition, lengths)
    costs = np.array([[row[min(int(b), len(row)) - 1] for b in grid] for row in rows])
    dist = LengthDistribution.from_spec(scenario.workload.input_len, default=lengths[len(lengths) // 2])
    members = members_per_batch(scenario, grid)
    mean = expected_padded_cost(np.array(lengths), costs, dist, members)
    tail = padded_cost_quantile(np.array(lengths), costs, dist, members, jitter_sigma, percentile / 100)
    return mean, tail


def _uses_backlog_costs(scenario: Scenario, lengths: list[float], insts: list) -> bool:
    """PREBA's length buckets priced by backlog (engine.analytic.preba_buckets): a variable-length model, one instance
    (the chain is for one; several keep the gather-and-queue model) and queries of one item (the buckets count
    requests)."""
    return (len(lengths) > 1 and rule_for(scenario.batching.policy).length_buckets and len(insts) == 1
            and scenario.workload.query_size.largest == 1 and scenario.workload.input_len.kind != "fixed")


def preba_backlog_table(scenario: Scenario, book: ProfileBook, partition: str, lengths: list[float],
                        cap: int) -> np.ndarray:
    """The backlog table of a partition (engine.analytic.preba_buckets.backlog_cost_ratios) from the simulator's
    per-length rows at Batch_max (length_rows, clamped as there) and its bucket width (by the model's input unit)."""
    rows = length_rows(book, scenario, partition, lengths)
    row = np.array([r[min(cap, len(r)) - 1] for r in rows])
    dist = LengthDistribution.from_spec(scenario.workload.input_len, default=lengths[len(lengths) // 2])
    unit = str(book.model_value(scenario.model, "input_unit") or "s")
    return backlog_cost_ratios(np.array(lengths), row, dist, bucket_width(unit), cap)


def build_gpu_side(scenario: Scenario, book: ProfileBook) -> GpuSide:
    """Partitions with their curves, Batch_max per partition and Time_queue for the scenario's policy."""
    model, sku = scenario.model, scenario.gpu.sku
    insts = instance_names(scenario, book)
    probe = book.curve(model, sku, insts[0][1], scenario.precision,
                       input_len=None if book.is_fixed_input(model) else _first_len(book, model, sku, insts[0][1],
                                                                                  scenario.precision))
    src = probe.reference or probe.key
    lengths = [] if book.is_fixed_input(model) else book.lengths(model, src.sku, src.partition, src.precision,
                                                                  src.framework)
    length = effective_length(scenario, lengths)
    pct = scenario.workload.sla.percentile  # a float: p99.9 is its own percentile, not p100
    notes = []
    parts = []
    cache: dict[str, tuple] = {}
    backlogs = _uses_backlog_costs(scenario, lengths, insts)
    for g, name, label in insts:
        if name not in cache:
            def make(name=name):
                return _partition_tables(scenario, book, name, length, lengths, pct)
            # fixed-size inputs: a pure function of the book, so a search's layouts share it (variable lengths
            # price by the scenario's length distribution: worked out per side)
            cache[name] = (make() if lengths else
                           book.derived(("partition tables", model, sku, name, scenario.precision, pct), make))
        curve, grid, knee, mean_s, tail_s, sigma = cache[name]
        cap = _batch_cap(scenario, knee.batch, len(grid))
        backlog = preba_backlog_table(scenario, book, name, lengths, cap) if backlogs else None
        parts.append(Partition(gpu_index=g, name=name, label=label, provenance=batch_provenance(curve, cap),
                               max_batch=cap, knee_batch=knee.batch, knee_time_s=knee.time_s, mean_s=mean_s,
                               tail_s=tail_s, jitter_sigma=sigma, backlog_cost=backlog))
    policy = scenario.batching.policy
    tq = _time_queue(scenario, parts)
    if any(p.provenance.startswith("derived") for p in parts):
        notes.append("some partitions have no own points: service times derived with the slice law")
    estimated = [cache[p.name][0] for p in parts if p.provenance == "estimated"]
    if estimated:
        notes.append(f"no points of {model} on {sku}: service times estimated from the model's operator costs and "
                     f"the GPU's peak rates (engine.estimator), expect about ±{estimated[0].expected_rel_error:.0%}")
    return GpuSide(partitions=tuple(parts), policy=policy, time_queue_s=tq, knee_rule=KNEE_RULE.value,
                   input_len=length, notes=tuple(notes))


def _partition_tables(scenario: Scenario, book: ProfileBook, name: str, length: Optional[float], lengths: list[float],
                      pct: float) -> tuple:
    """(curve, batch grid 1..top, knee, mean, tail, jitter sigma) of the partition `name`: its curve at the design
    length, the batches it can run (its curve within the memory limit) and their service tables."""
    model, sku = scenario.model, scenario.gpu.sku
    curve = _curve_at(book, model, sku, name, scenario.precision, length, lengths)
    limit = book.memory_limit(model, sku, name, length)
    top = curve.max_batch if limit is None else min(curve.max_batch, limit)
    if top < 1:
        raise ProfileError(f"{model} does not fit in {name} of {sku}")
    grid = np.arange(1, top + 1) if curve.min_batch <= 1 else None
    if grid is None:
        raise ProfileError(f"{model} on {sku} {name}: the profile starts at batch {curve.min_batch}; "
                           "batch 1 cannot be answered")
    knee = book.knee(model, sku, name, KNEE_RULE, percentile=KNEE_PERCENTILE, input_len=length,
                     precision=curve.key.precision, framework=curve.key.framework)
    mean_s, tail_s, sigma = _service_tables(scenario, book, name, curve, grid, lengths, pct)
    if not lengths:  # shared by every side of the book's (build_gpu_side): read-only
        for table in (grid, mean_s, tail_s):
            table.setflags(write=False)
    return curve, grid, knee, mean_s, tail_s, sigma


def _service_tables(scenario: Scenario, book: ProfileBook, name: str, curve: Curve, grid: np.ndarray,
                    lengths: list[float], pct: float) -> tuple[np.ndarray, np.ndarray, Optional[float]]:
    """(mean, tail, jitter sigma) of a partition: the curve's own for fixed-size inputs, else padded_tables."""
    if not lengths:
        return curve.mean(grid), curve.tail(grid, pct), None
    z = NormalDist().inv_cdf(pct / 100)
    sigma = lognormal_sigma_for_ratio(median(curve.tail(grid, pct) / curve.mean(grid)), z)
    mean, tail = padded_tables(scenario, book, name, lengths, grid, sigma, pct)
    return mean, tail, sigma


def _first_len(book, model, sku, partition, precision):
    lengths = book.profiled_lengths(model, sku, partition, precision)
    return lengths[len(lengths) // 2]


def _curve_at(book: ProfileBook, model, sku, partition, precision, length, lengths) -> Curve:
    """The curve at the profiled length at or above `length` (a conservative price for the batch)."""
    if length is None:
        return book.curve(model, sku, partition, precision)
    at = next(l for l in lengths if l >= length - 1e-9)
    return book.curve(model, sku, partition, precision, input_len=at)


def _batch_cap(scenario: Scenario, knee: int, top: int) -> int:
    """Batch_max (items) of a partition under the scenario's policy (engine.policy_rules.BatchingRule.batch_max)."""
    return rule_for(scenario.batching.policy).batch_max(top, knee, scenario.batching.max_batch,
                                                        scenario.workload.query_size.largest)


def _time_queue(scenario: Scenario, parts: list[Partition]) -> float:
    """Time_queue (s) under the scenario's policy (engine.policy_rules.BatchingRule.time_queue_s)."""
    return rule_for(scenario.batching.policy).time_queue_s(scenario.batching.max_queue_delay_ms,
                                                           [part.knee_time_s for part in parts])


class GpuBackend:
    """GPUs (whole, MIG or GPU% shares) as a scenario's accelerators: the `gpu` entry of
    engine.analytic.accelerators.BACKENDS."""

    name = "gpu"

    def side(self, scenario: Scenario, book: ProfileBook) -> GpuSide:
        return build_gpu_side(scenario, book)

    def adapted(self, scenario: Scenario) -> Scenario:
        return scenario

    def link(self, scenario: Scenario, book: ProfileBook) -> Link:
        gpu = book.catalog.gpu(scenario.gpu.sku)
        return Link(name=scenario.gpu.sku, pcie_gen=gpu.pcie_gen, decode_gpu=gpu, kernels=None)


GPU = GpuBackend()
