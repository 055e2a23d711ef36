"""A design prepared for evaluation: everything that does not depend on the arrival rate."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
from typing import Optional

from pydantic import BaseModel, ConfigDict

from engine.analytic.gpu import GpuSide, build_gpu_side
from engine.scenario import Scenario, SchedulerPolicy
from engine.stages import StageCost

#: MLPerf Inference Server-scenario p99 latency bounds (MLPerf Inference rules, "Benchmarks" table:
#: ResNet-50 15 ms, BERT 130 ms, RNN-T 1000 ms); other models default to 100 ms.
MLPERF_SERVER_P99_MS = {"resnet50": 15.0, "bert-base": 130.0, "bert-large": 130.0, "jasper": 1000.0,
                        "quartznet": 1000.0}
DEFAULT_SLA_MS = 100.0


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


def query_size_pmf(scenario: Scenario) -> np.ndarray:
    """Items per query: fixed, a table, or log-normal discretised to 1..max_size (PARIS section V)."""
    q = scenario.workload.query_size
    if q.kind == "fixed":
        pmf = np.zeros(q.size)
        pmf[-1] = 1.0
        return pmf
    if q.kind == "table":  # a measured or edited distribution, normalised
        pmf = np.zeros(q.largest)
        for k, p in q.table:
            if k <= q.largest:
                pmf[k - 1] += p
        return pmf / pmf.sum()
    k = np.arange(1, q.max_size + 1, dtype=float)
    nd = NormalDist(q.mu, q.sigma)
    cdf = np.array([nd.cdf(math.log(x)) for x in np.concatenate([[0.5], k + 0.5])])
    pmf = np.diff(cdf)
    return pmf / pmf.sum()


def sla_of(scenario: Scenario) -> float:
    """The SLA latency bound in seconds: the scenario's, else the model's MLPerf Server bound."""
    ms = scenario.workload.sla.latency_ms
    if ms is None:
        ms = MLPERF_SERVER_P99_MS.get(scenario.model, DEFAULT_SLA_MS)
    return ms / 1e3


def prepare(scenario: Scenario, book) -> Design:
    """The GPU side of a design (partitions, batching parameters, query sizes, SLA), without host stages;
    engine.analytic.pipeline.build_design adds those with with_host()."""
    gpu = build_gpu_side(scenario, book)
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


def with_host(design: Design, scenario: Scenario, host_stages: tuple[StageCost, ...], gpu_overhead_s: float,
              notes: tuple[str, ...], gpu: Optional[GpuSide] = None) -> Design:
    """`design`'s GPU side (shared by scenarios that differ only off the GPU) for `scenario`, with its
    host-side stages and the RPC path's per-batch GPU overhead added (pass `gpu` if already added)."""
    gpu = with_overhead(design.gpu, gpu_overhead_s) if gpu is None else gpu
    return design.model_copy(update={"scenario": scenario, "host_stages": tuple(host_stages), "gpu": gpu,
                                     "scheduler": scenario.scheduler.policy, "sla_s": sla_of(scenario),
                                     "gpu_overhead_s": gpu_overhead_s,
                                     "notes": tuple(dict.fromkeys(design.notes + tuple(notes)))})
