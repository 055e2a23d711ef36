"""SimResult: what a simulation run reports (fields and models, engine.results, shared with
engine.analytic.evaluate.Evaluation where they overlap: name, rate_rps, stable, unstable_reason, capacity_rps,
utilization, latency_ms, breakdown_ms, sla, batching, partitions), plus confidence intervals, throughput, SLA
violation rate, mean number in system, batch sizes and, for traces, a time series. Times are ms in results.

The per-request records (numpy columns: arrival, each stage's start and end, batch, batch start,
end, partition, size...) stay on the result as `records` (not serialised)."""

from __future__ import annotations

import json
import math
from typing import ClassVar, Optional

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from engine.results import LatencySummary, SimulatedBatching, SimulatedPartition, SlaOutcome

# two-sided 95 % Student t quantiles by degrees of freedom (batch-means confidence intervals)
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093,
        20: 2.086, 24: 2.064, 29: 2.045}


def t975(dof: int) -> float:
    """The 97.5 % Student t quantile with `dof` degrees of freedom (the tabled one below it; an approximation
    past 29)."""
    if dof in T975:
        return T975[dof]
    below = [tabled for tabled in T975 if tabled <= dof]
    return T975[max(below)] if dof <= 29 else 1.96 + 2.4 / dof


class SimRecords:
    """Per-request columns (numpy arrays, one entry per request, seconds)."""

    def __init__(self, columns: dict[str, np.ndarray], measured_from: int):
        self.columns = columns
        self.measured_from = measured_from  # requests before this index are the warm-up

    def __len__(self) -> int:
        return len(self.columns["arrival"])

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    def frame(self):
        import pandas as pd

        return pd.DataFrame(self.columns)


class LatencyHalfWidths(BaseModel):
    """95 % confidence half-widths (ms; throughput_rps in req/s) of a run's latency summary, its SLA-percentile
    latency and its throughput: batch means; percentiles by batch means on the exceedance indicator, inverted
    (engine.sim.stats.quantile_ci). None where the run has too few batches (or, for throughput, is not open loop)."""

    model_config = ConfigDict(frozen=True)

    mean: Optional[float]
    p50: Optional[float]
    p95: Optional[float]
    p99: Optional[float]
    sla: Optional[float]  # of the SLA-percentile latency (SlaOutcome.latency_at_rate_ms)
    throughput_rps: Optional[float] = None

    LABELS: ClassVar[dict[str, str]] = {
        "mean": "mean latency ±95% (ms)", "p50": "p50 latency ±95% (ms)", "p95": "p95 latency ±95% (ms)",
        "p99": "p99 latency ±95% (ms)", "sla": "SLA-percentile latency ±95% (ms)",
        "throughput_rps": "throughput ±95% (req/s)"}


class SimResult(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str
    workload: str
    seed: int
    n_requests: int
    n_measured: int
    warmup_requests: int
    sim_time_s: float
    rate_rps: float  # offered (open loop); 0 for offline and closed loop
    capacity_rps: float
    stable: bool
    unstable_reason: Optional[str]
    queue_growth_rps: float
    throughput_rps: float
    latency_ms: LatencySummary  # mean, p50, p95, p99 (the SLA percentile's is sla.latency_at_rate_ms)
    ci: LatencyHalfWidths
    sla: SlaOutcome  # bound, percentile, met, the simulated SLA-percentile latency
    sla_violation_rate: float
    mean_in_system: float
    little: dict[str, float]  # L (time average), lambda, W (s), relative error of L = lambda W
    utilization: dict[str, float]  # per stage, 'gpu' and 'gpu:<label>'
    breakdown_ms: dict[str, float]
    batch_size_histogram: dict[int, int]
    batching: SimulatedBatching
    partitions: list[SimulatedPartition]
    mlperf: Optional[dict[str, object]] = None
    timeseries: Optional[dict[str, list[float]]] = None
    stats_engine: str
    wall_s: float
    notes: list[str]
    records: Optional[SimRecords] = Field(None, exclude=True, repr=False)

    def to_dict(self) -> dict:
        return _clean(self.model_dump())

    def to_json(self, indent: int = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent)


def _clean(value):
    """JSON-ready: nan and inf become None, numpy scalars Python ones, dict keys strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(key): _clean(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(item) for item in value]
    if isinstance(value, np.generic):
        return _clean(value.item())
    return value
