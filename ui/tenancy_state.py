"""Cached engine calls for the Tenancy page (ui.compute.engine_call: keyed by its inputs and the data version)."""

from __future__ import annotations

from engine.studies.tenancy_backends import tenancy_backends_study
from engine.tenancy.mig import mig_tenancy
from engine.studies.tenancy import tenancy_study
from ui.compute import engine_call
from ui.session import get_book


@engine_call(entries=64)
def mig_cached(model: str, sku: str, batch: int):
    return mig_tenancy(get_book(), model, sku, batch)


@engine_call(entries=64)
def overview_cached(model: str, sku: str, deadline_ms: float, batch: int, rate_rps: float, buffer_mb,
                    share_weights: bool, mig_profile=None):
    return tenancy_study(get_book(), model, sku, deadline_ms, batch=batch, rate_rps=rate_rps, buffer_mb=buffer_mb,
                            share_weights=share_weights, mig_profile=mig_profile)


@engine_call(entries=64)
def backends_cached(model: str, sku: str, fpga_ms, cpu_ms, sparsity: float):
    return tenancy_backends_study(get_book(), model, sku, fpga_ms, cpu_ms, sparsity)
