"""The GPU side of a design: its partitions, their service-time curves and the batching parameters.

Everything here is independent of the arrival rate, so it is built once per
design and reused at every rate of a sweep or bisection (engine.analytic.rates).
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np
from pydantic import BaseModel, ConfigDict, PrivateAttr

from engine.catalog import validate_layout
from engine.profiles import ProfileBook, ProfileError
from engine.profiles.curves import Curve
from engine.profiles.service import batch_provenance
from engine.profiles.knee import KneeRule
from engine.scenario import BatchingPolicy, Scenario, require_gpu

KNEE_RULE = KneeRule.UTILIZATION  # PREBA/PARIS: Batch_max from the utilisation knee
KNEE_PERCENTILE = 95  # PREBA section 3.2 plots p95
MAX_ANSWERS = 4096  # rate points one GPU side remembers (a sweep or bisection uses about 100)


class Partition(BaseModel):
    """One GPU instance serving the model, with its service-time table (s) over batches 1..max_batch."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    gpu_index: int
    name: str  # 'full', a MIG profile, or 'mps:N'
    label: str  # e.g. 'GPU0 3g.20gb@4'
    provenance: str
    max_batch: int  # Batch_max in items (knee, or the policy's cap), within the curve and memory
    knee_batch: int
    knee_time_s: float
    mean_s: np.ndarray  # index b-1 -> mean batch service time (s), b = 1..curve max
    tail_s: np.ndarray  # same, at the scenario's SLA percentile

    def service(self, b: float) -> float:
        """Mean service time (s) of a batch of b items, linear between integer batches."""
        b = min(max(b, 1.0), len(self.mean_s))
        i = int(math.floor(b))
        if i >= len(self.mean_s):
            return float(self.mean_s[-1])
        f = b - i
        return float(self.mean_s[i - 1] * (1 - f) + self.mean_s[i] * f)

    def tail(self, b: float) -> float:
        b = int(round(min(max(b, 1.0), len(self.tail_s))))
        return float(self.tail_s[b - 1])


class GpuSide(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    partitions: tuple[Partition, ...]
    policy: BatchingPolicy
    time_queue_s: float  # Time_queue (0 when batches never wait for a timeout)
    knee_rule: str
    input_len: Optional[float]
    notes: tuple[str, ...]
    # answers of pure functions of this (immutable) side, e.g. its state at a rate: a sweep's designs
    # share one GpuSide across preprocessing devices and hosts, so each rate is worked out once
    _answers: dict = PrivateAttr(default_factory=dict)

    def remember(self, key: tuple, make):
        if key not in self._answers:
            if len(self._answers) >= MAX_ANSWERS:  # a long-lived server: forget the oldest, stay bounded
                del self._answers[next(iter(self._answers))]
            self._answers[key] = make()
        return self._answers[key]

    def with_partitions(self, partitions: tuple[Partition, ...]) -> "GpuSide":
        """The same side with other partitions (and none of this side's remembered answers)."""
        return GpuSide(partitions=partitions, policy=self.policy, time_queue_s=self.time_queue_s,
                       knee_rule=self.knee_rule, input_len=self.input_len, notes=self.notes)


def instance_names(scenario: Scenario, book: ProfileBook) -> list[tuple[int, str, str]]:
    """(gpu index, partition, label) of every instance the scenario's GPUs are cut into."""
    gpu = book.catalog.gpu(require_gpu(scenario, "MIG layouts and GPU% shares").sku)
    out = []
    for g in range(scenario.gpu.count):
        if scenario.gpu.shares is not None:
            out += [(g, f"mps:{s:g}", f"GPU{g} {s:g}%") for s in scenario.gpu.shares]
            continue
        layout = (scenario.gpu.layouts[g] if scenario.gpu.layouts is not None
                  else scenario.gpu.layout)
        if layout is None:
            out.append((g, "full", f"GPU{g} full"))
            continue
        for inst in validate_layout(gpu, layout).instances:
            out.append((g, inst.profile, f"GPU{g} {inst.label()}"))
    return out


def effective_length(scenario: Scenario, lengths: list[float]) -> Optional[float]:
    """The input length the analytic model prices a batch at (its longest member's expected length).

    A batch costs as its longest member (DESIGN.md section 5); the analytic model
    uses the distribution's 90th percentile as that expected maximum, clipped to
    the profiled lengths. Fixed-size models have no length.
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


def build_gpu_side(scenario: Scenario, book: ProfileBook) -> GpuSide:
    """Partitions with their curves, Batch_max per partition and Time_queue for the scenario's policy."""
    if scenario.fpga is not None:  # FPGA hardware threads stand in for partitions (engine.fpga.backend)
        from engine.fpga.backend import build_fpga_side

        return build_fpga_side(scenario, book)
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
    for g, name, label in insts:
        if name not in cache:
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
            cache[name] = (curve, grid, knee)
        curve, grid, knee = cache[name]
        cap = _batch_cap(scenario, knee.batch, len(grid))
        parts.append(Partition(gpu_index=g, name=name, label=label, provenance=batch_provenance(curve, cap),
                               max_batch=cap,
                               knee_batch=knee.batch, knee_time_s=knee.time_s, mean_s=curve.mean(grid),
                               tail_s=curve.tail(grid, pct)))
    policy = scenario.batching.policy
    tq = _time_queue(scenario, parts)
    if any(p.provenance.startswith("derived") for p in parts):
        notes.append("some partitions have no own points: service times derived with the slice law")
    return GpuSide(partitions=tuple(parts), policy=policy, time_queue_s=tq, knee_rule=KNEE_RULE.value,
                   input_len=length, notes=tuple(notes))


def _first_len(book, model, sku, partition, precision):
    src = book._source(model, sku, partition, precision, None, False)
    lens = book.lengths(model, *src)
    return lens[len(lens) // 2]


def _curve_at(book: ProfileBook, model, sku, partition, precision, length, lengths) -> Curve:
    """The curve at the profiled length at or above `length` (a conservative price for the batch)."""
    if length is None:
        return book.curve(model, sku, partition, precision)
    at = next(l for l in lengths if l >= length - 1e-9)
    return book.curve(model, sku, partition, precision, input_len=at)


def _batch_cap(scenario: Scenario, knee: int, top: int) -> int:
    policy = scenario.batching.policy
    if policy == BatchingPolicy.NONE:
        return min(top, scenario.workload.query_size.largest)
    if policy == BatchingPolicy.PREBA:
        return min(top, knee)  # PREBA 4.3: Batch_max = Batch_knee
    want = scenario.batching.max_batch if scenario.batching.max_batch is not None else knee
    return max(1, min(top, want))


def _time_queue(scenario: Scenario, parts: list[Partition]) -> float:
    policy = scenario.batching.policy
    if policy in (BatchingPolicy.NONE, BatchingPolicy.WORK_CONSERVING):
        return 0.0
    if scenario.batching.max_queue_delay_ms is not None and policy == BatchingPolicy.FIXED:
        return scenario.batching.max_queue_delay_ms / 1e3
    # PREBA 4.3: Time_queue = Time_knee of one vGPU / number of vGPUs
    return min(p.knee_time_s for p in parts) / len(parts)
