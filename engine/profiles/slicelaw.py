"""The slice law: service time of a GPU partition from a reference curve (DESIGN.md section 5).

    t(b; s) = t0 + (b/s + h) / T

s is the partition's SM count over the reference's, t0 a fixed per-inference
overhead (s), h the half-saturation batch and T the saturated throughput
(items/s) of the reference. On one reference curve (s = 1) t0 and h/T enter
only as their sum, so the fit estimates `t_fixed = t0 + h/T` and T; the
derived curve t(b; s) = t_fixed + b / (s T) needs nothing more. A slice then
behaves like the reference at batch b/s plus the same fixed time, so the
utilisation knee scales with s (PREBA section 3.2: 16/4/2 on 1g against
128/32/16 on 7g).
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict


class SliceFit(BaseModel):
    """Least-squares fit of the slice law to a reference curve (relative error)."""

    model_config = ConfigDict(frozen=True)

    t_fixed_s: float  # t0 + h/T, seconds
    saturated_throughput: float  # T, items/s on the reference
    residuals: tuple[float, ...]  # (fit - measured) / measured at each reference point
    rms_rel_error: float

    @property
    def half_saturation_batch(self) -> float:
        """Batch at which the reference reaches half its saturated throughput (t0 folded in)."""
        return self.t_fixed_s * self.saturated_throughput


def fit_slice_law(batches, latencies_s) -> SliceFit:
    """Fit t(b) = t_fixed + b/T to (batch, latency in s) by least squares on relative error.

    Minimises sum(((t_fixed + b/T) - t_i) / t_i)^2, a linear problem in
    (t_fixed, 1/T); t_fixed is held at 0 if the unconstrained fit makes it negative.
    """
    b = np.asarray(batches, dtype=float)
    t = np.asarray(latencies_s, dtype=float)
    if len(b) < 2 or len(np.unique(b)) < 2:
        raise ValueError("the slice law needs a reference curve with at least two batch sizes")
    if np.any(t <= 0):
        raise ValueError("latencies must be positive")
    design = np.column_stack([1.0 / t, b / t])
    (a, c), *_ = np.linalg.lstsq(design, np.ones_like(t), rcond=None)
    if a < 0:
        a, c = 0.0, float(np.sum(b / t) / np.sum((b / t) ** 2))
    if c <= 0:
        raise ValueError("the reference latency does not grow with batch size; the slice law does not apply")
    fitted = a + c * b
    resid = (fitted - t) / t
    return SliceFit(t_fixed_s=float(a), saturated_throughput=float(1.0 / c),
                    residuals=tuple(float(r) for r in resid), rms_rel_error=float(np.sqrt(np.mean(resid**2))))


def slice_latency(fit: SliceFit, batch, s: float) -> np.ndarray:
    """Mean service time (s) of a batch on a partition with SM ratio `s` to the reference."""
    if s <= 0:
        raise ValueError(f"SM ratio must be positive, got {s}")
    return fit.t_fixed_s + np.asarray(batch, dtype=float) / (s * fit.saturated_throughput)
