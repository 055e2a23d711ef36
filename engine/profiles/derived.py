"""Curves a partition has no points for: scaled from a reference partition by the slice law, or estimated by
engine.estimator where the GPU has no points of the model at all (DESIGN.md section 5)."""

from __future__ import annotations

import math
from typing import Callable, Optional

import numpy as np

from engine.estimator.estimate import EstimateError, Estimator
from engine.order_stats import median
from engine.profiles.curves import Curve, CurveKey
from engine.profiles.points import ProfileError
from engine.profiles.slicelaw import extrapolation_uncertainty, fit_slice_law, is_saturated

#: the framework name of an estimated curve (engine.estimator): no serving stack timed it
ESTIMATED = "estimate"


def label(key: CurveKey) -> str:
    return f"{key.sku} {key.partition} {key.precision} {key.framework}"


def scaled_curve(ref: Curve, key: CurveKey, sm_ratio: float, limit: Optional[int],
                 memory_mb: Callable[[], float], cross_gpu: bool) -> Curve:
    """The curve of partition `key` scaled from its reference curve `ref` by the slice law (SM share
    `sm_ratio`), up to the reference's largest batch x SM share, or on to the memory limit `limit` (None:
    unknown) past saturation, where the law is a straight line. `memory_mb()`: the partition's memory, named
    where the model does not fit."""
    s = sm_ratio
    try:
        fit = fit_slice_law(ref.batches, ref.mean_s)
    except ValueError as e:  # e.g. a one-point reference: say which curve could not be scaled
        raise ProfileError(f"{key.model} on {key.sku} {key.partition} cannot be derived from {label(ref.key)}: "
                           f"{e}") from None
    law_top = max(1, math.floor(s * ref.max_batch))  # the law's support: the reference's batches, scaled
    top = law_top
    if limit is not None:
        if limit < 1:
            raise ProfileError(f"{key.model} does not fit in {key.partition} of {key.sku} ({memory_mb():.0f} MB)")
        top = min(top, limit)
    extrapolate = (limit is not None and limit > law_top and is_saturated(fit, ref.batches, ref.mean_s))
    if extrapolate:  # past saturation the law is a straight line: follow it up to the memory limit
        top = limit
    return Curve(key=key, provenance="derived-extrapolated" if extrapolate else "derived",
                 law_max_batch=law_top if extrapolate else None,
                 extrapolation_rel_uncertainty=extrapolation_uncertainty(fit, ref.batches, ref.mean_s)
                 if extrapolate else None,
                 batches=(1, top), mean_s=(float(fit.t_fixed_s),) * 2,
                 tails_s={}, tail_ratio={q: median(np.array(v) / np.array(ref.mean_s))
                                         for q, v in ref.tails_s.items()},
                 sources=ref.sources, reference=ref.key, sm_ratio=s, fit=fit, cross_gpu=cross_gpu)


def estimated_curve(estimator: Estimator, key: CurveKey, top: Optional[int]) -> Curve:
    """The estimator's curve (engine.estimator) up to the memory limit `top`, labelled 'estimated' with its
    expected error."""
    try:
        est = estimator.estimate(key.model, key.sku, key.partition, key.precision, input_len=key.input_len,
                                 batches=estimate_batches(top))
    except EstimateError as e:
        raise ProfileError(str(e)) from None
    return Curve(key=key, provenance="estimated", batches=est.batches, mean_s=est.mean_s, tails_s={},
                 sources=("engine.estimator: per-operator roofline calibrated on the store's curves",),
                 expected_rel_error=est.expected_rel_error, note=est.note)


def estimate_batches(top: Optional[int]) -> list[int]:
    """Every batch up to 64, then powers of two, up to the memory limit (1024 at most): the knee search and the
    batching policies read integer batches, and log-batch interpolation fills in between the powers."""
    hi = 1024 if top is None else max(1, min(top, 1024))
    dense = list(range(1, min(hi, 64) + 1))
    return dense + [b for b in (128, 256, 512, 1024) if b <= hi] + ([hi] if hi > 64 and hi not in (128, 256, 512, 1024) else [])
