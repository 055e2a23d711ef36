"""Param-Share: instances of one model that fit in GPU memory with and without shared weights.

GPU runtime primitives seed, Sec V-E and Table II: each instance holds the model's weights (W) and
its own "other GPU buffer" (B: activations, workspace, context); with parameter sharing (CUDA IPC
pointers to one loaded copy) later instances hold only B. In GPU memory M (MB):
    without sharing  n = floor(M / (W + B))
    with sharing     n = floor((M - W) / B)     (one copy of W, then B per instance)
On a 16 GB T4 (M = 16384 MB) this gives Table II's 10/11, 8/10 and 10/12 for ResNet-50, VGG-19 and
ResNeXt-50 (tests/test_tenancy_paramshare.py reads those rows from data/seed/rpc_figures.csv).
"""

from __future__ import annotations

import math
from typing import ClassVar

from pydantic import BaseModel, ConfigDict

from engine.tenancy.errors import TenancyError, non_negative, positive

#: what one serving instance holds besides the weights (CUDA context, workspace, activations), as the seed measured it
#: on a T4 (GPU-runtime-primitives seed, Sec V-E Table II; rows of data/seed/rpc_figures.csv, category param_share)
MEASURED_BUFFER_MB = {"resnet50": 1400.0, "vgg19": 1475.0, "resnext50": 1252.0}
#: a model the seed did not measure holds at least the least of them: the context and workspace do not shrink with it
LEAST_MEASURED_BUFFER_MB = min(MEASURED_BUFFER_MB.values())
_EPS = 1e-9  # so that a division that is exact on paper is not floored one short by rounding
#: the most instances a fit may count: no GPU holds a million model instances, so a larger quotient is a
#: unit slip (bytes for MB) and would overflow past 1e308
MAX_FIT_INSTANCES = 1_000_000


class ParamShareFit(BaseModel):
    model_config = ConfigDict(frozen=True)

    gpu_memory_mb: float
    weights_mb: float
    buffer_mb: float  # per instance, besides the weights
    without: int  # instances, each with its own weights
    with_sharing: int  # instances sharing one copy of the weights
    used_without_mb: float
    used_with_mb: float

    @property
    def extra(self) -> int:
        return self.with_sharing - self.without

    @property
    def extra_fraction(self) -> float:
        """More instances with sharing, as a fraction (the seed: "20-25% more", Sec I)."""
        return self.extra / self.without if self.without else 0.0

    def table(self) -> list[dict]:
        return [{"sharing": "without", "instances": self.without, "used_mb": self.used_without_mb},
                {"sharing": "with", "instances": self.with_sharing, "used_mb": self.used_with_mb}]


def instances_without_sharing(gpu_memory_mb: float, weights_mb: float, buffer_mb: float) -> int:
    """floor(M / (W + B)): every instance loads its own weights (seed Sec V-E, Table II). MB in, count out."""
    return max(0, math.floor(gpu_memory_mb / (weights_mb + buffer_mb) + _EPS))


def instances_with_sharing(gpu_memory_mb: float, weights_mb: float, buffer_mb: float) -> int:
    """floor((M - W) / B): one shared copy of the weights, B per instance (seed Sec V-E, Table II)."""
    if gpu_memory_mb < weights_mb:
        return 0
    return max(0, math.floor((gpu_memory_mb - weights_mb) / buffer_mb + _EPS))


def param_share_fit(gpu_memory_mb: float, weights_mb: float, buffer_mb: float) -> ParamShareFit:
    """Instances that fit in `gpu_memory_mb` with and without parameter sharing (all sizes in MB)."""
    m = positive("gpu_memory_mb", gpu_memory_mb)
    w = non_negative("weights_mb", weights_mb)
    b = positive("buffer_mb", buffer_mb)
    if m / b > MAX_FIT_INSTANCES:  # also an infinite quotient
        raise TenancyError(f"buffer_mb {b!r} is too small for gpu_memory_mb {m!r}: more than {MAX_FIT_INSTANCES:,} "
                           "instances would fit; are the sizes in MB?")
    n0 = instances_without_sharing(m, w, b)
    n1 = instances_with_sharing(m, w, b)
    return ParamShareFit(gpu_memory_mb=m, weights_mb=w, buffer_mb=b, without=n0, with_sharing=n1,
                         used_without_mb=n0 * (w + b), used_with_mb=(w + n1 * b) if n1 else 0.0)


def standby_extra_mb(weights_mb: float, buffer_mb: float, shared: bool) -> float:
    """Memory a standby (shadow) instance adds while it loads at the new GPU% (seed Sec V-E, first use).

    Without sharing the shadow loads its own weights and buffer (W + B MB); with sharing it links to the
    active instance's weights and adds only its buffer (B MB).
    """
    w = non_negative("weights_mb", weights_mb)
    b = positive("buffer_mb", buffer_mb)
    return b if shared else w + b


class InstanceLimit(BaseModel):
    """Model instances one GPU (or one MIG slice) holds under MPS, with and without shared weights: what its memory
    holds (ParamShareFit), capped by the MPS client limit (engine.catalog.MPS_MAX_CLIENTS, one client per instance).
    `binding` says which limit decides each count."""

    model_config = ConfigDict(frozen=True)

    memory_without: int
    memory_with: int
    mps_clients: int
    without: int
    with_sharing: int
    binding_without: str  # 'MPS client limit' or 'GPU memory'
    binding_with: str

    MPS: ClassVar[str] = "MPS client limit"
    MEMORY: ClassVar[str] = "GPU memory"

    def explain(self) -> str:
        """Which limit binds, in words."""
        if self.binding_without == self.binding_with == self.MPS:
            return (f"the MPS client limit binds: {self.mps_clients} clients per GPU, while memory would hold "
                    f"{self.memory_without} -> {self.memory_with}")
        if self.binding_without == self.binding_with == self.MEMORY:
            return (f"GPU memory binds: {self.without} -> {self.with_sharing} instances fit, under the MPS limit of "
                    f"{self.mps_clients} clients per GPU")
        return (f"GPU memory binds without shared weights ({self.without}); with them the MPS client limit does "
                f"({self.mps_clients} clients per GPU; memory would hold {self.memory_with})")


def instance_limit(fit: ParamShareFit, mps_clients: int) -> InstanceLimit:
    """The instances a GPU holds: the memory fit, at most `mps_clients` (one MPS client per instance)."""
    def capped(n: int) -> tuple[int, str]:
        return (mps_clients, InstanceLimit.MPS) if n > mps_clients else (n, InstanceLimit.MEMORY)

    (without, why_without), (with_sharing, why_with) = capped(fit.without), capped(fit.with_sharing)
    return InstanceLimit(memory_without=fit.without, memory_with=fit.with_sharing, mps_clients=mps_clients,
                         without=without, with_sharing=with_sharing, binding_without=why_without,
                         binding_with=why_with)
