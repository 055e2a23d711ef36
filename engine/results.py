"""The result models both engines share: engine.analytic.evaluate.Evaluation and engine.sim.result.SimResult
report latency, the SLA outcome, batching and per-partition outcomes in these frozen models, and the analytic
engine its host-CPU use and cost too.

Each model keeps the display label of every field (with its unit) in `LABELS`, beside the fields, so pages,
charts and reports read values by attribute and take their labels from here rather than keying or parsing
strings. Times are ms, rates requests/s, money USD.
"""

import math
from typing import ClassVar, Optional

from pydantic import BaseModel, ConfigDict

from engine.vocab import SlaLimitKind


class LatencySummary(BaseModel):
    """End-to-end latency (ms): the mean and the standard percentiles (inf when unstable)."""

    model_config = ConfigDict(frozen=True)

    mean: float
    p50: float
    p95: float
    p99: float

    LABELS: ClassVar[dict[str, str]] = {"mean": "mean latency (ms)", "p50": "p50 latency (ms)",
                                        "p95": "p95 latency (ms)", "p99": "p99 latency (ms)"}


class SlaOutcome(BaseModel):
    """The SLA (percentile, bound) and whether the latency at that percentile, at the rate, meets it."""

    model_config = ConfigDict(frozen=True)

    latency_ms: float  # the bound
    percentile: float  # e.g. 99.0
    met: bool
    latency_at_rate_ms: float  # the SLA-percentile latency at the evaluated (or simulated) rate

    LABELS: ClassVar[dict[str, str]] = {"latency_ms": "SLA bound (ms)", "percentile": "SLA percentile",
                                        "met": "meets SLA",
                                        "latency_at_rate_ms": "tail latency at offered load (ms)"}


class SlaLimit(BaseModel):
    """Why the SLA-bounded throughput is what it is: a latency floor (no load meets the SLA, or the unloaded latency
    leaves so little of the bound that it is lost below half the capacity) or saturation (the SLA holds until
    queueing at the bottleneck stage takes it). engine.analytic.operating_point.sla_limit computes it."""

    model_config = ConfigDict(frozen=True)

    kind: SlaLimitKind
    sla_ms: float  # the bound
    percentile: float  # e.g. 99.0
    sla_bounded_rps: float  # 0 when no load meets the SLA
    capacity_rps: float
    bottleneck: str  # the stage that saturates first
    floor_rate_rps: float  # the lowest load the SLA-bounded search tries
    floor_ms: float  # the SLA-percentile latency there
    floor_by_stage_ms: dict[str, float]  # each stage's share of floor_ms, largest first

    LABELS: ClassVar[dict[str, str]] = {
        "kind": "what limits the SLA-bounded throughput", "sla_ms": "SLA bound (ms)", "percentile": "SLA percentile",
        "sla_bounded_rps": "SLA-bounded throughput (req/s)", "capacity_rps": "capacity (req/s)",
        "bottleneck": "bottleneck", "floor_rate_rps": "lowest load tried (req/s)",
        "floor_ms": "tail latency at the lowest load (ms)", "floor_by_stage_ms": "its share per stage (ms)"}
    MAIN_SHARE: ClassVar[float] = 0.1  # stages named in words: those carrying at least this share of the floor

    def main_stages(self) -> list[str]:
        """'stage 12.3 ms' for the stages that make most of the floor (at least MAIN_SHARE of it, at most 3)."""
        big = [(name, ms) for name, ms in self.floor_by_stage_ms.items() if ms >= self.MAIN_SHARE * self.floor_ms]
        return [f"{name} {ms:,.1f} ms" for name, ms in big[:3]]

    def explain(self, rate_rps: float) -> str:
        """The limit in words, with the bottleneck's load at `rate_rps` (the offered load)."""
        p, bound = f"p{self.percentile:g}", f"{self.sla_ms:g} ms"
        floor = (f"the {p} is {self.floor_ms:,.1f} ms even at {self.floor_rate_rps:,.0f} req/s "
                 f"({', '.join(self.main_stages())})")
        cap = self.capacity_rps if self.capacity_rps > 0 else math.nan  # a design that serves nothing: no share
        load = (f"at the offered {rate_rps:,.0f} req/s the bottleneck, {self.bottleneck}, is "
                f"{rate_rps / cap:.0%} busy (capacity {self.capacity_rps:,.0f} req/s)")
        share = self.sla_bounded_rps / cap
        if self.kind == SlaLimitKind.LATENCY_FLOOR and self.sla_bounded_rps <= 0:
            return (f"A latency floor, not saturation: no load meets the {bound} SLA, because {floor}; {load}. "
                    "Shorten the path (a faster preprocessing device or RPC path, smaller batches) rather than "
                    "adding capacity.")
        if self.kind == SlaLimitKind.LATENCY_FLOOR:
            return (f"A latency floor: the {bound} SLA holds only up to {self.sla_bounded_rps:,.0f} req/s, {share:.0%} "
                    f"of the capacity, because {floor}, leaving little of the bound for queueing; {load}.")
        return (f"Saturation: the {bound} SLA holds up to {self.sla_bounded_rps:,.0f} req/s ({share:.0%} of the "
                f"capacity), where queueing at {self.bottleneck} (capacity {self.capacity_rps:,.0f} req/s) takes the "
                f"{p} past the bound; without load it is {self.floor_ms:,.1f} ms.")


class HostCpuUse(BaseModel):
    """Host CPU cores used by each consumer (host stage) at the rate, their sum, and the cores free for serving
    and reserved (for the OS and other work)."""

    model_config = ConfigDict(frozen=True)

    cores: dict[str, float]  # per consumer (stage name)
    used: float
    free: float
    reserved: float

    LABELS: ClassVar[dict[str, str]] = {"cores": "cores per consumer", "used": "used (cores)",
                                        "free": "free for serving (cores)", "reserved": "reserved (cores)"}
    #: the totals' names as rows beside the consumers (a table's 'consumer' column, in cores)
    TOTALS: ClassVar[dict[str, str]] = {"used": "used", "free": "free for serving", "reserved": "reserved"}

    def rows(self) -> list[tuple[str, float]]:
        """(consumer, cores): each consumer, then the used, free-for-serving and reserved totals."""
        return [*self.cores.items(), *((name, getattr(self, field)) for field, name in self.TOTALS.items())]


class BatchingSummary(BaseModel):
    """The batching policy in force: Time_queue, Batch_max per partition and the knee rule it came from."""

    model_config = ConfigDict(frozen=True)

    policy: str
    time_queue_ms: float
    knee_rule: str
    batch_max: list[int | list[int]]  # per partition; the simulator's caps per input-length bucket are a list

    LABELS: ClassVar[dict[str, str]] = {"policy": "batching policy", "time_queue_ms": "Time_queue (ms)",
                                        "knee_rule": "knee rule", "batch_max": "Batch_max per partition"}


class SimulatedBatching(BatchingSummary):
    """The simulator's batching: BatchingSummary and its input-length buckets."""

    bucket_width: float  # input-length bucket width (0: no buckets)
    merge: bool  # whether neighbouring buckets merge

    LABELS: ClassVar[dict[str, str]] = {**BatchingSummary.LABELS, "bucket_width": "bucket width (items)",
                                        "merge": "buckets merge"}


class PartitionOutcome(BaseModel):
    """One accelerator partition: what it is, its Batch_max and its busy fraction."""

    model_config = ConfigDict(frozen=True)

    label: str
    partition: str
    batch_max: int | list[int]
    utilization: float

    LABELS: ClassVar[dict[str, str]] = {"label": "label", "partition": "partition", "batch_max": "Batch_max",
                                        "utilization": "busy fraction"}


class AnalyticPartition(PartitionOutcome):
    """The analytic engine's partition: PartitionOutcome, where its profile came from, its knee and the batch it
    runs at the rate with that batch's service time."""

    provenance: str
    knee_batch: int
    time_knee_ms: float
    batch: float
    service_ms: float

    LABELS: ClassVar[dict[str, str]] = {  # in the order the Design page and the report show the columns
        "label": "label", "partition": "partition", "provenance": "profile provenance", "batch_max": "Batch_max",
        "knee_batch": "knee batch", "time_knee_ms": "time at the knee (ms)", "batch": "batch at the rate",
        "service_ms": "service time (ms)", "utilization": "busy fraction"}


class SimulatedPartition(PartitionOutcome):
    """The simulator's partition: PartitionOutcome, the batches and requests it served in the measured window
    and their latency."""

    batches: int
    requests: int
    mean_batch_items: float
    mean_service_ms: float
    latency_mean_ms: float
    latency_p99_ms: float

    LABELS: ClassVar[dict[str, str]] = {
        **PartitionOutcome.LABELS, "batches": "batches", "requests": "requests",
        "mean_batch_items": "mean batch (items)", "mean_service_ms": "mean service (ms)",
        "latency_mean_ms": "mean latency (ms)", "latency_p99_ms": "p99 latency (ms)"}


class CostSummary(BaseModel):
    """TCO over the cost period at the priced throughput; queries per USD and per joule are None when the
    design serves nothing on its cost basis."""

    model_config = ConfigDict(frozen=True)

    capex_usd: float
    opex_usd: float
    tco_usd: float
    queries_per_usd: Optional[float]
    queries_per_joule: Optional[float]
    wall_power_w: float
    throughput_rps: float
    years: float
    capex_breakdown_usd: dict[str, float]  # CAPEX per item (gpus, servers, ...)

    LABELS: ClassVar[dict[str, str]] = {
        "capex_usd": "CAPEX (USD)", "opex_usd": "OPEX (USD)", "tco_usd": "TCO (USD)",
        "queries_per_usd": "queries per USD", "queries_per_joule": "queries per joule",
        "wall_power_w": "wall power (W)", "throughput_rps": "priced throughput (req/s)",
        "years": "cost period (years)", "capex_breakdown_usd": "CAPEX per item (USD)"}
    UNITS: ClassVar[dict[str, str]] = {
        "capex_usd": "USD", "opex_usd": "USD", "tco_usd": "USD", "queries_per_usd": "queries/USD",
        "queries_per_joule": "queries/J", "wall_power_w": "W", "throughput_rps": "requests/s", "years": "years",
        "capex_breakdown_usd": "USD"}
