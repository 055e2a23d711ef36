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
    if len(b) < 2 or b.min() == b.max():
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


#: the reference is saturated when its last segment's marginal time per item is within this fraction of the
#: fitted 1/T: past that point latency grows linearly with batch (the GPU's compute is busy), so the law's
#: straight line may be followed beyond the measured batches (DESIGN.md section 5; issue 12 item 4)
SATURATION_TOLERANCE = 0.10


def marginal_disagreement(fit: SliceFit, batches, latencies_s) -> float:
    """|last segment's marginal time per item - 1/T| * T: how far the reference's top is from the linear regime.

    Units: a fraction (0 = the last two points lie on the fitted slope). The
    last segment is between the two largest batches of the reference curve.
    """
    b = np.asarray(batches, dtype=float)
    t = np.asarray(latencies_s, dtype=float)
    order = np.argsort(b)
    b, t = b[order], t[order]
    if len(b) < 2:
        return float("inf")
    marginal = (t[-1] - t[-2]) / (b[-1] - b[-2])
    return float(abs(marginal * fit.saturated_throughput - 1.0))


def is_saturated(fit: SliceFit, batches, latencies_s, tolerance: float = SATURATION_TOLERANCE) -> bool:
    """Whether the reference curve has reached the linear (saturated) regime at its largest batches."""
    return marginal_disagreement(fit, batches, latencies_s) <= tolerance


def extrapolation_uncertainty(fit: SliceFit, batches, latencies_s) -> float:
    """Relative uncertainty (fraction) of a service time extrapolated along the law beyond the reference.

    The larger of the fit's RMS relative error and the last segment's
    disagreement with the fitted slope: beyond the data the slope is all
    that is left, so its error is the extrapolation's error.
    """
    return float(max(fit.rms_rel_error, marginal_disagreement(fit, batches, latencies_s)))


def continue_saturated(fit: SliceFit, last_batch: int, last_latency_s: float, batches) -> np.ndarray:
    """Mean service time (s) beyond a saturated curve's last point, continued at the fitted slope 1/T.

    t(b) = t(last) + (b - last) / T: the measured point anchors the line, so the
    continuation joins the data without a step (used to find a measured curve's
    best batch past its measured range; labelled derived-extrapolated).
    """
    b = np.asarray(batches, dtype=float)
    return last_latency_s + (b - last_batch) / fit.saturated_throughput


def slice_latency(fit: SliceFit, batch, s: float) -> np.ndarray:
    """Mean service time (s) of a batch on a partition with SM ratio `s` to the reference."""
    if s <= 0:
        raise ValueError(f"SM ratio must be positive, got {s}")
    return fit.t_fixed_s + np.asarray(batch, dtype=float) / (s * fit.saturated_throughput)
