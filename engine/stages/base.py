"""The common result of every stage model."""

import math

from pydantic import BaseModel, ConfigDict, Field, model_validator


class StageCost(BaseModel):
    """What one request costs at one stage of the pipeline.

    Units: seconds, requests per second, CPU-seconds. `service_s` is the mean
    time a request holds one of the stage's `servers`; `fixed_s` is extra time
    on the critical path that holds no server (wire propagation, a PCIe hop);
    `scv` is the squared coefficient of variation of the service time (0 for
    deterministic hardware pipelines, 1 for exponential). `capacity_rps` is the
    most requests per second the stage sustains (servers / service time, or a
    tighter cap such as a link or SmartNIC core budget). `host_cpu_s` is the host
    CPU time one request consumes here (drawn from the shared core budget).
    `breakdown_s` splits service_s + fixed_s into named components; `host_cpu_parts_s` splits host_cpu_s by
    the consumer that spends it (RPC serving, launch threads, preprocessing, ...; empty: all is the stage's).
    """

    model_config = ConfigDict(frozen=True)

    name: str
    service_s: float = Field(ge=0)
    fixed_s: float = Field(0.0, ge=0)
    servers: float = Field(1.0, gt=0)
    scv: float = Field(1.0, ge=0)
    capacity_rps: float = Field(gt=0)
    host_cpu_s: float = Field(0.0, ge=0)
    breakdown_s: dict[str, float] = {}
    host_cpu_parts_s: dict[str, float] = {}
    notes: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> "StageCost":
        if self.breakdown_s:
            total = sum(self.breakdown_s.values())
            if not math.isclose(total, self.service_s + self.fixed_s, rel_tol=1e-6, abs_tol=1e-12):
                raise ValueError(f"{self.name}: breakdown sums to {total} s, not service + fixed = "
                                 f"{self.service_s + self.fixed_s} s")
        if self.host_cpu_parts_s and not math.isclose(sum(self.host_cpu_parts_s.values()), self.host_cpu_s,
                                                      rel_tol=1e-6, abs_tol=1e-12):
            raise ValueError(f"{self.name}: host CPU parts sum to {sum(self.host_cpu_parts_s.values())} s, not "
                             f"host_cpu_s = {self.host_cpu_s} s")
        return self

    def host_cpu_consumers(self) -> dict[str, float]:
        """Host CPU-seconds per request by consumer (the stage's own name when it has no parts)."""
        return dict(self.host_cpu_parts_s) if self.host_cpu_parts_s else (
            {self.name: self.host_cpu_s} if self.host_cpu_s else {})

    @property
    def latency_s(self) -> float:
        """Time on the critical path without queueing."""
        return self.service_s + self.fixed_s

    def utilization(self, rate_rps: float) -> float:
        return rate_rps / self.capacity_rps
