"""One call per Tenancy-page panel, and `tenancy_study` that runs them all for one (model, GPU).

The page reads its widgets, calls these and renders the tables (`.table()` / `.rows()`); nothing
here imports streamlit.
"""

from __future__ import annotations

import math
from typing import Optional

from pydantic import BaseModel, ConfigDict

from engine.tenancy.errors import TenancyError, positive, whole
from engine.tenancy.gpu_share import (DEFAULT_STEP_PCT, KNEE_GAIN_THRESHOLD, GpuShareCurve, KneeGpuPct,
                                      OversubscriptionSweep, knee_gpu_pct, latency_vs_gpu_pct,
                                      oversubscription_sweep)
from engine.tenancy.multimodel import MultiModelPlan, plan_multimodel
from engine.tenancy.paramshare import (LEAST_MEASURED_BUFFER_MB, MEASURED_BUFFER_MB, InstanceLimit, ParamShareFit,
                                       instance_limit, param_share_fit, standby_extra_mb)
from engine.tenancy.reconfig import RESTART_LOAD_S, STANDBY_SWITCH_S, Reconfiguration, reconfiguration

OVERSUBSCRIBE_TO_PCT = 200  # the oversubscription panel adds instances until the total reaches this


class SharePanel(BaseModel):
    model_config = ConfigDict(frozen=True)

    curve: GpuShareCurve
    knee: KneeGpuPct


class MemoryPanel(BaseModel):
    model_config = ConfigDict(frozen=True)

    fit: ParamShareFit  # what memory alone holds
    limit: InstanceLimit  # instances per GPU: the memory fit capped by the MPS client limit, and which one binds
    weights_from: str
    buffer_from: str
    memory_from: str
    standby_extra_mb_without: float  # what a shadow instance adds while it loads (reconfiguration)
    standby_extra_mb_with: float


class TenancyStudy(BaseModel):
    model_config = ConfigDict(frozen=True)

    share: SharePanel
    memory: MemoryPanel
    plan: MultiModelPlan
    oversubscription: OversubscriptionSweep
    reconfiguration: Reconfiguration
    notes: tuple[str, ...]


def share_panel(book, model: str, sku: str, batch: int = 8, step: int = DEFAULT_STEP_PCT, percentile: int = 99,
                threshold: float = KNEE_GAIN_THRESHOLD, input_len: Optional[float] = None,
                mig_profile: Optional[str] = None) -> SharePanel:
    """Latency vs GPU% (of the whole GPU, or of one MIG slice) and its knee GPU%."""
    curve = latency_vs_gpu_pct(book, model, sku, batch=batch, step=step, percentile=percentile, input_len=input_len,
                               mig_profile=mig_profile)
    return SharePanel(curve=curve, knee=knee_gpu_pct(curve, threshold))


def memory_panel(book, model: str, sku: str, batch: int = 8, weights_mb: Optional[float] = None,
                 buffer_mb: Optional[float] = None, gpu_memory_mb: Optional[float] = None,
                 mig_profile: Optional[str] = None) -> MemoryPanel:
    """Param-Share fit and the instances per GPU under MPS; sizes not given come from the store (models table, GPU
    catalogue) and the seed.

    The default buffer (what an instance holds besides the weights) is the seed's measured one for the model (CUDA
    context, workspace and activations, Table II on a T4), else the least the seed measured, or batch x the model's
    activation estimate where that is larger: an instance's context and workspace do not shrink with the model.
    """
    whole("batch", batch)
    row = book.models.loc[model] if model in book.models.index else None
    if row is None and (weights_mb is None or buffer_mb is None):
        raise TenancyError(f"model {model!r} has no row in the models table; give weights_mb and buffer_mb")
    w_from = "given" if weights_mb is not None else "models table (params x 2 B)"
    m_from = "given" if gpu_memory_mb is not None else f"{sku} {mig_profile or ''} memory".replace("  ", " ")
    w = float(row["weights_mb"]) if weights_mb is None else weights_mb
    if buffer_mb is None:
        b, b_from = _default_buffer(model, batch, float(row["activation_mb_per_sample"]))
    else:
        b, b_from = buffer_mb, "given"
    m = book.memory_mb(sku, mig_profile or "full") if gpu_memory_mb is None else gpu_memory_mb
    fit = param_share_fit(m, w, b)
    return MemoryPanel(fit=fit, limit=instance_limit(fit, book.gpu(sku).mps_max_clients), weights_from=w_from,
                       buffer_from=b_from, memory_from=m_from,
                       standby_extra_mb_without=standby_extra_mb(w, b, shared=False),
                       standby_extra_mb_with=standby_extra_mb(w, b, shared=True))


def _default_buffer(model: str, batch: int, activation_mb: float) -> tuple[float, str]:
    """(MB, where it comes from) of what one instance holds besides its weights (memory_panel)."""
    activations = batch * activation_mb
    measured = MEASURED_BUFFER_MB.get(model)
    floor = measured if measured is not None else LEAST_MEASURED_BUFFER_MB
    if activations > floor:
        return activations, f"estimate: batch {batch} x activation MB per sample"
    return floor, ("measured for this model (GPU-runtime-primitives seed, Table II, on a T4)" if measured is not None
                   else "the least the GPU-runtime-primitives seed measured per instance (Table II): context and "
                        "workspace included")


def tenancy_study(book, model: str, sku: str, deadline_ms: float, batch: int = 8, available_pct: float = 100.0,
                     rate_rps: Optional[float] = None, step: int = DEFAULT_STEP_PCT, percentile: int = 99,
                     threshold: float = KNEE_GAIN_THRESHOLD, input_len: Optional[float] = None,
                     weights_mb: Optional[float] = None, buffer_mb: Optional[float] = None,
                     gpu_memory_mb: Optional[float] = None, share_weights: bool = True,
                     oversubscribe_pct: Optional[int] = None, load_s: float = RESTART_LOAD_S,
                     switch_s: float = STANDBY_SWITCH_S, mig_profile: Optional[str] = None) -> TenancyStudy:
    """Every Tenancy panel for one (model, GPU, batch).

    Multi-Model is capped by what fits in memory (with shared weights when `share_weights`); the
    oversubscription sweep runs instances at `oversubscribe_pct` (default: the knee GPU%) up to 200% in
    total; the reconfiguration is priced at `rate_rps`, else at the best plan's throughput.
    """
    positive("deadline_ms", deadline_ms)
    share = share_panel(book, model, sku, batch, step, percentile, threshold, input_len, mig_profile)
    memory = memory_panel(book, model, sku, batch, weights_mb, buffer_mb, gpu_memory_mb, mig_profile)
    fits = memory.limit.with_sharing if share_weights else memory.limit.without
    if fits < 1:
        raise TenancyError(f"not one instance of {model} fits in {memory.fit.gpu_memory_mb:,.0f} MB "
                           f"(weights {memory.fit.weights_mb:,.0f} MB + buffer {memory.fit.buffer_mb:,.0f} MB)")
    plan = plan_multimodel(share.curve, deadline_ms, available_pct, rate_rps, max_instances=fits)
    pct = share.knee.gpu_pct if oversubscribe_pct is None else oversubscribe_pct
    sweep = oversubscription_sweep(share.curve, pct, max(2, math.ceil(OVERSUBSCRIBE_TO_PCT / pct)))
    rate = rate_rps if rate_rps is not None else (
        plan.best.throughput_items_per_s if plan.best else share.curve.points[-1].throughput_items_per_s)
    notes = [f"{len(share.curve.refused)} GPU% values refused: {share.curve.refused[0].reason}"
             if share.curve.refused else "", plan.reason,
             f"Multi-Model capped at {fits} instances per GPU {'with' if share_weights else 'without'} shared "
             f"weights: {memory.limit.explain()}"]
    return TenancyStudy(share=share, memory=memory, plan=plan, oversubscription=sweep,
                           reconfiguration=reconfiguration(rate, load_s, switch_s), notes=tuple(n for n in notes if n))
