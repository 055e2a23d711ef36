"""What a ProfileBook answers: the latency of one batch (`Prediction`) and a curve's knee (`Knee`), each with
the provenance of the curve it was read from (DESIGN.md section 5)."""

from typing import Optional

from pydantic import BaseModel, ConfigDict

from engine.profiles.curves import Curve
from engine.vocab import KneeRule


class Prediction(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: str
    sku: str
    partition: str
    precision: str
    framework: str
    batch: int
    input_len: Optional[float]
    mean_s: float
    tail_s: dict[int, float]
    tail_source: str
    throughput: float  # items/s, batches back to back
    utilization: float  # throughput / saturated throughput of this curve, 0..1
    provenance: str  # measured | published | derived | derived-extrapolated | estimated
    reference: Optional[str]  # 'sku partition precision framework' of the reference curve
    sm_ratio: Optional[float]
    fit_rms_rel_error: Optional[float]
    cross_gpu: bool
    memory_max_batch: Optional[int]
    sources: tuple[str, ...]
    extrapolated: bool = False  # batch beyond the slice law's support (reference max batch x SM share)
    extrapolation_rel_uncertainty: Optional[float] = None
    expected_rel_error: Optional[float] = None  # estimated curves: the leave-one-out median |error|
    note: str = ""


class Knee(BaseModel):
    model_config = ConfigDict(frozen=True)

    rule: KneeRule
    batch: int
    time_s: float  # tail latency at the knee (Time_knee)
    percentile: int
    utilization: float
    threshold: Optional[float]  # utilisation rule only
    provenance: str


def batch_provenance(curve: Curve, batch: int) -> str:
    """A derived curve's answer at one batch: 'derived' on the law's support, 'derived-extrapolated' beyond."""
    if curve.law_max_batch is None:
        return curve.provenance
    return "derived-extrapolated" if batch > curve.law_max_batch else "derived"


def blend(values, w: float):
    """Linear interpolation between the curves at the two bracketing input lengths."""
    if len(values) == 1:
        return values[0]
    return values[0] * (1 - w) + values[1] * w
