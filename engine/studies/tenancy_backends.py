"""Tenancy across backends: FPGA hardware threads (EIF) next to a GPU, and cold start per backend.

The EIF seed reports speed-ups, not absolute times, so the FPGA's and CPU's per-request times are
inputs; where a user gives none, `tenancy_backends_study` starts from the GPU's own batch-1 time from the
service-time model and says so in `notes`. Weights come from the models table.
Times in ms, sizes in MB (1e6 bytes), throughput in requests/s.
"""

from __future__ import annotations

from typing import Optional

import pandas as pd
from pydantic import BaseModel, ConfigDict

from engine.fpga import cold_start_table, fpga_tenancy_table
from engine.tenancy.errors import TenancyError


class TenancyBackendsStudy(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    model: str
    gpu_sku: str
    weights_mb: float
    gpu_ms: float  # batch-1 mean on the whole GPU
    fpga_ms: float
    cpu_ms: float
    sparsity: float
    fpga_threads: pd.DataFrame  # engine.fpga.fpga_tenancy_table
    cold_start: pd.DataFrame  # engine.fpga.cold_start_table
    notes: tuple[str, ...]


def tenancy_backends_study(book, model: str, gpu_sku: str, fpga_ms: Optional[float] = None,
                           cpu_ms: Optional[float] = None, sparsity: float = 0.6,
                           boards: int = 1) -> TenancyBackendsStudy:
    """FPGA tenants per thread count and cold start on FPGA, GPU and CPU for one model."""
    if model not in book.models.index:
        raise TenancyError(f"model {model!r} has no row in the models table (weights size unknown)")
    weights_mb = float(book.models.loc[model, "weights_mb"])
    gpu_ms = book.predict(model, gpu_sku, "full", 1).mean_s * 1e3
    notes = []
    if fpga_ms is None:
        fpga_ms = gpu_ms
        notes.append(f"FPGA time per request: none given, so the GPU's batch-1 time ({gpu_ms:.3f} ms) stands in; "
                     "enter a measurement")
    if cpu_ms is None:
        cpu_ms = gpu_ms
        notes.append(f"CPU time per request: none given, so the GPU's batch-1 time ({gpu_ms:.3f} ms) stands in; "
                     "enter a measurement")
    for name, v in (("fpga_ms", fpga_ms), ("cpu_ms", cpu_ms)):
        if not v > 0:
            raise TenancyError(f"{name} must be above 0 ms, got {v!r}")
    threads = fpga_tenancy_table(fpga_ms, sparsity, boards=boards)
    cold = cold_start_table(weights_mb, fpga_ms, gpu_ms, cpu_ms)
    return TenancyBackendsStudy(model=model, gpu_sku=gpu_sku, weights_mb=weights_mb, gpu_ms=gpu_ms, fpga_ms=fpga_ms,
                       cpu_ms=cpu_ms, sparsity=sparsity, fpga_threads=threads, cold_start=cold, notes=tuple(notes))
