"""Latency of one batch through a model's operators on one partition: a per-operator roofline (issue 13).

Each operator takes the longest of its compute time, its memory time and a per-kernel floor
(Williams, Waterman & Patterson, "Roofline", CACM 2009, for the first two; the floor is the launch and
tail latency of a kernel too small to fill the GPU):

    compute_s = FLOPs / (peak x efficiency[class])     peak: tensor cores for conv/matmul/attention,
                                                       CUDA cores (fp32) for depthwise and memory ops
    memory_s  = (weights + batch x (in + out)) x bytes_per_elem / (bandwidth x memory_efficiency)
    op_s      = smooth_max(compute_s, memory_s, floor)  (a 4-norm: monotone in each term, and smooth,
                                                       so the calibration's least-squares fit has slopes)

and the batch takes overhead_s + batch x per_item_s (the serving harness: host work, copies, framework)
plus the sum over operators. Operators marked fusable (activation or residual add after a conv or
matmul) are folded into the kernel before them by compilers that fuse (TensorRT, XLA, TVM), and cost
nothing of their own; a framework that runs them eagerly (PyTorch, TensorFlow without XLA) launches each
as its own bandwidth-bound kernel, which reads and writes the whole activation. The harness's
`unfused` share (0..1) says how much of that second case it pays: the fusable operators' own roofline
times, scaled by it. Unlike per-item host time it scales with the GPU's bandwidth, which is why the
same eager harness is far slower per item on a T4 (320 GB/s) than on an A100 (1.5-2 TB/s).
Units: seconds, FLOPs, elements, bytes.
"""

from typing import Mapping, Optional, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from engine.estimator.hardware import PartitionSpec
from engine.vocab import OpClass

CLASSES = tuple(OpClass)
#: classes whose compute runs on the matrix (tensor) units; the others run on the CUDA cores
MATRIX_CLASSES = (OpClass.CONV, OpClass.MATMUL, OpClass.ATTENTION)
#: the norm of the smooth maximum (4: within 19 % of the true max when all three terms are equal, 0 % when
#: one dominates)
SMOOTH_NORM = 4.0


class Efficiency(BaseModel):
    """What fraction of peak one GPU family reaches, by operator class, and its per-kernel floor."""

    model_config = ConfigDict(frozen=True)

    compute: dict[OpClass, float]  # fraction of the class's peak, 0..1
    memory: float = Field(gt=0, le=1)  # fraction of the memory bandwidth
    matrix_floor_s: float = Field(ge=0)  # shortest conv/matmul/attention kernel
    vector_floor_s: float = Field(ge=0)  # shortest depthwise/memory kernel


class Harness(BaseModel):
    """Time the serving harness adds to every batch: a fixed part and a part per item."""

    model_config = ConfigDict(frozen=True)

    overhead_s: float = Field(ge=0)
    per_item_s: float = Field(ge=0)
    unfused: float = Field(0.0, ge=0, le=1)  # share of the fusable operators' own kernels it pays (0: all fused)


class OpTable(BaseModel):
    """A model's operators as arrays (one entry per unfused operator), at its reference input length."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    model: str
    ref_len: Optional[float]
    op_class: tuple[OpClass, ...]
    flops: np.ndarray
    weight_elems: np.ndarray
    in_elems: np.ndarray
    out_elems: np.ndarray
    flops_len_power: np.ndarray
    in_len_power: np.ndarray
    out_len_power: np.ndarray
    #: the fusable operators (activations, residual adds) as their own table: what an eager framework runs as
    #: separate kernels; None when the model has none
    fusable: Optional["OpTable"] = None

    @property
    def n_kernels(self) -> int:
        return len(self.op_class)

    @property
    def total_flops(self) -> float:
        return float(self.flops.sum())


def op_table(model: str, rows: Sequence) -> OpTable:
    """The unfused operators of one model from its cost rows (OpCostRow or mappings), in graph order, with its
    fusable operators as `fusable`."""
    ordered = sorted(rows, key=lambda r: _get(r, "op"))
    kept = [r for r in ordered if not bool(_get(r, "fusable"))]
    if not kept:
        raise ValueError(f"{model} has no operators in its cost table")
    ref_len = next(iter({_get(r, "ref_len") for r in kept}))
    ref_len = None if ref_len is None or ref_len != ref_len else float(ref_len)
    fused = [r for r in ordered if bool(_get(r, "fusable"))]
    return _table(model, ref_len, kept, _table(model, ref_len, fused) if fused else None)


def _table(model: str, ref_len: Optional[float], kept: Sequence, fusable: Optional[OpTable] = None) -> OpTable:

    def col(name):
        return np.array([float(_get(r, name) or 0.0) for r in kept])

    return OpTable(model=model, ref_len=ref_len, op_class=tuple(OpClass(_get(r, "op_class")) for r in kept),
                   flops=col("flops"), weight_elems=col("weight_elems"), in_elems=col("in_elems"),
                   out_elems=col("out_elems"), flops_len_power=col("flops_len_power"),
                   in_len_power=col("in_len_power"), out_len_power=col("out_len_power"), fusable=fusable)


def _get(row, name):
    return row[name] if isinstance(row, Mapping) else getattr(row, name)


def smooth_max(*terms: np.ndarray) -> np.ndarray:
    """A smooth upper envelope of non-negative terms: (sum t^p)^(1/p), p = SMOOTH_NORM."""
    stacked = np.stack([np.asarray(t, dtype=float) for t in terms])
    scale = np.maximum(stacked.max(axis=0), 1e-30)  # divide out before powering: no overflow, no underflow
    return scale * ((stacked / scale) ** SMOOTH_NORM).sum(axis=0) ** (1.0 / SMOOTH_NORM)


def operator_times_s(ops: OpTable, spec: PartitionSpec, eff: Efficiency, batch: float,
                     input_len: Optional[float] = None) -> np.ndarray:
    """Seconds each unfused operator of `ops` takes for one batch of `batch` items at `input_len`."""
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    r = 1.0 if ops.ref_len is None or input_len is None else float(input_len) / ops.ref_len
    flops = batch * ops.flops * r ** ops.flops_len_power
    acts = batch * (ops.in_elems * r ** ops.in_len_power + ops.out_elems * r ** ops.out_len_power)
    bytes_moved = (ops.weight_elems + acts) * spec.bytes_per_elem
    matrix = np.array([c in MATRIX_CLASSES for c in ops.op_class])
    peak = np.where(matrix, spec.matrix_flops, spec.vector_flops)
    e = np.array([eff.compute[c] for c in ops.op_class])
    compute_s = flops / (peak * e)
    memory_s = bytes_moved / (spec.memory_bw * eff.memory)
    floor_s = np.where(matrix, eff.matrix_floor_s, eff.vector_floor_s)
    return smooth_max(compute_s, memory_s, floor_s)


def batch_latency_s(ops: OpTable, spec: PartitionSpec, eff: Efficiency, harness: Harness, batch: float,
                    input_len: Optional[float] = None) -> float:
    """Mean service time (s) of one batch: the harness's share plus every operator's roofline time, and the
    harness's `unfused` share of the fusable operators' times."""
    fused_s = 0.0
    if ops.fusable is not None and harness.unfused > 0:
        fused_s = harness.unfused * float(operator_times_s(ops.fusable, spec, eff, batch, input_len).sum())
    return float(harness.overhead_s + batch * harness.per_item_s
                 + operator_times_s(ops, spec, eff, batch, input_len).sum() + fused_s)
