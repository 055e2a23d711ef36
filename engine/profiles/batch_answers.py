"""A ProfileBook's answers for one batch size: its latency (`predict`) and a curve's knee (`knee`), read from
the one or two curves that bracket the input length and blended between them (DESIGN.md section 5)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import numpy as np

from engine.profiles.answers import Knee, Prediction, batch_provenance, blend
from engine.profiles.derived import label
from engine.profiles.interp import OutOfRange
from engine.profiles.knee import knee_curve, knee_utilization, utilization
from engine.profiles.points import ProfileError
from engine.vocab import KneeRule

if TYPE_CHECKING:
    from engine.profiles.service import ProfileBook


def curves_for_length(book: ProfileBook, model, sku, partition, precision, framework, input_len, cross_gpu):
    """The one or two curves bracketing `input_len` and the interpolation weight of the upper one."""
    if book.is_fixed_input(model):
        return [book.curve(model, sku, partition, precision, framework, None, cross_gpu)], 0.0, None
    src_sku, src_part, prec, fw = book._source(model, sku, partition, precision, framework, cross_gpu)
    lengths = book.lengths(model, src_sku, src_part, prec, fw)
    if input_len is None:
        input_len = lengths[len(lengths) // 2]
    if input_len < lengths[0] or input_len > lengths[-1]:
        raise ProfileError(f"input length {input_len:g} is outside the profiled lengths "
                           f"{lengths[0]:g}..{lengths[-1]:g} for {model}")
    hi = next(l for l in lengths if l >= input_len)
    lo = max(l for l in lengths if l <= input_len)
    c_lo = book.curve(model, sku, partition, prec, fw, lo, cross_gpu)
    if hi == lo:
        return [c_lo], 0.0, input_len
    c_hi = book.curve(model, sku, partition, prec, fw, hi, cross_gpu)
    return [c_lo, c_hi], (input_len - lo) / (hi - lo), input_len


def predict(book: ProfileBook, model: str, sku: str, partition: str, batch: int, input_len: Optional[float],
            precision: Optional[str], framework: Optional[str], cross_gpu: bool) -> Prediction:
    """Mean/tail latency, throughput and utilisation of one batch, with provenance (ProfileBook.predict)."""
    if batch < 1:
        raise ProfileError(f"batch must be >= 1, got {batch}")
    curves, w, length = curves_for_length(book, model, sku, partition, precision, framework, input_len, cross_gpu)
    try:
        mean = blend([c.mean(batch)[0] for c in curves], w)
        tails = {q: blend([c.tail(batch, q)[0] for c in curves], w) for q in (50, 90, 95, 99)}
        grids = [c.grid(c.law_max_batch) for c in curves]  # utilisation is relative to the law's support
        sat = blend([float(np.max(c.throughput(g))) for c, g in zip(curves, grids)], w)
    except OutOfRange as e:
        c = curves[0]
        raise ProfileError(f"{e} for {model} on {sku} {partition} ({c.provenance}); "
                           "extrapolation is refused") from None
    c = curves[0]
    return Prediction(
        model=model, sku=sku, partition=partition, precision=c.key.precision, framework=c.key.framework,
        batch=batch, input_len=length, mean_s=mean, tail_s=tails, tail_source=c.tail_source(99),
        throughput=batch / mean, utilization=min(1.0, (batch / mean) / sat),
        provenance=batch_provenance(c, batch),
        reference=label(c.reference) if c.reference else None, sm_ratio=c.sm_ratio,
        fit_rms_rel_error=c.fit.rms_rel_error if c.fit else None, cross_gpu=c.cross_gpu,
        memory_max_batch=book.memory_limit(model, sku, partition, length), sources=c.sources,
        extrapolated=c.law_max_batch is not None and batch > c.law_max_batch,
        extrapolation_rel_uncertainty=c.extrapolation_rel_uncertainty,
        expected_rel_error=c.expected_rel_error, note=c.note)


def knee(book: ProfileBook, model, sku, partition, rule, threshold, percentile, input_len, precision, framework,
         cross_gpu) -> Knee:
    """Batch_knee and Time_knee of one curve by the named rule (ProfileBook.knee; engine.profiles.knee)."""
    try:
        rule = KneeRule(rule)
    except ValueError:
        raise ProfileError(f"{rule!r} is not a knee rule; valid: {', '.join(r.value for r in KneeRule)}") from None
    curves, w, _ = curves_for_length(book, model, sku, partition, precision, framework, input_len, cross_gpu)
    c = curves[0]
    grid = c.grid(book.memory_limit(model, sku, partition, input_len))
    for cv in curves:  # the knee is a latency choice on the law's support, never on extrapolated batches
        if cv.law_max_batch is not None:
            grid = grid[grid <= cv.law_max_batch]
    for other in curves[1:]:
        grid = grid[grid <= other.max_batch]
    if c.fit is None:  # a measured knee is a measured batch size, never a largest batch whose throughput falls
        grid = np.array([b for b in c.batches if b in set(grid)
                         and not (any(cv.falling_top for cv in curves) and b == c.max_batch)])
    x = blend([cv.throughput(grid) for cv in curves], w)
    y = blend([cv.tail(grid, percentile) for cv in curves], w)
    i = knee_utilization(grid, x, threshold) if rule == KneeRule.UTILIZATION else knee_curve(x, y)
    return Knee(rule=rule, batch=int(grid[i]), time_s=float(y[i]), percentile=percentile,
                utilization=float(utilization(x)[i]),
                threshold=threshold if rule == KneeRule.UTILIZATION else None,
                provenance=batch_provenance(c, int(grid[i])))
