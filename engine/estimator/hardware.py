"""What one GPU partition offers an operator: peak FLOP/s per precision and memory bandwidth (issue 13).

A MIG instance gets its SMs' share of the tensor and CUDA-core peak and its memory slices' share of the
bandwidth (NVIDIA MIG User Guide: a 1g.10gb on an A100-80GB has 14 of 108 SMs and 1 of 8 memory slices;
the SM counts come from `nvidia-smi mig -lgip`, data/seed/mig_profiles.csv). An MPS share 'mps:N' caps
the SMs at N % and leaves the memory system whole (MPS limits threads, not bandwidth).
"""

from typing import Optional

from pydantic import BaseModel, ConfigDict

from engine.catalog import Gpu, UnknownNameError
from engine.errors import KneepointError

#: precision -> (spec column, fallback column where the GPU has no such unit)
_PEAK_COLUMN = {"fp16": ("fp16_tflops", None), "amp": ("fp16_tflops", None), "bf16": ("bf16_tflops", "fp16_tflops"),
                "int8": ("int8_tops", "fp16_tflops"), "tf32": ("tf32_tflops", "fp32_tflops"),
                "fp32": ("fp32_tflops", None)}
PRECISIONS = tuple(_PEAK_COLUMN)
#: bytes per element at each serving precision (amp keeps fp16 activations and weights)
BYTES_PER_ELEM = {"fp16": 2, "amp": 2, "bf16": 2, "int8": 1, "tf32": 4, "fp32": 4}


class HardwareError(KneepointError):
    """A GPU, partition or precision the estimator cannot describe; the message says which and what exists."""


class PartitionSpec(BaseModel):
    """Peak rates one partition offers: matrix units at the serving precision, CUDA cores, memory."""

    model_config = ConfigDict(frozen=True)

    sku: str
    partition: str
    family: str
    precision: str
    sm_count: float
    sm_share: float  # of the whole GPU (MIG off)
    memory_share: float
    matrix_flops: float  # FLOP/s, dense tensor-core (or CUDA-core fp32) peak at this precision
    vector_flops: float  # FLOP/s, CUDA-core fp32 peak (elementwise, depthwise)
    memory_bw: float  # bytes/s
    bytes_per_elem: int


def partition_sms(gpu: Gpu, partition: str) -> tuple[float, float]:
    """(SMs, memory-bandwidth share) of a partition: 'full', a MIG profile, 'mps:N' (N % of the whole GPU's SMs)
    or 'PROFILE/mps:N' (N % of a MIG slice's SMs: MPS inside a MIG instance)."""
    if partition == "full":
        return float(gpu.sm_count), 1.0
    base, sep, pct = partition.rpartition("mps:")
    if sep:
        try:
            p = float(pct)
        except ValueError:
            raise HardwareError(f"partition {partition!r}: GPU% must be a number") from None
        if not 0 < p <= 100:
            raise HardwareError(f"partition {partition!r}: GPU% must be in 1..100")
        sms, mem = partition_sms(gpu, base.rstrip("/") or "full")
        return sms * p / 100, mem
    try:
        prof = gpu.profile(partition)
    except UnknownNameError:
        valid = ", ".join(["full"] + [p.name for p in gpu.profiles])
        raise HardwareError(f"{partition!r} is not a partition of {gpu.sku}; valid: {valid}, mps:N, or "
                            "PROFILE/mps:N") from None
    return float(prof.sm_count), prof.memory_slices / gpu.memory_slots


def partition_spec(gpu: Gpu, spec: dict, partition: str, precision: str) -> PartitionSpec:
    """Peak rates of `partition` of `gpu` at `precision`; `spec` is the GPU's data/seed/gpu_specs.csv row."""
    if precision not in _PEAK_COLUMN:
        raise HardwareError(f"{precision!r} is not a precision the estimator knows; valid: {', '.join(PRECISIONS)}")
    column, fallback = _PEAK_COLUMN[precision]
    peak: Optional[float] = spec.get(column)
    if peak is None or peak != peak:  # NaN from an empty CSV cell
        peak = spec.get(fallback) if fallback else None
    if peak is None or peak != peak:
        raise HardwareError(f"{gpu.sku} has no {precision} peak in gpu_specs.csv")
    sms, mem_share = partition_sms(gpu, partition)
    sm_share = sms / gpu.sm_count
    return PartitionSpec(sku=gpu.sku, partition=partition, family=str(spec["family"]), precision=precision,
                         sm_count=sms, sm_share=sm_share, memory_share=mem_share,
                         matrix_flops=float(peak) * 1e12 * sm_share,
                         vector_flops=float(spec["fp32_tflops"]) * 1e12 * sm_share,
                         memory_bw=float(spec["memory_bw_gbs"]) * 1e9 * mem_share,
                         bytes_per_elem=BYTES_PER_ELEM[precision])
