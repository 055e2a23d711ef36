"""A design prepared for evaluation: everything that does not depend on the arrival rate."""

from collections import Counter

import numpy as np
from typing import Optional

from pydantic import BaseModel, ConfigDict

from engine.accelerator_side import GpuSide
from engine.analytic.accelerators import backend_of
from engine.analytic.lengths import query_size_pmf
from engine.analytic.sla import sla_of
from engine.catalog import MigContention, busy_slices_factor, mig_contention
from engine.scenario import Scenario
from engine.stages import StageCost
from engine.vocab import SchedulerPolicy



class Design(BaseModel):
    """Rate-independent parts of a scenario: stages in pipeline order, GPU side, query sizes, SLA."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    scenario: Scenario
    host_stages: tuple[StageCost, ...]  # RPC/host CPU, preprocessing, ... (before the batcher)
    gpu: GpuSide
    gpu_overhead_s: float  # per-batch orchestration/completion time added to GPU service (RPC path)
    scheduler: SchedulerPolicy
    q_pmf: np.ndarray  # P(query has k items), k = 1..len
    q_mean: float
    sla_s: float
    sla_percentile: float
    notes: tuple[str, ...]

    @property
    def accelerator(self) -> str:
        """The name of the accelerator stage in capacities, utilisations and breakdowns: 'gpu' or 'fpga'."""
        return "fpga" if self.scenario.fpga is not None else "gpu"


def contention_of(scenario: Scenario) -> Optional[MigContention]:
    """The all-slices contention of a MIG-partitioned scenario (None for a whole GPU, GPU% shares or FPGAs):
    the scenario's `gpu.mig_contention` if set, else the GPU family's published value (engine.catalog)."""
    g = scenario.gpu
    if scenario.fpga is not None or g is None or (g.layout is None and g.layouts is None):
        return None
    published = mig_contention(g.sku, scenario.model)
    if g.mig_contention is None:
        return published
    return MigContention(factor=g.mig_contention, slices=published.slices, basis="set in the scenario",
                         source=None)


def with_contention(gpu: GpuSide, contention: Optional[MigContention]) -> tuple[GpuSide, tuple[str, ...]]:
    """The GPU side with every MIG instance slowed by the cost of its GPU's other instances being busy at once.

    Service times (mean and tail) are divided by the slice's throughput factor
    (engine.catalog.busy_slices_factor: 1.0 alone, the published all-slices
    factor with every slice busy). Returns the side and a note saying so.
    """
    if contention is None or contention.factor >= 1.0:
        return gpu, ()
    per_gpu = Counter(p.gpu_index for p in gpu.partitions)
    if max(per_gpu.values()) <= 1:
        return gpu, ()
    parts = []
    for p in gpu.partitions:
        f = busy_slices_factor(contention.factor, per_gpu[p.gpu_index], contention.slices)
        parts.append(p.model_copy(update={"mean_s": p.mean_s / f, "tail_s": p.tail_s / f}))
    note = (f"MIG all-slices contention: each slice serves at {contention.factor:.3f} of its alone throughput with "
            f"{contention.slices} slices busy (linear in the busy instances between; {contention.basis}); "
            "gpu.mig_contention = 1.0 turns it off")
    return gpu.with_partitions(tuple(parts)), (note,)


def prepare(scenario: Scenario, book) -> Design:
    """The GPU side of a design (partitions, batching parameters, query sizes, SLA), without host stages;
    engine.analytic.pipeline.build_design adds those with with_host()."""
    gpu, contention_notes = with_contention(backend_of(scenario).side(scenario, book), contention_of(scenario))
    gpu = gpu.model_copy(update={"notes": gpu.notes + contention_notes})
    pmf = query_size_pmf(scenario)
    return Design(scenario=scenario, host_stages=(), gpu=gpu, gpu_overhead_s=0.0,
                  scheduler=scenario.scheduler.policy, q_pmf=pmf,
                  q_mean=float(np.dot(pmf, np.arange(1, len(pmf) + 1))), sla_s=sla_of(scenario),
                  sla_percentile=scenario.workload.sla.percentile / 100, notes=gpu.notes)


def with_overhead(gpu: GpuSide, gpu_overhead_s: float) -> GpuSide:
    """The GPU side with a per-batch orchestration/completion time added to every batch's service time."""
    if gpu_overhead_s <= 0:
        return gpu
    return gpu.with_partitions(tuple(
        p.model_copy(update={"mean_s": p.mean_s + gpu_overhead_s, "tail_s": p.tail_s + gpu_overhead_s})
        for p in gpu.partitions))


def with_sm_decode(gpu: GpuSide, charges: dict[str, float]) -> GpuSide:
    """The GPU side with each partition's own-SM preprocessing charged to its batches: a batch of b items costs
    b x charges[partition] seconds more (engine.stages.preprocess.sm_decode_s_per_item), mean and tail."""
    if not charges:
        return gpu
    parts = []
    for p in gpu.partitions:
        extra = charges.get(p.name, 0.0) * np.arange(1, len(p.mean_s) + 1)
        parts.append(p.model_copy(update={"mean_s": p.mean_s + extra, "tail_s": p.tail_s + extra}))
    return gpu.with_partitions(tuple(parts))


def with_host(design: Design, scenario: Scenario, host_stages: tuple[StageCost, ...], gpu_overhead_s: float,
              notes: tuple[str, ...], gpu: Optional[GpuSide] = None) -> Design:
    """`design`'s GPU side (shared by scenarios that differ only off the GPU) for `scenario`, with its
    host-side stages and the RPC path's per-batch GPU overhead added (pass `gpu` if already added)."""
    gpu = with_overhead(design.gpu, gpu_overhead_s) if gpu is None else gpu
    return design.model_copy(update={"scenario": scenario, "host_stages": tuple(host_stages), "gpu": gpu,
                                     "scheduler": scenario.scheduler.policy, "sla_s": sla_of(scenario),
                                     "gpu_overhead_s": gpu_overhead_s,
                                     "notes": tuple(dict.fromkeys(design.notes + tuple(notes)))})
