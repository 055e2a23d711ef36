"""MIG as tenancy: how many isolated instances of each profile one GPU holds, and each one's latency.

A MIG profile's instance limit is the catalogue's `max_instances` (NVIDIA MIG User Guide, the
supported-profiles table); an instance's latency at a batch comes from the service-time model
(engine.profiles: measured, published, or derived with the slice law). Times in ms, throughput in
items/s.
"""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, ConfigDict

from engine.profiles import ProfileError
from engine.tenancy.errors import TenancyError, whole


class MigTenancyRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    profile: str
    tenants_per_gpu: int  # instances of this profile one GPU holds
    sm_share: float  # of the whole GPU's SMs, per instance
    memory_gib: float  # per instance
    mean_ms: Optional[float]  # one batch on one instance (None: the model does not fit / no answer)
    tail_ms: Optional[float]
    throughput_per_gpu: Optional[float]  # all tenants, batches back to back (items/s)
    provenance: str
    note: str


def mig_tenancy(book, model: str, sku: str, batch: int = 8, percentile: int = 99,
                input_len: Optional[float] = None) -> list[MigTenancyRow]:
    """One row per MIG profile of `sku`: tenants per GPU and one instance's latency at `batch`."""
    whole("batch", batch)
    gpu = book.gpu(sku)
    if not gpu.mig_capable:
        raise TenancyError(f"{sku} does not support MIG; use GPU% shares (MPS) for tenancy on it")
    rows = []
    for p in gpu.profiles:
        try:
            pred = book.predict(model, sku, p.name, batch, input_len=input_len)
            tail = pred.tail_s.get(percentile, max(pred.tail_s.values()))
            rows.append(MigTenancyRow(profile=p.name, tenants_per_gpu=p.max_instances, sm_share=p.sm_count / gpu.sm_count,
                                      memory_gib=p.memory_gib, mean_ms=pred.mean_s * 1e3, tail_ms=tail * 1e3,
                                      throughput_per_gpu=p.max_instances * pred.throughput, provenance=pred.provenance,
                                      note=""))
        except (ProfileError, ValueError) as e:
            rows.append(MigTenancyRow(profile=p.name, tenants_per_gpu=p.max_instances,
                                      sm_share=p.sm_count / gpu.sm_count, memory_gib=p.memory_gib, mean_ms=None,
                                      tail_ms=None, throughput_per_gpu=None, provenance="-", note=str(e)))
    return rows
