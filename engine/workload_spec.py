"""The workload part of a scenario: how requests arrive, how many items a query has, how long its inputs are,
and the SLA it is judged by."""

import math
from statistics import NormalDist
from typing import Annotated, Optional

from pydantic import Field, field_validator, model_validator

from engine.contract import (MAX_INPUT_LENGTH, MAX_LIST_ITEMS, MAX_LOG_LOCATION, MAX_LOG_SCALE, MAX_MS,
                             MAX_RATE_RPS, MAX_SECONDS, MAX_TIMESTAMP, MAX_TRACE_TIMESTAMPS, MAX_USD,
                             MIN_LOGNORMAL_MASS, PathError, Positive, Spec)
from engine.vocab import InputLenKind, QuerySizeKind, TraceUnit, WorkloadKind


#: what a scenario that still names a trace file is told: a scenario arrives from links and pages, so it never
#: names a file on the server; the person who has the trace hands its content over
TRACE_FILE_REFUSED = ("trace_csv is not accepted: a scenario never names a file on the server; upload the trace "
                      "on the Design page (workload 'trace'), or give it to the CLI as `simulate --trace FILE`, "
                      "which put its timestamps inline in workload.arrival.timestamps")


class ArrivalSpec(Spec):
    """How requests arrive. The analytic engine reads the rate (Poisson); the simulator every kind.

    A trace is carried inline as `timestamps` (at most MAX_TRACE_TIMESTAMPS, finite, >= 0, sorted here);
    it plays at its own mean rate unless a simulation is given a rate, which scales it."""

    kind: WorkloadKind = WorkloadKind.POISSON
    rate_rps: Positive = Field(1000.0, gt=0, le=MAX_RATE_RPS, description="requests per second")
    samples_per_query: int = Field(8, ge=1, le=4096, description="multi-stream: items per query")
    period_s: Positive = Field(60.0, gt=0, le=MAX_SECONDS, description="diurnal: period of the daily cycle (compressed)")
    amplitude: float = Field(0.5, ge=0, le=1, description="diurnal: peak rate = rate x (1 + amplitude)")
    noise_cv: float = Field(0.1, ge=0, le=2, description="diurnal: cv of the multiplicative Gaussian noise")
    noise_interval_s: Positive = Field(1.0, gt=0, le=MAX_SECONDS, description="diurnal: one noise factor per interval")
    timestamps: Optional[list[Annotated[float, Field(ge=0, le=MAX_TIMESTAMP)]]] = Field(
        None, max_length=MAX_TRACE_TIMESTAMPS,
        description="trace: arrival timestamps in trace_unit (from an upload or `simulate --trace`)")
    trace_unit: TraceUnit = "s"

    @model_validator(mode="before")
    @classmethod
    def _no_trace_file(cls, data):
        if isinstance(data, dict) and "trace_csv" in data:
            if data["trace_csv"] is not None:
                raise PathError("workload.arrival.trace_csv", None, TRACE_FILE_REFUSED)
            data = {k: v for k, v in data.items() if k != "trace_csv"}  # null: written by earlier versions
        return data

    @field_validator("timestamps")
    @classmethod
    def _sorted(cls, v: Optional[list[float]]) -> Optional[list[float]]:
        return None if v is None else sorted(v)

    @model_validator(mode="after")
    def _trace_has_timestamps(self) -> "ArrivalSpec":
        if self.kind == WorkloadKind.TRACE and (self.timestamps is None or len(self.timestamps) < 2
                                                  or self.timestamps[-1] <= self.timestamps[0]):
            raise PathError("workload.arrival.timestamps", None,
                             "kind 'trace' needs at least two distinct arrival timestamps: upload a trace on the "
                             "Design page or give the CLI `simulate --trace FILE`")
        return self


class QuerySizeSpec(Spec):
    kind: QuerySizeKind = "fixed"
    size: int = Field(1, ge=1, le=4096, description="items per query (fixed)")
    mu: float = Field(1.0, ge=-MAX_LOG_LOCATION, le=MAX_LOG_LOCATION, description="log-normal location (PARIS section V)")
    sigma: Positive = Field(1.0, gt=0, le=MAX_LOG_SCALE, description="log-normal scale")
    max_size: int = Field(32, ge=1, le=4096, description="truncation: sizes are 1..max_size")
    table: Optional[tuple[tuple[int, Annotated[float, Field(ge=0, le=MAX_USD)]], ...]] = Field(
        None, max_length=MAX_LIST_ITEMS,
        description="table: (items per query, probability) pairs, or {size: probability}; normalised")

    @field_validator("table", mode="before")
    @classmethod
    def _pairs(cls, v):
        if isinstance(v, dict):  # {size: probability}, e.g. from JSON with string keys
            try:
                return tuple(sorted((int(k), float(p)) for k, p in v.items()))
            except (TypeError, ValueError, OverflowError):
                raise ValueError("table: sizes must be integers and probabilities numbers") from None
        return v

    @model_validator(mode="after")
    def _table_ok(self) -> "QuerySizeSpec":
        if self.kind == "table":
            if not self.table:
                raise ValueError("kind 'table' needs table: (items per query, probability) pairs")
            sizes = [k for k, _ in self.table]
            if len(set(sizes)) != len(sizes):
                raise ValueError(f"table lists a query size twice: {sorted(sizes)}")
            bad = [k for k in sizes if not 1 <= k <= 4096]
            if bad:
                raise ValueError(f"table: query sizes must be 1..4096 items, got {bad}")
            if any(not p >= 0 for _, p in self.table) or not sum(p for _, p in self.table) > 0:
                raise ValueError("table: probabilities must be >= 0 and not all 0")
        return self

    @model_validator(mode="after")
    def _lognormal_in_range(self) -> "QuerySizeSpec":
        # sizes are the log-normal's mass on 1..max_size, renormalised (engine.analytic.lengths.query_size_pmf);
        # a distribution lying wholly outside that range leaves nothing to renormalise
        if self.kind == "lognormal":
            normal = NormalDist(self.mu, self.sigma)
            mass = normal.cdf(math.log(self.max_size + 0.5)) - normal.cdf(math.log(0.5))
            if not mass >= MIN_LOGNORMAL_MASS:
                raise ValueError(f"a log-normal with mu {self.mu:g} and sigma {self.sigma:g} (median "
                                 f"{math.exp(self.mu):.3g} items) puts no queries in 1..{self.max_size} items; "
                                 "move mu towards log(size) or widen sigma")
        return self

    @property
    def largest(self) -> int:
        """The most items a query can have."""
        if self.kind == "lognormal":
            return self.max_size
        if self.kind == "table":
            return max(k for k, p in self.table if p > 0)
        return self.size


class InputLenSpec(Spec):
    kind: InputLenKind = "fixed"
    value: Optional[Positive] = Field(None, gt=0, le=MAX_INPUT_LENGTH,
                                   description="fixed length (audio s or tokens); default: profiled middle")
    low: Positive = Field(1.0, gt=0, le=MAX_INPUT_LENGTH)
    high: Positive = Field(25.0, gt=0, le=MAX_INPUT_LENGTH)
    mu: float = Field(1.9, ge=-MAX_LOG_LOCATION, le=MAX_LOG_LOCATION)
    sigma: Positive = Field(0.5, gt=0, le=MAX_LOG_SCALE)

    @model_validator(mode="after")
    def _uniform_has_a_width(self) -> "InputLenSpec":
        # the analytic engine and the simulator read an empty or reversed range differently (a point mass vs a draw
        # between the ends), so neither is allowed to guess
        if self.kind == "uniform" and not self.low < self.high:
            raise ValueError(f"uniform: the shortest input (low, {self.low:g}) must be below the longest (high, "
                             f"{self.high:g})")
        return self


class SlaSpec(Spec):
    latency_ms: Optional[Positive] = Field(None, gt=0, le=MAX_MS,
                                        description="default: MLPerf Server bound for the model, else 100")
    percentile: float = Field(99.0, gt=0, lt=100)


class WorkloadSpec(Spec):
    arrival: ArrivalSpec = ArrivalSpec()
    query_size: QuerySizeSpec = QuerySizeSpec()
    input_len: InputLenSpec = InputLenSpec()
    sla: SlaSpec = SlaSpec()
