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
from engine.tenancy.paramshare import ParamShareFit, param_share_fit, standby_extra_mb
from engine.tenancy.reconfig import RESTART_LOAD_S, STANDBY_SWITCH_S, Reconfiguration, reconfiguration

OVERSUBSCRIBE_TO_PCT = 200  # the oversubscription panel adds instances until the total reaches this


class SharePanel(BaseModel):
    model_config = ConfigDict(frozen=True)

    curve: GpuShareCurve
    knee: KneeGpuPct


class MemoryPanel(BaseModel):
    model_config = ConfigDict(frozen=True)

    fit: ParamShareFit
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
    """Param-Share fit; sizes not given come from the store (models table, GPU catalogue).

    The default buffer is batch x the model's activation estimate only; a real instance also holds a
    CUDA context and workspace (the seed measured 1252-1475 MB per instance, Table II), so enter the
    measured buffer where known.
    """
    whole("batch", batch)
    row = book.models.loc[model] if model in book.models.index else None
    if row is None and (weights_mb is None or buffer_mb is None):
        raise TenancyError(f"model {model!r} has no row in the models table; give weights_mb and buffer_mb")
    w_from = "given" if weights_mb is not None else "models table (params x 2 B)"
    b_from = "given" if buffer_mb is not None else f"estimate: batch {batch} x activation MB per sample only"
    m_from = "given" if gpu_memory_mb is not None else f"{sku} {mig_profile or ''} memory".replace("  ", " ")
    w = float(row["weights_mb"]) if weights_mb is None else weights_mb
    b = batch * float(row["activation_mb_per_sample"]) if buffer_mb is None else buffer_mb
    m = book.memory_mb(sku, mig_profile or "full") if gpu_memory_mb is None else gpu_memory_mb
    fit = param_share_fit(m, w, b)
    return MemoryPanel(fit=fit, weights_from=w_from, buffer_from=b_from, memory_from=m_from,
                       standby_extra_mb_without=standby_extra_mb(w, b, shared=False),
                       standby_extra_mb_with=standby_extra_mb(w, b, shared=True))


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
    fits = memory.fit.with_sharing if share_weights else memory.fit.without
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
             f"Multi-Model capped at {fits} instances: what fits in memory "
             f"{'with' if share_weights else 'without'} shared weights"]
    return TenancyStudy(share=share, memory=memory, plan=plan, oversubscription=sweep,
                           reconfiguration=reconfiguration(rate, load_s, switch_s), notes=tuple(n for n in notes if n))
